"""Offset expiration, OffsetDelete and topic deletion (Kafka's cleanupExpiredOffsets & co).

All pure: they read an ``OffsetsState`` plus what the group's membership protocol says about
the group (``GroupRetentionView``) and return tombstones. The periodic sweep over a shard's groups,
which also deletes the empty groups left without offsets (those that never had any included), is
``GroupCoordinatorShard.expire_offsets``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.coordinator.offsets.state import OffsetsState
from groupcoord.coordinator.runtime.api import Result
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import OffsetCommitKey
from groupcoord.records.offset_commit_decoding import KeptTimestamps


@dataclass(frozen=True, slots=True)
class GroupRetentionView:
    """What offset retention needs to know about a group from its membership protocol."""

    # Topics the group's members subscribe to now: their offsets never expire.
    subscribed_topics: frozenset[str] = frozenset()
    # A consumer-protocol classic group whose subscription is not known (no protocol chosen yet,
    # or metadata that does not parse) counts as subscribed to every topic, as Kafka's
    # ClassicGroup.isSubscribedToTopic does: its offsets are neither expired nor deletable.
    subscribed_to_all: bool = False
    is_empty: bool = True
    # For a classic group that uses group management and is empty: when it became empty. Its
    # offsets then expire a retention period after that moment (Kafka's offsetExpirationCondition).
    empty_since_ms: int | None = None
    # A group a membership protocol knows about (else it is a "simple" group of offsets only).
    managed: bool = False
    # False while the group's protocol forbids expiring anything (a classic group rebalancing,
    # or one whose protocol type is not "consumer" and that still has members).
    expires: bool = True

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_to_all or topic in self.subscribed_topics


def _tombstone(group: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, topic, partition), None)


def _expired(committed: int, expires: int, view: GroupRetentionView, now_ms: int, retention_ms: int) -> bool:
    if expires >= 0:
        # Committed with an explicit retention (OffsetCommit v1-v4): that wins.
        return now_ms >= expires
    base = committed
    if view.empty_since_ms is not None:
        base = max(base, view.empty_since_ms)
    return now_ms - base >= retention_ms


def expire_offsets(
    state: OffsetsState,
    group_id: str,
    view: GroupRetentionView,
    now_ms: int,
    retention_ms: int,
    timestamps: KeptTimestamps | None = None,
) -> list[CoordinatorRecord]:
    """Tombstones for the group's offsets that have expired; subscribed topics never expire.
    Values a load kept encoded are not decoded: ``timestamps`` reads what this needs of them
    (one reader for a whole sweep remembers more)."""
    out: list[CoordinatorRecord] = []
    if not view.expires:
        return out
    read = KeptTimestamps() if timestamps is None else timestamps
    for topic, partitions in sorted(state.group_offsets(group_id).items()):
        if view.is_subscribed_to(topic):
            continue
        for partition, value in sorted(partitions.slots.items()):
            if type(value) is bytes:
                committed, expires = read(value)
            else:
                committed, expires = value.commit_timestamp, value.expire_timestamp  # type: ignore[union-attr]
            if _expired(committed, expires, view, now_ms, retention_ms):
                out.append(_tombstone(group_id, topic, partition))
    return out


def all_offsets_expire(state: OffsetsState, group_id: str, expiring: list[CoordinatorRecord]) -> bool:
    total = sum(len(ps) for ps in state.group_offsets(group_id).values())
    return total == len(expiring)


def delete_group_offsets(
    state: OffsetsState, group_id: str, pending: Iterable[tuple[str, int]] = ()
) -> list[CoordinatorRecord]:
    """Tombstones for every committed offset of the group and every partition with only a staged
    transactional offset (``pending``), as Kafka's deleteAllOffsets."""
    committed = [
        (topic, partition) for topic, partitions in state.group_offsets(group_id).items() for partition in partitions
    ]
    return [_tombstone(group_id, topic, partition) for topic, partition in sorted({*committed, *pending})]


def offsets_of_deleted_topic(
    state: OffsetsState, topic: str, topic_id: str | None, pending: Iterable[tuple[str, int]] = ()
) -> list[CoordinatorRecord]:
    """Tombstones for offsets of a deleted topic incarnation, committed or staged (``pending``:
    (group, partition) of the incarnation's staged offsets), as Kafka's onPartitionsDeleted.

    Offsets recorded with another topic id belong to a re-created topic of the same name and
    are kept; offsets recorded without any id cannot be told apart and go with the name.
    """
    found = set(pending)
    for group, topics in state.offsets.items():
        for partition, value in topics.get(topic, {}).items():
            if topic_id is None or value.topic_id is None or value.topic_id == topic_id:
                found.add((group, partition))
    return [_tombstone(group, topic, partition) for group, partition in sorted(found)]


def delete_offsets(
    state: OffsetsState,
    request: OffsetDeleteRequest,
    view: GroupRetentionView | None,
    pending: Collection[tuple[str, int]] = (),
) -> Result[OffsetDeleteResponse]:
    """OffsetDelete: refused per partition for topics the group subscribes to. A partition gets a
    tombstone when it has a committed offset or a staged transactional one (``pending``), as in
    Kafka, where a group with only staged offsets exists (its TxnOffsetCommit created it). An
    empty group id is INVALID_GROUP_ID, as GroupCoordinatorService.deleteOffsets checks first."""
    if not request.group_id:
        return Result(OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID))
    if view is None and not state.has_group(request.group_id) and not pending:
        return Result(OffsetDeleteResponse(error_code=ErrorCode.GROUP_ID_NOT_FOUND))
    records = []
    topics = []
    for t in request.topics:
        rows = []
        for p in t.partitions:
            partition = p.partition_index
            if view is not None and view.is_subscribed_to(t.name):
                rows.append(
                    OffsetDeleteResponsePartition(
                        partition_index=partition, error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                    )
                )
                continue
            if state.get(request.group_id, t.name, partition) is not None or (t.name, partition) in pending:
                records.append(_tombstone(request.group_id, t.name, partition))
            rows.append(OffsetDeleteResponsePartition(partition_index=partition, error_code=ErrorCode.NONE))
        topics.append(OffsetDeleteResponseTopic(name=t.name, partitions=rows))
    return Result(OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=topics), records)
