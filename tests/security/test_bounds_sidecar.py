"""Resource attacks against the real sidecar (authenticated attacker): each closes only its own
connection, and the victim group and a bystander are unaffected."""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid

import pytest

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from tests.gateway.test_limits import _oversized_group_frame
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import authenticated, commit_request, committed, create_topic

pytestmark = pytest.mark.integration


def test_oversize_and_huge_requests_close_only_the_attacker(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    group, topic = f"alice-bounds-{uuid.uuid4().hex[:8]}", f"shared-bounds-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic)

    async def scenario() -> None:
        bystander = await authenticated(sidecar)
        await bystander.call(8, 8, commit_request(group, topic, 5))
        attacks = {
            # F5: a 1.1 MB group id (flexible string) that used to wedge a shard.
            "megabyte group id": _oversized_group_frame(),
            # F6: one request naming 200,000 groups.
            "200k-group describe": encode_request(
                RequestHeader(69, 0, 3, "attacker"),
                ConsumerGroupDescribeRequest(group_ids=[f"alice-{i}" for i in range(200_000)]),
            ),
            # F8: a 100,000-partition commit.
            "100k-partition commit": encode_request(
                RequestHeader(8, 8, 4, "attacker"),
                OffsetCommitRequest(
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    topics=[
                        OffsetCommitRequestTopic(
                            name=topic,
                            partitions=[
                                OffsetCommitRequestPartition(partition_index=p, committed_offset=1)
                                for p in range(100_000)
                            ],
                        )
                    ],
                ),
            ),
        }
        for what, frame in attacks.items():
            attacker = await authenticated(sidecar)
            attacker.send_raw(frame)
            assert await attacker.closed_by_peer(timeout=20), what
            await attacker.close()
            assert await committed(bystander, group, topic) == 5, what
        # A partial frame is dropped after the read deadline (30 s by default): here only its
        # effect on others is checked, the deadline itself in tests/gateway/test_limits.py.
        partial = await authenticated(sidecar)
        partial.send_raw(struct.pack(">i", 50_000_000) + b"\x00" * 1000)
        assert await committed(bystander, group, topic) == 5
        await partial.close()
        await bystander.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_idle_sockets_do_not_lock_others_out(sidecar: Sidecar) -> None:
    # 200 raw sockets that never send a byte: others still get in (limit 1000 per address).
    sockets = [socket.create_connection(("127.0.0.1", sidecar.port), timeout=5) for _ in range(200)]
    try:

        async def check() -> None:
            client = await authenticated(sidecar)
            await client.close()

        asyncio.run(asyncio.wait_for(check(), 30))
    finally:
        for s in sockets:
            s.close()
