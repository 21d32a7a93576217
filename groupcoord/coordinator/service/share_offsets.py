"""Share-group offsets administration: DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91)
and DeleteShareGroupOffsets (92), answered from the share-partition state of the group's shard.

As Kafka 4.2 answers them (its GroupCoordinatorService over the share coordinator's state):

* Describe reads the committed state: per share-partition its start offset (SPSO), and from v1 its
  lag: the records from SPSO to the partition's end not yet delivered to completion (looked up
  with ListOffsets; -1 when the leader cannot say). A requested partition with no state is
  answered with start offset -1; a topic the cluster does not have, UNKNOWN_TOPIC_OR_PARTITION.
  The leader epoch is -1: the sidecar does not record the leader's epoch with the state.
* Alter and Delete are one write each, checked inside the write: the group must be a share group
  (GROUP_ID_NOT_FOUND) with no members (NON_EMPTY_GROUP); a refusal writes nothing. Alter starts
  each named share-partition afresh at the given offset (a ShareSnapshot with a new state epoch,
  in-flight state dropped); Delete tombstones every share-partition of the named topics.

Alter on a group id no group holds creates the share group, empty, as Kafka does since 4.2
(KAFKA-19662: offsets may be set before the group's first consumer, as kafka-consumer-groups.sh
can for consumer groups): its epoch record goes in the same write as the start offsets, so the
group and its offsets are durable together. An id held by a group of another type is still
GROUP_ID_NOT_FOUND ("... is not a share group.").

Clients send these to the group's coordinator (FindCoordinator), so they are answered by the
process that owns the group's shard (NOT_COORDINATOR elsewhere, as every group API).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Sequence

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.share.log_records import group_epoch_record
from groupcoord.coordinator.messages import alter_share_group_offsets as wire_alter
from groupcoord.coordinator.messages import delete_share_group_offsets as wire_delete
from groupcoord.coordinator.messages import describe_share_group_offsets as wire_describe
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.shard import ShardNotAvailable
from groupcoord.coordinator.service.metadata_cache import TopicInfo, TopicNames
from groupcoord.coordinator.service.service import GroupCoordinatorService, error_for
from groupcoord.coordinator.service.share_fetcher import READ_ERRORS, ShareRecordFetcher
from groupcoord.coordinator.share import shard_ops
from groupcoord.coordinator.share.partition_types import RecordState
from groupcoord.coordinator.share.state import DurableShareState, SharePartitionKey
from groupcoord.records import CoordinatorRecord

# Kafka's "uninitialized" start offset / unknown leader epoch / unknown lag.
UNKNOWN = -1
LAG_VERSION = 1
_DONE = frozenset({int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)})
_NO_TOPIC = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def group_error(state: GroupCoordinatorState, group: str, *, must_be_empty: bool) -> ErrorCode:
    """GROUP_ID_NOT_FOUND unless ``group`` is a share group; NON_EMPTY_GROUP when it must have no
    members and has some."""
    g = state.share.group(group)
    if g is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if must_be_empty and g.members:
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE


def created_for_alter(state: GroupCoordinatorState, group: str) -> list[CoordinatorRecord]:
    """The record that creates ``group`` as an empty share group (epoch 0) when no group of any
    type holds the id (AlterShareGroupOffsets creates it, as Kafka 4.2 does); none otherwise."""
    if state.group_known(group):
        return []
    return [group_epoch_record(group, 0, 0)]


def wrong_type(state: GroupCoordinatorState, group: str, error: int) -> str | None:
    """Kafka's message when the id is held by a group of another type (an offsets-only group
    included); None otherwise."""
    if error == ErrorCode.GROUP_ID_NOT_FOUND and state.group_known(group):
        return f"Group {group} is not a share group."
    return None


def lag(durable: DurableShareState, end_offset: int) -> int:
    """Records from the start offset to the partition's end not yet delivered to completion."""
    done = sum(
        min(last, end_offset - 1) - first + 1 for first, last, s, _ in durable.runs if s in _DONE and first < end_offset
    )
    return max(0, end_offset - durable.start_offset - done)


