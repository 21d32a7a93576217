"""ConsumerGroupDescribe v1 over a plain socket, for what confluent-kafka's describe leaves out:
each member's protocol (KIP-1099's MemberType: classic or consumer) and epoch, and the group's
epochs. Uses the gateway's own message codec; PLAINTEXT listeners only (with TLS or SASL
settings the CLI shows these columns as unknown instead)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)

_MEMBER_TYPES = {0: "classic", 1: "consumer"}


@dataclass
class ConsumerGroupInfo:
    group_epoch: int
    assignment_epoch: int
    members: dict[str, tuple[str, int]] = field(default_factory=dict)  # member id -> (protocol, epoch)
    state: str = ""  # Kafka's name: Empty, Assigning, Reconciling, Stable, Dead


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return bytes(data)


def describe_consumer_groups(bootstrap: str, groups: list[str], timeout: float) -> dict[str, ConsumerGroupInfo]:
    """Groups of the consumer type only (a classic group is answered with an error and left out)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    request = ConsumerGroupDescribeRequest(group_ids=groups)
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        sock.settimeout(timeout)
        header = RequestHeader(int(ApiKey.CONSUMER_GROUP_DESCRIBE), 1, 1, "groupcoord-cli")
        sock.sendall(encode_request(header, request))
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        _, response = decode_response(int(ApiKey.CONSUMER_GROUP_DESCRIBE), 1, _read_exactly(sock, size))
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
