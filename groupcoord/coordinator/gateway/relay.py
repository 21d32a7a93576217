"""Relay a group request to the sidecar process that coordinates the group.

Kafka's admin client sends IncrementalAlterConfigs / DescribeConfigs for a group to any broker,
not to the group's coordinator, and a share consumer sends ShareFetch / ShareAcknowledge to the
partition leaders it was shown. With several sidecar processes, the one that receives such a
request passes the part about groups it does not own to their owner (known from placement) and
hands the answer back. A relayed request's client id starts with ``RELAY_CLIENT_ID`` and is never
relayed again, so two processes that disagree about an owner cannot loop.

The relay reaches the owner's listener as a client would (``RelayLink``): over TLS when the
listeners use TLS (presenting the listener's certificate when they require client certificates),
logged in with SASL as the sidecar itself (its ``client`` credentials, which the owner's gateway
checks with the cluster as it checks any client's) when it has such credentials. The client id
then names the caller (``RelayedFor``): the client connection at this process, its principal and
host. The owner takes the principal and host only from a connection authenticated as the sidecar
itself (``GatewayConfig.relay_principal``), so a client cannot borrow another principal by
writing a relay client id: from any other connection the owner keeps the connection's own
principal, host and connection id (``answered_for``). The connection id (unguessable) ties share
sessions to the client connection whose closing releases their records (``service/share_data.py``);
only where relays are anonymous (plain listeners, no principal to tell them by) is a named one
taken as given.

Kafka's own forwarding (KIP-590, EnvelopeRequest) is the model: the forwarding broker's principal
vouches for the serialized principal of the request it carries.
"""

from __future__ import annotations

import json
import ssl
import time
from dataclasses import dataclass, field

from groupcoord.coordinator.gateway.apis import APIS
from groupcoord.coordinator.gateway.broker_connection import BrokerConnection
from groupcoord.coordinator.gateway.config import GatewayConfig, TlsSettings
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.cluster_login import ClusterLogin

RELAY_CLIENT_ID = "groupcoord-relay"
_SEPARATOR = ";"
# A client id is an int16-length string; a caller description longer than this is not one.
_MAX_DESCRIPTION = 4096
# Pooled relay connections unused this long are closed rather than reused (the owner closes idle
# connections after connections_max_idle_ms, 10 minutes by default).
IDLE_S = 60.0
# Idle connections kept per owner; a burst of concurrent relays opens more, closed afterwards.
MAX_IDLE_PER_OWNER = 16


def is_relayed(client_id: str | None) -> bool:
    """The request came from another sidecar process's relay (or claims to)."""
    return client_id is not None and (
        client_id == RELAY_CLIENT_ID or client_id.startswith(RELAY_CLIENT_ID + _SEPARATOR)
    )


@dataclass(frozen=True, slots=True)
class RelayedFor:
    """The caller a relayed request is for, as the relaying process saw it."""

    # The caller's client connection at the relaying process (an unguessable id).
    connection: str
    # Its authenticated user name (None: not authenticated) and address.
    principal: str | None = None
    host: str = ""
    # The caller's connection closed: its share sessions are to be dropped.
    closed: bool = False

    def client_id(self) -> str:
        described: dict[str, object] = {"c": self.connection, "p": self.principal, "h": self.host}
        if self.closed:
            described["x"] = True
        return RELAY_CLIENT_ID + _SEPARATOR + json.dumps(described, separators=(",", ":"))

    @classmethod
    def parse(cls, client_id: str | None) -> RelayedFor | None:
        """The caller named in a relayed request's client id; None when there is none or it is
        malformed (the request is then taken as the connection's own)."""
        if not is_relayed(client_id) or client_id == RELAY_CLIENT_ID:
            return None
        assert client_id is not None
        text = client_id[len(RELAY_CLIENT_ID) + 1 :]
        if len(text) > _MAX_DESCRIPTION:
            return None
        try:
            described = json.loads(text)
        except ValueError:
            return None
        if not isinstance(described, dict):
            return None
        connection, principal, host = described.get("c"), described.get("p"), described.get("h", "")
        if not isinstance(connection, str) or not connection or not isinstance(host, str):
            return None
        if principal is not None and not isinstance(principal, str):
            return None
        return cls(connection, principal, host, described.get("x") is True)


