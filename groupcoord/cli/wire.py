"""Requests confluent-kafka has no call for, over a plain socket with the gateway's own message codec:

- ConsumerGroupDescribe v1, for what confluent-kafka's describe leaves out: each member's protocol
  (KIP-1099's MemberType: classic or consumer) and epoch, and the group's epochs;
- the share-group admin requests (``groupcoord.cli.share``): librdkafka 2.16 ships a share
  consumer but no share-group admin call (no share type in ``list_consumer_groups``, no
  ``describe_share_groups``).
- OffsetFetch at a group's coordinator (``groupcoord.cli.offsets_wire``): confluent-kafka has a
  call for it, but librdkafka 2.16 crashes the process on it while the coordinator moves.

``WireClient`` speaks TLS and SASL as the properties say (``groupcoord.cli.wire_security``); the
consumer-group columns are read on PLAINTEXT listeners only (with TLS or SASL settings the CLI shows
them as unknown).
"""

from __future__ import annotations

import re
import socket
import ssl
import struct
from dataclasses import dataclass, field
from types import TracebackType

from groupcoord import __version__
from groupcoord.cli.wire_security import AuthenticationError, protocol_of, sasl_login, tls_context
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.coordinator.messages.metadata import MetadataRequest
from groupcoord.coordinator.messages.schema import Message

_MEMBER_TYPES = {0: "classic", 1: "consumer"}
CLIENT_ID = "groupcoord-cli"
# ApiVersions v3+ names the client's software; Kafka refuses a version outside letters, digits,
# '-' and '.' (INVALID_REQUEST), and a package version may hold '+' ("0+unknown", local builds).
CLIENT_SOFTWARE_VERSION = re.sub(r"[^a-zA-Z0-9.-]+", "-", __version__).strip(".-") or "0"


@dataclass
class ConsumerGroupInfo:
    group_epoch: int
    assignment_epoch: int
    members: dict[str, tuple[str, int]] = field(default_factory=dict)  # member id -> (protocol, epoch)
    state: str = ""  # Kafka's name: Empty, Assigning, Reconciling, Stable, Dead


class ConnectionClosed(OSError):
    """The peer closed the connection before its answer was whole."""


# The peer dropped a connection it had accepted (an orderly close, or a reset).
CLOSED = (ConnectionClosed, ConnectionResetError, BrokenPipeError)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionClosed("connection closed")
        data += chunk
    return bytes(data)


class WireClient:
    """One connection to the first broker of ``bootstrap``; requests one at a time. ``OSError``
    when it cannot connect (``ssl.SSLError`` among them), or the peer closes the connection (as a
    broker does for an API it does not offer); ``ValueError`` (the codec's) for an answer that does
    not decode; ``AuthenticationError`` for settings it cannot use or a refused SASL login."""

    def __init__(self, bootstrap: str, timeout: float, props: dict[str, str] | None = None) -> None:
        props = props or {}
        protocol = protocol_of(props)
        host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise ValueError(f"expected HOST:PORT, got {bootstrap!r}")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        try:
            if protocol in ("SSL", "SASL_SSL"):
                self.sock = tls_context(props).wrap_socket(self.sock, server_hostname=host)
            self.sock.settimeout(timeout)
            if protocol.startswith("SASL_"):
                sasl_login(self.sock, props, lambda n: _read_exactly(self.sock, n))
        except BaseException:
            self.sock.close()
            raise
        self.correlation_id = 0

    def call(self, key: int, version: int, request: Message) -> Message:
        self.correlation_id += 1
        self.sock.sendall(encode_request(RequestHeader(key, version, self.correlation_id, CLIENT_ID), request))
        (size,) = struct.unpack(">i", _read_exactly(self.sock, 4))
        _, response = decode_response(key, version, _read_exactly(self.sock, size))
        return response

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def describe_consumer_groups(bootstrap: str, groups: list[str], timeout: float) -> dict[str, ConsumerGroupInfo]:
    """Groups of the consumer type only (a classic group is answered with an error and left out)."""
    with WireClient(bootstrap, timeout) as client:
        key = int(ApiKey.CONSUMER_GROUP_DESCRIBE)
        response = client.call(key, 1, ConsumerGroupDescribeRequest(group_ids=groups))
    assert isinstance(response, ConsumerGroupDescribeResponse)
    found: dict[str, ConsumerGroupInfo] = {}
    for g in response.groups:
        if g.error_code:
            continue
        info = ConsumerGroupInfo(g.group_epoch, g.assignment_epoch, state=g.group_state)
        for m in g.members:
            info.members[m.member_id] = (_MEMBER_TYPES.get(m.member_type, "unknown"), m.member_epoch)
        found[g.group_id] = info
    return found


