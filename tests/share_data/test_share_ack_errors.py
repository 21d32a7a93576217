"""ShareAcknowledge, ShareFetch acknowledgements and AlterShareGroupOffsets on bad or edge-case input,
answered as Kafka 4.2 answers them, through a real ``groupcoord serve`` in front of the local broker
on the wire: KafkaApis (the session, then per partition the topic id, validateAcknowledgementBatches,
the partition, an empty list), SharePartitionManager.acknowledge (a share-partition not fetched:
UNKNOWN_TOPIC_OR_PARTITION) and SharePartition.acknowledge (an offset acknowledged twice in one
request: INVALID_RECORD_STATE). A refused acknowledgement writes nothing to the coordinator log."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import alter_share_group_offsets as alter
from groupcoord.coordinator.messages import describe_share_group_offsets as describe
from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.share_data.acks import Batch, ack_request
from tests.share_data.test_share_consumer import (
    SHARE_ACK,
    SHARE_FETCH,
    SHARE_HEARTBEAT,
    _log_ends,
    _produce,
    _topic_id,
    _wire_member,
    acquired_ranges,
    shared_serve,  # noqa: F401  (the module's serve)
)

pytestmark = pytest.mark.integration

ACCEPT, RELEASE = 1, 2
DESCRIBE, ALTER = 90, 91


def _fetch_request(
    group: str,
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: Sequence[Batch] = (),
    max_wait_ms: int = 0,
) -> sf.ShareFetchRequest:
    batches = [
        sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=types)
        for f, la, types in acks
    ]
    partition = sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=batches)
    return sf.ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        max_records=100,
        topics=[sf.ShareFetchRequestFetchTopic(topic_id=topic_id, partitions=[partition])],
    )


def _errors(answer: sa.ShareAcknowledgeResponse) -> dict[tuple[uuid.UUID, int], int]:
    assert answer.error_code == 0, answer
    return {(t.topic_id, p.partition_index): p.error_code for t in answer.responses for p in t.partitions}


def test_acknowledgement_errors_are_kafkas_and_a_refused_one_writes_nothing(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    serve = shared_serve
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 2)
    topic_id, log_topic = _topic_id(bootstrap, topic), serve.args[-3]
    unknown_topic = uuid.uuid4()

    async def run() -> None:
        client, member = await _wire_member(serve.port, group, topic)

        async def fetch(epoch: int, acks: Sequence[Batch] = (), max_wait_ms: int = 0) -> sf.ShareFetchResponse:
            answer = await client.call(
                SHARE_FETCH, 1, _fetch_request(group, member, epoch, topic_id, acks, max_wait_ms)
            )
            assert isinstance(answer, sf.ShareFetchResponse)
            return answer

        async def ack(
            epoch: int, topics: dict[uuid.UUID, dict[int, list[Batch]]], who: str = member
        ) -> sa.ShareAcknowledgeResponse:
            answer = await client.call(SHARE_ACK, 1, ack_request(group, who, epoch, topics))
            assert isinstance(answer, sa.ShareAcknowledgeResponse)
            return answer

        # Partition 0 only is in the session (and made live); partition 1 never is.
        assert (await fetch(0)).error_code == 0  # starts at the end
        _produce(bootstrap, topic, 10, 1)  # 0..9, partition 0
        assert acquired_ranges(await fetch(1, max_wait_ms=5000)) == [(0, 9, 1)]

        ends = _log_ends(bootstrap, log_topic)
        refused = await ack(
            2,
            {
                # The second batch begins at the first one's last offset: Kafka's validation lets it
                # through, and the partition finds offset 4 already acknowledged.
                topic_id: {
                    0: [(0, 4, [ACCEPT]), (4, 9, [ACCEPT])],
                    1: [(0, 0, [ACCEPT])],  # no fetch made it live: not in Kafka's cache
                    7: [(3, 2, [ACCEPT])],  # malformed, on a partition the topic does not have
                    8: [(0, 0, [ACCEPT])],  # well-formed, on a partition the topic does not have
                },
                unknown_topic: {0: [(3, 2, [ACCEPT])]},
            },
        )
        assert _errors(refused) == {
            (topic_id, 0): ErrorCode.INVALID_RECORD_STATE,
            (topic_id, 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            (topic_id, 7): ErrorCode.INVALID_REQUEST,
            (topic_id, 8): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            (unknown_topic, 0): ErrorCode.UNKNOWN_TOPIC_ID,
        }
        # Piggybacked on a ShareFetch: the same answer, as the partition's acknowledge error.
        piggybacked = await fetch(3, [(0, 4, [RELEASE]), (4, 4, [ACCEPT])])
        assert piggybacked.error_code == 0
        (p,) = [p for t in piggybacked.responses for p in t.partitions]
        assert (p.error_code, p.acknowledge_error_code) == (0, ErrorCode.INVALID_RECORD_STATE)
        # A batch beginning below the previous one's last offset is malformed.
        overlapping = await ack(4, {topic_id: {0: [(0, 5, [ACCEPT]), (4, 9, [ACCEPT])]}})
        assert _errors(overlapping) == {(topic_id, 0): ErrorCode.INVALID_REQUEST}
        # No acknowledgement at all: NONE, for a partition not live too.
        assert _errors(await ack(5, {topic_id: {0: [], 1: []}})) == {(topic_id, 0): 0, (topic_id, 1): 0}
        assert _log_ends(bootstrap, log_topic) == ends  # nothing written

        # A member id with no share session (Kafka keys sessions by member id):
        # SHARE_SESSION_NOT_FOUND, whether or not the id is a member's.
        stranger = str(uuid.uuid4())
        assert (await ack(1, {topic_id: {0: [(0, 0, [ACCEPT])]}}, who=stranger)).error_code == (
            ErrorCode.SHARE_SESSION_NOT_FOUND
        )
        strange_fetch = await client.call(SHARE_FETCH, 1, _fetch_request(group, stranger, 1, topic_id))
        assert isinstance(strange_fetch, sf.ShareFetchResponse)
        assert strange_fetch.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        # Acknowledgements in a new session: INVALID_REQUEST, before the member is looked at.
        opening = await client.call(SHARE_FETCH, 1, _fetch_request(group, stranger, 0, topic_id, [(0, 0, [ACCEPT])]))
        assert isinstance(opening, sf.ShareFetchResponse) and opening.error_code == ErrorCode.INVALID_REQUEST
        assert _log_ends(bootstrap, log_topic) == ends

        # The state is as it was: the member still holds 0..9 and acknowledges them.
        assert _errors(await ack(6, {topic_id: {0: [(0, 4, [ACCEPT]), (5, 9, [ACCEPT])]}})) == {(topic_id, 0): 0}
        assert _log_ends(bootstrap, log_topic) != ends
        await client.close()

    asyncio.run(run())


def test_an_alter_past_the_end_of_the_log_is_accepted_and_waits_for_the_log(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    """Kafka 4.2's AlterShareGroupOffsets (GroupMetadataManager.completeAlterShareGroupOffsets)
    checks the topic and the partition index, not the log: a start offset past the log's end is
    accepted, and the share-partition delivers from there once the log reaches it."""
    serve = shared_serve
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)
    _produce(bootstrap, topic, 5, 1)  # 0..4: the log ends at 5

    async def run() -> None:
        client = await WireClient.connect("127.0.0.1", serve.port)
        request = alter.AlterShareGroupOffsetsRequest(
            group_id=group,
            topics=[
                alter.AlterShareGroupOffsetsRequestTopic(
                    topic_name=topic,
                    partitions=[alter.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=8)],
                )
            ],
        )
        done = await client.call(ALTER, 0, request)
        assert isinstance(done, alter.AlterShareGroupOffsetsResponse) and done.error_code == 0, done
        assert [p.error_code for t in done.responses for p in t.partitions] == [0]
        described = await client.call(
            DESCRIBE,
            0,
            describe.DescribeShareGroupOffsetsRequest(
                groups=[describe.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]
            ),
        )
        assert isinstance(described, describe.DescribeShareGroupOffsetsResponse)
        assert [(p.partition_index, p.start_offset) for t in described.groups[0].topics for p in t.partitions] == [
            (0, 8)
        ]
        await client.close()

        fetcher, member = await _wire_member(serve.port, group, topic)

        async def fetch(epoch: int, max_wait_ms: int) -> sf.ShareFetchResponse:
            answer = await fetcher.call(SHARE_FETCH, 1, _fetch_request(group, member, epoch, topic_id, [], max_wait_ms))
            assert isinstance(answer, sf.ShareFetchResponse)
            return answer

        assert acquired_ranges(await fetch(0, 300)) == []  # no error, nothing yet
        _produce(bootstrap, topic, 5, 1, prefix="more-")  # 5..9: the start (8) is reached
        got: list[tuple[int, int, int]] = []
        for epoch in range(1, 6):
            got += acquired_ranges(await fetch(epoch, 2000))
            if got:
                break
        assert got == [(8, 9, 1)]
        leave = sgh.ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1)
        assert isinstance(await fetcher.call(SHARE_HEARTBEAT, 1, leave), sgh.ShareGroupHeartbeatResponse)
        await fetcher.close()

    asyncio.run(run())