def answered_for(
    principal: str | None, host: str, connection: str, client_id: str | None, relay_principal: str | None
) -> tuple[str | None, str, str]:
    """(principal, host, connection id) a request is answered for, on a connection of
    ``principal`` at ``host``. A relayed request names its caller (``RelayedFor``); where relays
    log in as the sidecar (``relay_principal``), only a connection authenticated as the sidecar is
    believed, for all three, and any other keeps its own: a client writing a relay client id
    neither borrows a principal nor ties its share sessions to another connection's id (nor ends
    that connection's sessions, ``RelayedFor.closed``). Where relays are anonymous (plain
    listeners: no principal to tell them by), the caller's connection id is taken as given, its
    principal and host never."""
    caller = RelayedFor.parse(client_id)
    if caller is None:
        return principal, host, connection
    if relay_principal is None:
        return principal, host, caller.connection
    if principal == relay_principal:
        return caller.principal, caller.host, caller.connection
    return principal, host, connection


def peer_tls_context(listener: TlsSettings) -> ssl.SSLContext:
    """How a relay reaches another process's TLS listener: the peer's certificate must chain to
    the listener's CA bundle or be the listener certificate itself (processes that share one), and
    name the peer's address unless ``check_hostname`` is off; the listener's certificate is
    presented when the listeners require client certificates."""
    if listener.certfile is None:
        raise ValueError("a TLS listener needs certfile")
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=listener.cafile)
    ctx.load_verify_locations(listener.certfile)
    # The listener's own certificate may be a leaf: trusted as it is, without its root.
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    ctx.check_hostname = listener.check_hostname
    if listener.require_client_cert:
        ctx.load_cert_chain(listener.certfile, listener.keyfile, listener.password)
    return ctx


@dataclass
class RelayLink:
    """Connections to the other processes' listeners, pooled per address (each carries one request
    at a time: a ShareFetch waits there up to its MaxWaitMs)."""

    tls: ssl.SSLContext | None = None
    login: ClusterLogin | None = None
    _idle: dict[tuple[str, int], list[tuple[float, BrokerConnection]]] = field(default_factory=dict)

    async def call(
        self, host: str, port: int, header: RequestHeader, body: Message, timeout_s: float, client_id: str
    ) -> Message:
        """Send ``body`` to the sidecar at ``host:port`` and return its answer (raises OSError,
        TimeoutError or ValueError when it cannot be had)."""
        pool = self._idle.setdefault((host, port), [])
        now = time.monotonic()
        while pool and (pool[-1][1].expired or now - pool[-1][0] > IDLE_S):
            pool.pop()[1].close()
        if pool:
            conn = pool.pop()[1]
        else:
            conn = await BrokerConnection.open((host, port), self.tls, timeout_s, self.login, RELAY_CLIENT_ID)
        try:
            answer = await conn.call(body, APIS[header.api_key].response, header.api_version, timeout_s, client_id)
        except BaseException:
            conn.close()
            raise
        if len(pool) < MAX_IDLE_PER_OWNER:
            pool.append((time.monotonic(), conn))
        else:
            conn.close()
        return answer

    def close(self) -> None:
        for pool in self._idle.values():
            for _, conn in pool:
                conn.close()
        self._idle.clear()


def relay_link(config: GatewayConfig, login: ClusterLogin | None) -> RelayLink | None:
    """How this process relays to the others, whose listeners are configured as its own; None when
    it cannot: a TLS or authenticating listener is relayed to only as the sidecar itself (logged
    in with ``login``), since the owner would refuse an anonymous relay, or answer it with the
    rights of whatever principal the relay's certificate names rather than the caller's."""
    if login is None and (config.listener_tls is not None or config.authentication != "none"):
        return None
    tls = peer_tls_context(config.listener_tls) if config.listener_tls is not None else None
    return RelayLink(tls, login)


async def relay(
    host: str,
    port: int,
    header: RequestHeader,
    body: Message,
    timeout_s: float,
    link: RelayLink | None = None,
    caller: RelayedFor | None = None,
) -> Message:
    """Send ``body`` to the sidecar at ``host:port`` for ``caller`` and return its answer (without
    a ``link``: over one plain connection of its own)."""
    client_id = caller.client_id() if caller is not None else RELAY_CLIENT_ID
    if link is not None:
        return await link.call(host, port, header, body, timeout_s, client_id)
    once = RelayLink()
    try:
        return await once.call(host, port, header, body, timeout_s, client_id)
    finally:
        once.close()
