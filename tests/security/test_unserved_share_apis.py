"""With ``share_groups_enabled`` off (the default), the share APIs are not there: ApiVersions does not
list ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch or ShareAcknowledge, and each of them sent
anyway closes the connection (or is answered UNSUPPORTED_VERSION) at the sidecar itself: never
forwarded to the cluster, nothing written, the group id still free. Against a real ``serve`` and
the local broker."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.coordinator.gateway.framing import RequestHeader, encode_request_header
from groupcoord.coordinator.messages import alter_share_group_offsets as asgo
from groupcoord.coordinator.messages import consumer_group_heartbeat as cgh
from groupcoord.coordinator.messages import delete_share_group_offsets as delsgo
from groupcoord.coordinator.messages import describe_share_group_offsets as dsgo
from groupcoord.coordinator.messages import list_groups as lg
from groupcoord.coordinator.messages import share_group_describe as sgd
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Sidecar, wait_for
from tests.security.test_internal_names import call, frame

pytestmark = pytest.mark.integration

SHARE_KEYS = {
    76: "ShareGroupHeartbeat",
    77: "ShareGroupDescribe",
    78: "ShareFetch",
    79: "ShareAcknowledge",
    90: "DescribeShareGroupOffsets",
    91: "AlterShareGroupOffsets",
    92: "DeleteShareGroupOffsets",
}
UNSUPPORTED_VERSION = 35


@pytest.fixture
def sidecar(bootstrap: str, tmp_path: Path) -> Iterator[Sidecar]:
    made = Sidecar(
        bootstrap,
        f"gc-noshare-{uuid.uuid4().hex[:8]}",
        tmp_path / "serve.log",
        partitions=1,
        env={"GROUPCOORD_SHARE_GROUPS_ENABLED": "false"},
    )
    try:
        yield made.start()
    finally:
        made.stop()


def raw_frame(key: int, version: int, body: bytes) -> bytes:
    """A flexible request header and ``body``: for the APIs this codec has no message for."""
    out = bytearray()
    encode_request_header(RequestHeader(key, version, 7, "attacker"), 2, out)
    out += body
    return struct.pack(">i", len(out)) + bytes(out)


async def answer_or_close(port: int, data: bytes) -> bytes | None:
    """The raw answer to one frame, or None when the sidecar closed the connection."""
    client = await WireClient.connect("127.0.0.1", port)
    try:
        client.send_raw(data)
        try:
            return await client.read_frame()
        except asyncio.IncompleteReadError:
            return None
    finally:
        await client.close()


def test_share_apis_are_neither_offered_nor_forwarded_when_share_groups_are_off(
    sidecar: Sidecar, bootstrap: str, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-g"
    create_topic(bootstrap, topic, 1)
    port = sidecar.port
    versions = asyncio.run(call(port, 18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")))
    assert isinstance(versions, ApiVersionsResponse) and versions.error_code == 0
    assert set(SHARE_KEYS).isdisjoint(k.api_key for k in versions.api_keys)

    member = str(uuid.uuid4())
    heartbeat = sgh.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
    )
    # ShareFetch/ShareAcknowledge v1 (KIP-932's first versions): a group id, a member id and an
    # epoch as the header of the body, then empty arrays; the sidecar refuses them on the header.
    share_body = b"".join(bytes([len(s) + 1]) + s for s in (group.encode(), member.encode())) + b"\x00" * 16
    attempts = {
        76: frame(76, 1, heartbeat),
        77: frame(77, 1, sgd.ShareGroupDescribeRequest(group_ids=[group])),
        78: raw_frame(78, 1, share_body),
        79: raw_frame(79, 1, share_body),
        90: frame(
            90,
            1,
            dsgo.DescribeShareGroupOffsetsRequest(groups=[dsgo.DescribeShareGroupOffsetsRequestGroup(group_id=group)]),
        ),
        91: frame(91, 0, asgo.AlterShareGroupOffsetsRequest(group_id=group)),
        92: frame(92, 0, delsgo.DeleteShareGroupOffsetsRequest(group_id=group)),
    }
    for key, data in attempts.items():
        answer = asyncio.run(answer_or_close(port, data))
        if answer is not None:
            # Response header v1 (correlation id, no tags), throttle_time_ms, then the error code.
            (code,) = struct.unpack_from(">h", answer, 9)
            assert code == UNSUPPORTED_VERSION, (key, answer)

    # Refused by the sidecar's own routing (its log says why), so never forwarded to the cluster.
    def refused() -> set[str]:
        return {
            str(r.get("msg"))
            for r in sidecar.records()
            if "closing client connection" in str(r.get("msg")) and "unsupported API" in str(r.get("msg"))
        }

    wait_for(lambda: len(refused()) >= len(attempts), 10, "the sidecar to log each refusal")
    reasons = " ".join(refused())
    for key, name in SHARE_KEYS.items():
        assert f"unsupported API {name}" in reasons or f"unsupported API key {key}" in reasons, (key, reasons)

    # Nothing changed: no group of any type, and the id is still free for a consumer group.
    listed = asyncio.run(call(port, 16, 5, lg.ListGroupsRequest()))
    assert group not in {g.group_id for g in listed.groups}
    joined = asyncio.run(
        call(
            port,
            68,
            1,
            cgh.ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=[topic],
                topic_partitions=[],
            ),
        )
    )
    assert joined.error_code == 0 and joined.member_epoch >= 1
    assert sidecar.alive
