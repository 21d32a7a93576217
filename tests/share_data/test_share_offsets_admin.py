"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92)
through a real ``groupcoord serve`` (share groups enabled) in front of the local broker, on the
wire with the project's own codec: refusals (unknown group, group with members) write nothing
(an alter creates an unknown group: test_share_offsets_create.py);
an alter on an empty group moves where the next ShareFetch starts, dropping the in-flight state."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import alter_share_group_offsets as alter
from groupcoord.coordinator.messages import delete_share_group_offsets as delete
from groupcoord.coordinator.messages import describe_share_group_offsets as describe
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.messages.schema import Message
from groupcoord.local_broker import free_port
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.share_data.test_share_consumer import SHARE_GROUPS, _produce, _topic_id

pytestmark = pytest.mark.integration

HEARTBEAT, FETCH, DESCRIBE, ALTER, DELETE = 76, 78, 90, 91, 92
LOG_PARTITIONS = 2


@pytest.fixture
def serve(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[ServeProcess]:
    process = ServeProcess(
        bootstrap, free_port(), f"{unique_name}-log", partitions=LOG_PARTITIONS, log=tmp_path / "serve.log"
    )
    process.start(env=SHARE_GROUPS)
    try:
        yield process
    finally:
        process.stop()


def _log_ends(bootstrap: str, log_topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gc-sgo-probe"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(log_topic, p), 10)[1] for p in range(LOG_PARTITIONS)]
    finally:
        consumer.close()


def _starts(answer: Message) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error) of a one-group DescribeShareGroupOffsets answer."""
    assert isinstance(answer, describe.DescribeShareGroupOffsetsResponse)
    (g,) = answer.groups
    assert g.error_code == 0, g
    return {
        (t.topic_name, p.partition_index): (p.start_offset, p.lag, p.error_code) for t in g.topics for p in t.partitions
    }


def test_share_group_offsets_on_the_wire(serve: ServeProcess, bootstrap: str, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 2)
    topic_id, log_topic = _topic_id(bootstrap, topic), serve.args[-3]
    assert log_topic == f"{unique_name}-log"
    _produce(bootstrap, topic, 10, 1)  # offsets 0..9 of partition 0

    async def run() -> None:
        client = await WireClient.connect("127.0.0.1", serve.port)

        async def beat(member: str, epoch: int) -> int:
            request = sgh.ShareGroupHeartbeatRequest(
                group_id=group,
                member_id=member,
                member_epoch=epoch,
                subscribed_topic_names=[topic] if epoch == 0 else None,
            )
            answer = await client.call(HEARTBEAT, 1, request)
            assert isinstance(answer, sgh.ShareGroupHeartbeatResponse) and answer.error_code == 0, answer
            return answer.member_epoch

        async def describe_offsets(
            version: int = 1, g: str = group, topics: list[tuple[str, list[int]]] | None = None
        ) -> Message:
            wanted = (
                None
                if topics is None
                else [describe.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps) for t, ps in topics]
            )
            request = describe.DescribeShareGroupOffsetsRequest(
                groups=[describe.DescribeShareGroupOffsetsRequestGroup(group_id=g, topics=wanted)]
            )
            return await client.call(DESCRIBE, version, request)

        async def alter_offsets(
            g: str, starts: dict[str, list[tuple[int, int]]]
        ) -> alter.AlterShareGroupOffsetsResponse:
            request = alter.AlterShareGroupOffsetsRequest(
                group_id=g,
                topics=[
                    alter.AlterShareGroupOffsetsRequestTopic(
                        topic_name=t,
                        partitions=[
                            alter.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                            for p, o in ps
                        ],
                    )
                    for t, ps in starts.items()
                ],
            )
            answer = await client.call(ALTER, 0, request)
            assert isinstance(answer, alter.AlterShareGroupOffsetsResponse)
            return answer

        async def delete_offsets(g: str, topics: list[str]) -> delete.DeleteShareGroupOffsetsResponse:
            request = delete.DeleteShareGroupOffsetsRequest(
                group_id=g, topics=[delete.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]
            )
            answer = await client.call(DELETE, 0, request)
            assert isinstance(answer, delete.DeleteShareGroupOffsetsResponse)
            return answer

        async def fetch(member: str, epoch: int) -> list[tuple[int, int]]:
            request = sf.ShareFetchRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                max_wait_ms=2000,
                max_records=100,
                topics=[
                    sf.ShareFetchRequestFetchTopic(
                        topic_id=topic_id, partitions=[sf.ShareFetchRequestFetchPartition(partition_index=0)]
                    )
                ],
            )
            answer = await client.call(FETCH, 1, request)
            assert isinstance(answer, sf.ShareFetchResponse) and answer.error_code == 0, answer
            return [
                (a.first_offset, a.last_offset)
                for t in answer.responses
                for p in t.partitions
                for a in p.acquired_records
            ]

        member = str(uuid.uuid4())
        epoch = await beat(member, 0)
        ends = _log_ends(bootstrap, log_topic)

        # --- refusals: nothing written --------------------------------------------------------
        unknown = await describe_offsets(g="no-such-group")
        assert isinstance(unknown, describe.DescribeShareGroupOffsetsResponse)
        assert unknown.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        busy = await alter_offsets(group, {topic: [(0, 0)]})
        assert busy.error_code == ErrorCode.NON_EMPTY_GROUP
        assert (await delete_offsets(group, [topic])).error_code == ErrorCode.NON_EMPTY_GROUP
        assert (await delete_offsets("no-such-group", [topic])).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert _log_ends(bootstrap, log_topic) == ends
        # No state yet: none listed; a partition asked for has start offset -1.
        assert _starts(await describe_offsets()) == {}
        assert _starts(await describe_offsets(topics=[(topic, [0]), ("no-such-topic", [0])])) == {
            (topic, 0): (-1, -1, 0),
            ("no-such-topic", 0): (-1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        }

        # --- state made by a fetch (share.auto.offset.reset=latest: at 10), then an alter -----
        assert await fetch(member, 0) == []
        assert _starts(await describe_offsets()) == {(topic, 0): (10, 0, 0)}
        _produce(bootstrap, topic, 2, 1, prefix="more-")  # offsets 10, 11
        assert await fetch(member, 1) == [(10, 11)]  # acquired: in flight, locked to the member
        assert _starts(await describe_offsets()) == {(topic, 0): (10, 2, 0)}
        await beat(member, -1)  # leaves: the group is empty

        done = await alter_offsets(group, {topic: [(0, 3), (1, 0), (7, 0)], "no-such-topic": [(0, 1)]})
        assert done.error_code == 0
        assert {(t.topic_name, p.partition_index): p.error_code for t in done.responses for p in t.partitions} == {
            (topic, 0): 0,
            (topic, 1): 0,
            (topic, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert _starts(await describe_offsets()) == {(topic, 0): (3, 9, 0), (topic, 1): (0, 0, 0)}
        # v0 has no lag: the default (-1) is what the client reads.
        assert _starts(await describe_offsets(version=0)) == {(topic, 0): (3, -1, 0), (topic, 1): (0, -1, 0)}

        # The in-flight state went with the alter: a new member gets 3..11.
        member = str(uuid.uuid4())
        epoch = await beat(member, 0)
        got: list[tuple[int, int]] = []
        for session_epoch in range(4):
            got += await fetch(member, session_epoch)
            if got and got[-1][1] == 11:
                break
        assert got[0][0] == 3 and got[-1][1] == 11
        await beat(member, -1)
        del epoch

        # --- delete: the topic's share-partitions go --------------------------------------------
        gone = await delete_offsets(group, [topic, "no-such-topic"])
        assert gone.error_code == 0
        assert {t.topic_name: t.error_code for t in gone.responses} == {
            topic: 0,
            "no-such-topic": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert _starts(await describe_offsets()) == {}
        await client.close()

    asyncio.run(run())
