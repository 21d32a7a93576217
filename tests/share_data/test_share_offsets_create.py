"""AlterShareGroupOffsets on a group id no group holds creates the share group, as Kafka 4.2 does
(KAFKA-19662: offsets set before the group's first consumer), durably: its epoch record is written
with the start offsets, and its first consumer starts where they say.
An id held by another type of group is refused (GROUP_ID_NOT_FOUND) and nothing is written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import alter_share_group_offsets as alter
from groupcoord.coordinator.messages import describe_share_group_offsets as describe
from groupcoord.coordinator.messages import list_groups as lg
from groupcoord.local_broker import free_port
from groupcoord.records import RecordType, decode
from groupcoord.records.codec import record_type_of
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.share_data.test_share_consumer import SHARE_GROUPS, _produce, _topic_id, _wire_fetch, _wire_member
from tests.share_data.test_share_offsets_admin import LOG_PARTITIONS, _log_ends, _starts

pytestmark = pytest.mark.integration

ALTER, DESCRIBE, LIST_GROUPS = 91, 90, 16
WANTED = {int(RecordType.SHARE_GROUP_METADATA), int(RecordType.SHARE_SNAPSHOT), int(RecordType.SHARE_UPDATE)}


def _alter(group: str, topic: str, starts: list[tuple[int, int]]) -> alter.AlterShareGroupOffsetsRequest:
    partitions = [alter.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o) for p, o in starts]
    return alter.AlterShareGroupOffsetsRequest(
        group_id=group, topics=[alter.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=partitions)]
    )


def _describe(group: str) -> describe.DescribeShareGroupOffsetsRequest:
    return describe.DescribeShareGroupOffsetsRequest(
        groups=[describe.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]
    )


async def _share_groups(client: WireClient) -> dict[str, str]:
    answer = await client.call(LIST_GROUPS, 5, lg.ListGroupsRequest(types_filter=["share"]))
    assert isinstance(answer, lg.ListGroupsResponse) and answer.error_code == 0
    return {g.group_id: g.group_state for g in answer.groups}


def _group_records(bootstrap: str, log_topic: str, group: str) -> list[RecordType]:
    """The types of the records of ``group``'s share group in the coordinator log, in log order.
    Read until nothing more comes (Tansu's high watermark may point inside the last batch)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gc-sgc-probe", "enable.auto.commit": False})
    found: list[RecordType] = []
    try:
        for p in range(LOG_PARTITIONS):
            consumer.assign([TopicPartition(log_topic, p, 0)])
            while messages := consumer.consume(500, 1):
                for m in messages:
                    kind = record_type_of(m.key()) if m.error() is None else None
                    if kind in WANTED and getattr(decode(m.key(), m.value()).key, "group", None) == group:
                        found.append(RecordType(kind))
        return found
    finally:
        consumer.close()


def test_alter_share_group_offsets_creates_the_group(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    topic, group, taken = unique_name, f"{unique_name}-new", f"{unique_name}-consumers"
    create_topic(bootstrap, topic, 1)
    topic_id, log_topic = _topic_id(bootstrap, topic), f"{unique_name}-log"
    _produce(bootstrap, topic, 10, 1)  # offsets 0..9
    serve = ServeProcess(bootstrap, free_port(), log_topic, partitions=LOG_PARTITIONS, log=tmp_path / "serve.log")
    serve.start(env=SHARE_GROUPS)
    try:
        # An offsets-only (consumer) group holds ``taken``.
        consumer = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": taken})
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        consumer.close()

        async def run() -> None:
            client = await WireClient.connect("127.0.0.1", serve.port)
            ends = _log_ends(bootstrap, log_topic)
            refused = await client.call(ALTER, 0, _alter(taken, topic, [(0, 3)]))
            assert isinstance(refused, alter.AlterShareGroupOffsetsResponse)
            assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND
            assert refused.error_message == f"Group {taken} is not a share group."
            assert _log_ends(bootstrap, log_topic) == ends

            done = await client.call(ALTER, 0, _alter(group, topic, [(0, 3), (5, 0)]))
            assert isinstance(done, alter.AlterShareGroupOffsetsResponse) and done.error_code == 0
            codes = [p.error_code for t in done.responses for p in t.partitions]
            assert codes == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
            assert (await _share_groups(client)).get(group) == "Empty"
            assert _starts(await client.call(DESCRIBE, 1, _describe(group))) == {(topic, 0): (3, 7, 0)}
            await client.close()
            # Durable: the group's epoch record is in the log, before its share-partition's state
            # (what a load replays: tests/share_data/test_shard_ops.py reloads such records).
            written = _group_records(bootstrap, log_topic, group)
            assert written[:2] == [RecordType.SHARE_GROUP_METADATA, RecordType.SHARE_SNAPSHOT], written

            # The first consumer starts at the offset set, not at share.auto.offset.reset (latest).
            member_client, member = await _wire_member(serve.port, group, topic)
            got: list[tuple[int, int, int]] = []
            for epoch in range(6):
                got += await _wire_fetch(member_client, (group, member, topic_id), epoch, max_wait_ms=1000)
                if got and got[-1][1] == 9:
                    break
            assert got and got[0][0] == 3 and got[-1][1] == 9
            await member_client.close()

        asyncio.run(run())
    finally:
        serve.stop()
