"""Review scenario S4 against a real ``serve``, scaled down: one client joins a flood of KIP-848
members (a fresh member id each, subscribed to one 2-partition topic) and abandons them. The
group's shard keeps answering other groups, the abandoned members expire within their session
timeout, and ``group.consumer.max.size`` / ``group.max.size`` turn away joins beyond them with
GROUP_MAX_SIZE_REACHED, as Kafka does."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitResponse
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.security.test_authentication import commit_request

pytestmark = pytest.mark.integration

PARTITIONS = 2
MAX_MEMBERS = 300
SESSION_MS = 3000


@pytest.fixture
def serve(bootstrap: str, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServeProcess]:
    monkeypatch.setenv(
        "GROUPCOORD_GROUP",
        json.dumps(
            {
                "group.consumer.max.size": str(MAX_MEMBERS),
                "group.max.size": "2",
                "group.initial.rebalance.delay.ms": "0",
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.session.timeout.ms": str(SESSION_MS),
                "group.consumer.min.heartbeat.interval.ms": "500",
                "group.consumer.heartbeat.interval.ms": "1000",
            }
        ),
    )
    process = ServeProcess(
        bootstrap, free_port(), unique_name, partitions=PARTITIONS, log=tmp_path / "serve.log"
    ).start()
    try:
        yield process
    finally:
        process.stop()


def _join(group: str, topic: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=uuid.uuid4().hex[:22],
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic],
        topic_partitions=[],
    )


async def _until_served(client: WireClient, group: str, topic: str) -> None:
    deadline = time.monotonic() + 60
    while (await client.call_as(OffsetCommitResponse, 8, 8, commit_request(group, topic, 1))).topics[0].partitions[
        0
    ].error_code != 0:
        assert time.monotonic() < deadline, "the sidecar never served"
        await asyncio.sleep(0.2)


def test_an_abandoned_member_flood_neither_wedges_its_shard_nor_outlives_its_sessions(
    serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    topic = f"{unique_name}-t"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    victim = "flooded"
    # Another group in the same shard.
    neighbour = next(
        g for i in range(1000) if partition_for(g := f"neighbour-{i}", PARTITIONS) == partition_for(victim, PARTITIONS)
    )

    async def scenario() -> None:
        flooder = await WireClient.connect("127.0.0.1", serve.port)
        await _until_served(flooder, neighbour, topic)
        errors: dict[int, int] = {}
        for _ in range(MAX_MEMBERS // 50):
            for _ in range(50):
                flooder.send(68, 1, _join(victim, topic))
            for _ in range(50):
                _, answer = await flooder.read_as(ConsumerGroupHeartbeatResponse, 68, 1, timeout=30)
                errors[answer.error_code] = errors.get(answer.error_code, 0) + 1
        assert errors == {0: MAX_MEMBERS}
        # One more is beyond group.consumer.max.size.
        refused = await flooder.call_as(ConsumerGroupHeartbeatResponse, 68, 1, _join(victim, topic))
        assert refused.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
        # The shard keeps answering its other groups while the flood is abandoned.
        other = await WireClient.connect("127.0.0.1", serve.port)
        committed = await asyncio.wait_for(
            other.call_as(OffsetCommitResponse, 8, 8, commit_request(neighbour, topic, 2)), 5
        )
        assert committed.topics[0].partitions[0].error_code == 0
        # Every abandoned member expires within its session timeout (plus a margin).
        deadline = time.monotonic() + SESSION_MS / 1000 + 30
        while True:
            (described,) = (
                await other.call_as(
                    ConsumerGroupDescribeResponse, 69, 0, ConsumerGroupDescribeRequest(group_ids=[victim])
                )
            ).groups
            if described.error_code == 0 and not described.members:
                break
            assert time.monotonic() < deadline, f"{len(described.members)} members never expired"
            await asyncio.sleep(0.5)
        committed = await asyncio.wait_for(
            other.call_as(OffsetCommitResponse, 8, 8, commit_request(neighbour, topic, 3)), 5
        )
        assert committed.topics[0].partitions[0].error_code == 0
        await flooder.close()
        await other.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def _classic_join(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


def test_a_classic_join_beyond_group_max_size_is_refused(serve: ServeProcess, bootstrap: str, unique_name: str) -> None:
    topic = f"{unique_name}-t"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)

    async def scenario() -> None:
        members = [await WireClient.connect("127.0.0.1", serve.port) for _ in range(3)]
        await _until_served(members[0], "classic-bystander", topic)
        # JoinGroup v3: no member id round trip; each join waits for the rebalance on its own connection.
        a, b, c = members
        a.send(11, 3, _classic_join("classic-full"))
        _, first = await a.read_as(JoinGroupResponse, 11, 3, timeout=30)
        assert first.error_code == 0
        b.send(11, 3, _classic_join("classic-full"))  # a rebalance: waits for the first member to rejoin
        await asyncio.sleep(0.5)
        a.send(11, 3, _classic_join("classic-full", first.member_id))
        answers = [(await m.read_as(JoinGroupResponse, 11, 3, timeout=30))[1] for m in (a, b)]
        assert [x.error_code for x in answers] == [0, 0]
        # The group holds group.max.size members: a third one is turned away at once.
        c.send(11, 3, _classic_join("classic-full"))
        _, third = await c.read_as(JoinGroupResponse, 11, 3, timeout=30)
        assert third.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
        for m in members:
            await m.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