class ShareOffsetsAdmin:
    def __init__(self, service: GroupCoordinatorService, topics: TopicNames, fetcher: ShareRecordFetcher) -> None:
        self.service = service
        self.topics = topics
        self.fetcher = fetcher

    async def _lag(self, key: SharePartitionKey, durable: DurableShareState) -> int:
        try:
            ends = await self.fetcher.offsets(key.topic, key.partition)
        except READ_ERRORS:
            return UNKNOWN
        return UNKNOWN if ends is None else lag(durable, ends[1])

    # --- DescribeShareGroupOffsets -------------------------------------------------------------

    async def describe(
        self, request: wire_describe.DescribeShareGroupOffsetsRequest, api_version: int
    ) -> wire_describe.DescribeShareGroupOffsetsResponse:
        groups = [await self._describe_one(g, api_version) for g in request.groups]
        return wire_describe.DescribeShareGroupOffsetsResponse(groups=groups)

    async def _describe_one(
        self, wanted: wire_describe.DescribeShareGroupOffsetsRequestGroup, api_version: int
    ) -> wire_describe.DescribeShareGroupOffsetsResponseGroup:
        group = wanted.group_id

        def refused(code: int, message: str | None = None) -> wire_describe.DescribeShareGroupOffsetsResponseGroup:
            return wire_describe.DescribeShareGroupOffsetsResponseGroup(
                group_id=group, error_code=code, error_message=message
            )

        if not group:
            return refused(ErrorCode.INVALID_GROUP_ID)

        def read(s: GroupCoordinatorState) -> tuple[ErrorCode, str | None, dict[SharePartitionKey, DurableShareState]]:
            error = group_error(s, group, must_be_empty=False)
            return error, wrong_type(s, group, error), shard_ops.durable_partitions(s.share_data, group)

        try:
            found = self.service.shard_for(group).read(read)
        except ShardNotAvailable as exc:
            return refused(error_for(exc))
        error, message, durable = found
        if error:
            return refused(error, message)
        # The partitions to answer: those asked for, or every one with state.
        asked: list[tuple[str, list[int]]]
        if wanted.topics is None:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for k in sorted(durable, key=lambda k: (k.topic, k.partition)):
                by_topic[k.topic].append(k.partition)
            asked = list(by_topic.items())
        else:
            asked = [(t.topic_name, list(t.partitions)) for t in wanted.topics]
        topics = []
        # The lags are looked up together: one ListOffsets round trip per partition otherwise.
        lags: list[tuple[wire_describe.DescribeShareGroupOffsetsResponsePartition, Awaitable[int]]] = []
        for name, partitions in asked:
            info = await self.topics.lookup(name, None)
            answers = []
            for p in partitions:
                entry = wire_describe.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p, start_offset=UNKNOWN, leader_epoch=UNKNOWN, lag=UNKNOWN
                )
                state = durable.get(SharePartitionKey(group, name, p))
                if info is None or not 0 <= p < info.partitions:
                    entry.error_code = _NO_TOPIC
                elif state is not None:
                    entry.start_offset = state.start_offset
                    if api_version >= LAG_VERSION:
                        lags.append((entry, self._lag(SharePartitionKey(group, name, p), state)))
                answers.append(entry)
            topics.append(
                wire_describe.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name, topic_id=info.topic_id if info else uuid.UUID(int=0), partitions=answers
                )
            )
        for (entry, _), found_lag in zip(lags, await asyncio.gather(*(c for _, c in lags)), strict=True):
            entry.lag = found_lag
        return wire_describe.DescribeShareGroupOffsetsResponseGroup(group_id=group, topics=topics)

    # --- AlterShareGroupOffsets ----------------------------------------------------------------

    async def alter(
        self, request: wire_alter.AlterShareGroupOffsetsRequest
    ) -> wire_alter.AlterShareGroupOffsetsResponse:
        group = request.group_id or ""
        infos = {t.topic_name: await self.topics.lookup(t.topic_name, None) for t in request.topics}
        # Per (topic, partition): the error it gets before the write (unknown topic or index, a
        # negative offset); the others are written together.
        errors: dict[tuple[str, int], int] = {}
        starts: list[tuple[SharePartitionKey, int, str | None]] = []
        for t in request.topics:
            info = infos[t.topic_name]
            for p in t.partitions:
                if info is None or not 0 <= p.partition_index < info.partitions:
                    errors[(t.topic_name, p.partition_index)] = _NO_TOPIC
                elif p.start_offset < 0:
                    errors[(t.topic_name, p.partition_index)] = ErrorCode.INVALID_REQUEST
                else:
                    key = SharePartitionKey(group, t.topic_name, p.partition_index)
                    starts.append((key, p.start_offset, info.id_string))

        def op(state: GroupCoordinatorState, now: int) -> Result[tuple[ErrorCode, str | None]]:
            created = created_for_alter(state, group)
            error = ErrorCode.NONE if created else group_error(state, group, must_be_empty=True)
            if error:
                return Result((error, wrong_type(state, group, error)))
            result = shard_ops.reset_start_offsets(state.share_data, starts)
            return Result((ErrorCode.NONE, None), [*created, *result.records], result.timers)

        message: str | None = None
        if not group:
            top = ErrorCode.INVALID_GROUP_ID
        else:
            try:
                top, message = await self.service.shard_for(group).write(op)
            except ShardNotAvailable as exc:
                top = error_for(exc)
        return wire_alter.AlterShareGroupOffsetsResponse(
            error_code=top,
            error_message=message,
            responses=[
                wire_alter.AlterShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name,
                    topic_id=_id(infos[t.topic_name]),
                    partitions=[
                        wire_alter.AlterShareGroupOffsetsResponsePartition(
                            partition_index=p.partition_index,
                            error_code=top or errors.get((t.topic_name, p.partition_index), ErrorCode.NONE),
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )

    # --- DeleteShareGroupOffsets ---------------------------------------------------------------

    async def delete(
        self, request: wire_delete.DeleteShareGroupOffsetsRequest
    ) -> wire_delete.DeleteShareGroupOffsetsResponse:
        group = request.group_id or ""
        names = [t.topic_name for t in request.topics]
        infos = {n: await self.topics.lookup(n, None) for n in names}

        def op(state: GroupCoordinatorState, now: int) -> Result[tuple[ErrorCode, str | None, frozenset[str]]]:
            error = group_error(state, group, must_be_empty=True)
            if error:
                return Result((error, wrong_type(state, group, error), frozenset()))
            present = frozenset(k.topic for k in shard_ops.durable_partitions(state.share_data, group))
            result = shard_ops.delete_topics_state(state.share_data, group, names)
            return Result((ErrorCode.NONE, None, present), result.records, result.timers)

        present: frozenset[str] = frozenset()
        message: str | None = None
        if not group:
            top = ErrorCode.INVALID_GROUP_ID
        else:
            try:
                top, message, present = await self.service.shard_for(group).write(op)
            except ShardNotAvailable as exc:
                top = error_for(exc)
        if top:
            return wire_delete.DeleteShareGroupOffsetsResponse(error_code=top, error_message=message)
        # A topic with no share-partition state in the group (or unknown to the cluster) is
        # UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers a topic it has nothing to delete for.
        return wire_delete.DeleteShareGroupOffsetsResponse(
            responses=[
                wire_delete.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=n,
                    topic_id=_id(infos[n]),
                    error_code=ErrorCode.NONE if n in present else _NO_TOPIC,
                )
                for n in _distinct(names)
            ]
        )


def _id(info: TopicInfo | None) -> uuid.UUID:
    return info.topic_id if info is not None else uuid.UUID(int=0)


def _distinct(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))
