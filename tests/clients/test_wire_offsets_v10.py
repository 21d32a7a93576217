"""OffsetCommit and OffsetFetch v10 by topic id (names empty), as Apache Kafka's Java consumer 4.x
sends them from a KIP-848 member, on the wire through a real ``groupcoord serve``."""

from __future__ import annotations

import asyncio
import time
import uuid

from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import consumer_group_heartbeat as cgh
from groupcoord.coordinator.messages import offset_commit as oc
from groupcoord.coordinator.messages import offset_fetch as of
from groupcoord.coordinator.service.metadata_cache import _uuid_from_client
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess

HEARTBEAT, COMMIT, FETCH = 68, 8, 9


def _topic_uuid(bootstrap: str, topic: str) -> uuid.UUID:
    from confluent_kafka import TopicCollection

    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    return _uuid_from_client(described.topic_id)


async def _join(client: WireClient, group: str, member: str, topic: str, topic_id: uuid.UUID) -> int:
    """Heartbeat until the member holds both partitions of ``topic``; returns its member epoch."""
    request = cgh.ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic],
        topic_partitions=[],
    )
    deadline = time.monotonic() + 30
    owned: list[int] = []
    while True:
        response = await client.call(HEARTBEAT, 1, request)
        assert isinstance(response, cgh.ConsumerGroupHeartbeatResponse)
        assert response.error_code == ErrorCode.NONE, response
        if response.assignment is not None:
            owned = [p for tp in response.assignment.topic_partitions if tp.topic_id == topic_id for p in tp.partitions]
        if sorted(owned) == [0, 1]:
            return response.member_epoch
        assert time.monotonic() < deadline, f"no assignment of {topic} within 30 s"
        await asyncio.sleep(0.3)
        request = cgh.ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=response.member_epoch,
            topic_partitions=[
                cgh.ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=topic_id, partitions=sorted(owned))
            ]
            if owned
            else [],
        )


def test_offset_commit_and_fetch_v10_by_topic_id(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-g"
    create_topic(bootstrap, topic, 2)
    topic_id = _topic_uuid(bootstrap, topic)
    member = str(uuid.uuid4())

    async def main() -> None:
        client = await WireClient.connect("127.0.0.1", sidecar.port)
        try:
            epoch = await _join(client, group, member, topic, topic_id)
            commit = oc.OffsetCommitRequest(
                group_id=group,
                generation_id_or_member_epoch=epoch,
                member_id=member,
                topics=[
                    oc.OffsetCommitRequestTopic(
                        name="",
                        topic_id=topic_id,
                        partitions=[
                            oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=42),
                            oc.OffsetCommitRequestPartition(partition_index=1, committed_offset=43),
                        ],
                    ),
                    oc.OffsetCommitRequestTopic(
                        name="",
                        topic_id=uuid.uuid4(),  # a topic id the cluster never had
                        partitions=[oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)],
                    ),
                ],
            )
            answer = await client.call(COMMIT, 10, commit)
            assert isinstance(answer, oc.OffsetCommitResponse)
            assert [t.topic_id for t in answer.topics] == [topic_id, commit.topics[1].topic_id]
            assert [[p.error_code for p in t.partitions] for t in answer.topics] == [
                [ErrorCode.NONE, ErrorCode.NONE],
                [ErrorCode.UNKNOWN_TOPIC_ID],
            ]
            fetch = of.OffsetFetchRequest(
                groups=[
                    of.OffsetFetchRequestGroup(
                        group_id=group,
                        member_id=member,
                        member_epoch=epoch,
                        topics=[of.OffsetFetchRequestTopics(topic_id=topic_id, partition_indexes=[0, 1])],
                    )
                ]
            )
            fetched = await client.call(FETCH, 10, fetch)
            assert isinstance(fetched, of.OffsetFetchResponse)
            (answered,) = fetched.groups
            assert answered.error_code == ErrorCode.NONE
            (topic_answer,) = answered.topics
            assert topic_answer.topic_id == topic_id
            assert [(p.partition_index, p.committed_offset, p.error_code) for p in topic_answer.partitions] == [
                (0, 42, ErrorCode.NONE),
                (1, 43, ErrorCode.NONE),
            ]
            leave = cgh.ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1)
            left = await client.call(HEARTBEAT, 1, leave)
            assert isinstance(left, cgh.ConsumerGroupHeartbeatResponse) and left.error_code == ErrorCode.NONE
        finally:
            await client.close()

    asyncio.run(main())


def test_offset_commit_to_a_topic_or_partition_that_does_not_exist_is_refused(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION before the coordinator and stores nothing."""
    topic, group = unique_name, f"{unique_name}-g"
    create_topic(bootstrap, topic, 2)

    async def main() -> None:
        client = await WireClient.connect("127.0.0.1", sidecar.port)
        try:
            commit = oc.OffsetCommitRequest(
                group_id=group,
                topics=[
                    oc.OffsetCommitRequestTopic(
                        name=topic,
                        partitions=[
                            oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=5),
                            oc.OffsetCommitRequestPartition(partition_index=7, committed_offset=5),
                        ],
                    ),
                    oc.OffsetCommitRequestTopic(
                        name=f"{topic}-missing",
                        partitions=[oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)],
                    ),
                ],
            )
            answer = await client.call(COMMIT, 8, commit)
            assert isinstance(answer, oc.OffsetCommitResponse)
            assert [(t.name, [p.error_code for p in t.partitions]) for t in answer.topics] == [
                (topic, [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
                (f"{topic}-missing", [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
            ]
            fetched = await client.call(
                FETCH, 8, of.OffsetFetchRequest(groups=[of.OffsetFetchRequestGroup(group_id=group, topics=None)])
            )
            assert isinstance(fetched, of.OffsetFetchResponse)
            stored = [
                (t.name, p.partition_index, p.committed_offset) for t in fetched.groups[0].topics for p in t.partitions
            ]
            assert stored == [(topic, 0, 5)]
        finally:
            await client.close()

    asyncio.run(main())