NOTHING_LISTENS = "nothing listens there"
# probe's findings: the connection was refused; closed before any answer; closed after one.
REFUSED, CLOSED_AT_ONCE, CLOSED_LATER = "refused", "closed at once", "closed later"


def closed_words(address: str, answered: bool = True) -> str:
    """A connection accepted and then closed unanswered. A sidecar does that to every request it
    would forward while it cannot reach its cluster (its log: ``closing client connection ...
    cannot reach the cluster``): the address is right, the cluster behind it is not there. Closed
    before any answer (``answered`` false), it may as well be a listener that speaks TLS to a
    plaintext client, or the other way round."""
    other = "" if answered else ", or its listener expects another security.protocol"
    return (
        f"{address} accepted the connection and closed it without an answer: the sidecar there may not"
        f" reach its cluster (see its log){other}"
    )


def connect_failure(address: str, exc: Exception, timeout: float) -> str:
    """Why ``WireClient(address, ...)`` failed, in words (its exceptions, as its docstring lists them)."""
    if isinstance(exc, AuthenticationError):
        return f"cannot connect to {address}: {exc}"
    if isinstance(exc, ssl.SSLError):
        return f"cannot connect to {address}: TLS: {exc.reason or exc}"
    if isinstance(exc, CLOSED):  # during the TLS handshake or the SASL login
        return closed_words(address, answered=False)
    if isinstance(exc, ConnectionRefusedError):
        return f"cannot reach {address} within {timeout:g}s: {NOTHING_LISTENS} ({exc.strerror or exc})"
    if isinstance(exc, OSError):  # unresolvable, or timed out
        return f"cannot reach {address} within {timeout:g}s: {exc.strerror or exc}"
    return f"cannot connect to {address}: {exc}"


def probe(address: str, timeout: float, props: dict[str, str] | None = None) -> str | None:
    """What ApiVersions and a Metadata request (a client's first two) to ``address`` meet, to say
    why a client gave up on it: ``REFUSED`` (nothing listens), ``CLOSED_AT_ONCE`` (accepted, then
    closed before any answer), ``CLOSED_LATER`` (ApiVersions answered, Metadata not); None when
    both are answered, time out, or cannot be tried. Metadata is forwarded to the cluster: a
    sidecar that cannot reach it answers ApiVersions from what it learnt before, then closes."""
    try:
        client = WireClient(address, timeout, props)
    except ConnectionRefusedError:
        return REFUSED
    except CLOSED:  # during the TLS handshake or the SASL login
        return CLOSED_AT_ONCE
    except Exception:  # unresolvable, TLS or login settings this client lacks: the client's words stand
        return None
    answered = False
    try:
        request = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version=CLIENT_SOFTWARE_VERSION)
        versions = client.call(int(ApiKey.API_VERSIONS), 3, request)
        answered = True
        assert isinstance(versions, ApiVersionsResponse)
        offered = {k.api_key: k.max_version for k in versions.api_keys}
        # Any version from 1 asks for the brokers alone (an empty topic list), as a client's first.
        version = min(12, offered.get(int(ApiKey.METADATA), 1))
        if version >= 1:
            client.call(int(ApiKey.METADATA), version, MetadataRequest(topics=[]))
    except CLOSED:
        return CLOSED_LATER if answered else CLOSED_AT_ONCE
    except Exception:
        return None
    finally:
        client.close()
    return None
