"""GroupCoordinatorShard: the handlers over one partition's GroupCoordinatorState.

As Kafka's GroupCoordinatorShard, it is delegation: each handler builds the call's
GroupContext and hands the request to the group logic (``groupcoord.coordinator.groups.routing`` picks
the protocol engine; offsets and admin ask the group through its ``Group`` face). Everything
here is pure: topic metadata arrives as a ``TopicsImage`` value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups import classic, group_config, routing, share
from groupcoord.coordinator.groups import consumer as cg
from groupcoord.coordinator.groups.classic import ClassicGroupConfig
from groupcoord.coordinator.groups.classic.requests import DESCRIBE_GROUP_NOT_FOUND_VERSION
from groupcoord.coordinator.groups.config import ConsumerGroupConfig, ShareGroupConfig
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.groups.group import CLASSIC, CONSUMER, SHARE, Group, GroupSummary
from groupcoord.coordinator.groups.share.timers import ShareSessionTimeout
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeResponse
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsResponseDescribedGroup
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup
from groupcoord.coordinator.messages.share_group_describe import ShareGroupDescribeResponseDescribedGroup
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from groupcoord.coordinator.offsets import transactions as txn
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.offsets.handlers import CommitVerdict, commit_offsets, java_length
from groupcoord.coordinator.offsets.retention import (
    all_offsets_expire,
    delete_group_offsets,
    delete_offsets,
    expire_offsets,
    offsets_of_deleted_topic,
)
from groupcoord.coordinator.runtime.api import Result, ScheduleTimer, TimerOp
from groupcoord.coordinator.share import shard_ops as share_ops
from groupcoord.coordinator.share.partition_types import SharePartitionConfig
from groupcoord.records import CoordinatorRecord
from groupcoord.records.definitions import PendingTxnOffset
from groupcoord.records.offset_commit_decoding import KeptTimestamps

RETENTION_TIMER = "offsets-retention"


@dataclass(frozen=True, slots=True)
class RetentionSweep:
    """Timer event: expire old offsets (offsets.retention.check.interval.ms)."""


# The composed state, named as in Kafka; imported from here by the service and the tests.
__all__ = ["GroupCoordinatorShard", "GroupCoordinatorState", "GroupSummary", "RetentionSweep"]


def simple_group_commit_verdict(
    shard: GroupCoordinatorState, request: OffsetCommitRequest, api_version: int
) -> CommitVerdict:
    """Commit validation for a group that no membership protocol manages (a "simple" group)."""
    if request.generation_id_or_member_epoch < 0:
        # Admin clients and consumers without group management commit with -1.
        return CommitVerdict()
    if not shard.group_known(request.group_id):
        return CommitVerdict(ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION)
    # A simple group has no members, so no member id and generation can match.
    return CommitVerdict(ErrorCode.UNKNOWN_MEMBER_ID)


def _empty_groups_without_offsets(state: GroupCoordinatorState) -> list[str]:
    """The empty classic and consumer groups that hold no committed offset, sorted (the sweep's
    records do not depend on hash order). A look-up or two per group: only these few are sorted."""
    offsets, consumer, share = state.offsets.offsets, state.consumer.groups, state.share.groups
    found = [gid for gid, g in consumer.items() if g.is_empty() and gid not in offsets]
    # An id names one group (``GroupCoordinatorState.group``): a classic group under an id a
    # consumer or share group holds is not the group of that id.
    found += [
        gid
        for gid, g in state.classic.groups.items()
        if g.is_empty() and gid not in offsets and gid not in consumer and gid not in share
    ]
    return sorted(found)


def _empty_image() -> TopicsImage:
    return TopicsImage.empty()


class _OnImage:
    """A ``Result.again`` that stands only while the topic metadata is the ``image`` its answer
    read (the image is replaced when the topics change). Slotted, as the answers it guards."""

    __slots__ = ("again", "image", "metadata")

    def __init__(
        self, again: Callable[[int], list[TimerOp] | None], image: TopicsImage, metadata: Callable[[], TopicsImage]
    ) -> None:
        self.again, self.image, self.metadata = again, image, metadata

    def __call__(self, now_ms: int) -> list[TimerOp] | None:
        return self.again(now_ms) if self.metadata() is self.image else None


def _share_partition_config(cfg: ShareGroupConfig) -> SharePartitionConfig:
    return SharePartitionConfig(
        delivery_count_limit=cfg.delivery_count_limit,
        record_lock_duration_ms=cfg.record_lock_duration_ms,
        max_in_flight_records=cfg.partition_max_record_locks,
        renew_enabled=cfg.renew_acknowledge_enable,
    )


@dataclass(frozen=True)
class GroupCoordinatorShard:
    """Kafka's GroupCoordinatorShard: the runtime's view of one partition's groups (state
    factory, lifecycle hooks, write handlers). Each handler builds the request's GroupContext
    and delegates to the group logic: protocol routing lives in ``groupcoord.coordinator.groups.routing``."""

    offsets_config: OffsetsConfig = field(default_factory=OffsetsConfig)
    classic_config: ClassicGroupConfig = field(default_factory=ClassicGroupConfig)
    consumer_config: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    share_config: ShareGroupConfig = field(default_factory=ShareGroupConfig)
    # The latest topic metadata; read when a handler runs, passed to the logic as a value.
    metadata: Callable[[], TopicsImage] = _empty_image

    def create_state(self) -> GroupCoordinatorState:
        return GroupCoordinatorState()

    def share_partition_config(self, state: GroupCoordinatorState, group_id: str) -> SharePartitionConfig:
        """The limits the group's share-partitions run under now: its ``share.*`` configs over the
        broker defaults. Taken at every use (acquisition, acknowledgement, release, lock expiry),
        as Kafka's SharePartition reads the group's configs when it uses them, so a change applies
        to share-partitions already live."""
        overrides = state.group_configs.configs.get(group_id)
        if not overrides:  # most groups: one object, so a live share-partition's check is ``is``
            return self._broker_share_partition_config
        return _share_partition_config(group_config.effective_share(self.share_config, overrides))

    @cached_property
    def _broker_share_partition_config(self) -> SharePartitionConfig:
        return _share_partition_config(self.share_config)

    def context(
        self,
        now_ms: int,
        request: RequestContext | None = None,
        state: GroupCoordinatorState | None = None,
        group_id: str | None = None,
    ) -> GroupContext:
        """The GroupContext of one handler call: the time, the latest topic metadata, the configs
        (with the group's own dynamic configs when the call is about one group)."""
        consumer, share_config = self.consumer_config, self.share_config
        if state is not None and group_id is not None:
            overrides = state.group_configs.configs.get(group_id)
            if overrides:  # most groups have none: the broker's configs as they are
                consumer = group_config.effective(consumer, overrides)
                share_config = group_config.effective_share(share_config, overrides)
        return GroupContext(
            now_ms,
            self.metadata(),
            consumer,
            self.classic_config,
            self.offsets_config,
            request if request is not None else RequestContext(),
            share_config,
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def _retention_timer(self, now_ms: int) -> ScheduleTimer:
        return ScheduleTimer(
            RETENTION_TIMER, now_ms + self.offsets_config.offsets_retention_check_interval_ms, RetentionSweep()
        )

    def on_loaded(self, state: GroupCoordinatorState, now_ms: int) -> Result[None]:
        result = classic.classic_on_loaded(state.classic, now_ms, self.classic_config)
        timers: list[TimerOp] = [
            *result.timers,
            *cg.on_loaded(
                state.consumer,
                now_ms,
                self.consumer_config,
                lambda gid: group_config.effective(self.consumer_config, state.group_configs.configs.get(gid)),
            ),
        ]
        timers += share.on_loaded_timers(
            {gid: list(g.members) for gid, g in state.share.groups.items()},
            now_ms,
            lambda gid: group_config.effective_share(self.share_config, state.group_configs.configs.get(gid)),
        )
        timers.append(self._retention_timer(now_ms))
        return Result(None, result.records, timers, result.completions)

    def on_timer(self, state: GroupCoordinatorState, event: Any, now_ms: int) -> Result[Any]:
        # A timer's answer goes to no caller, only to the runtime's observer (metrics: a lock
        # expiry answers how many records it gave back).
        if isinstance(event, RetentionSweep):
            return self.expire_offsets(state, now_ms)
        if classic.is_classic_timer(event):
            return classic.classic_on_timer(state.classic, event, now_ms, self.classic_config)
        if isinstance(event, share_ops.ShareLockExpiry):
            config = self.share_partition_config(state, event.key.group)
            return share_ops.expire_locks(state.share_data, event.key, now_ms, config)
        if isinstance(event, ShareSessionTimeout):
            result = routing.on_timer(state, event, self.context(now_ms, None, state, event.group_id))
            if result.records:  # the member was removed: its records go back
                config = self.share_partition_config(state, event.group_id)
                released = share_ops.release_records(state.share_data, event.group_id, event.member_id, config)
                result.records = [*result.records, *released]
            return result
        return routing.on_timer(state, event, self.context(now_ms, None, state, getattr(event, "group_id", None)))

    # --- offsets -----------------------------------------------------------------------------

    def commit_offsets(
        self, state: GroupCoordinatorState, request: OffsetCommitRequest, now_ms: int, context: RequestContext
    ) -> Result[OffsetCommitResponse]:
        group = state.group(request.group_id)
        verdict = (
            group.validate_offset_commit(request, context.api_version)
            if group is not None
            else simple_group_commit_verdict(state, request, context.api_version)
        )
        result = commit_offsets(state.offsets, request, now_ms, self.offsets_config, verdict)
        overtaking = txn.overtaking_records(state.txn, request.group_id, result.records)
        if overtaking:  # a plain commit's records may be a run (``OffsetCommitRun``): a list made anew
            result.records = [*result.records, *overtaking]
        if group is not None and group.type == CLASSIC and verdict.error == ErrorCode.NONE:
            # Kafka refreshes only classic groups' sessions on a commit: a classic member inside a
            # consumer group keeps its session by heartbeats alone.
            result.timers += classic.classic_commit_keepalive(
                state.classic, request.group_id, request.member_id, now_ms
            )
        return result

    def delete_offsets(
        self, state: GroupCoordinatorState, request: OffsetDeleteRequest, now_ms: int
    ) -> Result[OffsetDeleteResponse]:
        group = state.group(request.group_id)
        if group is not None and (error := group.validate_offset_delete()) != ErrorCode.NONE:
            return Result(OffsetDeleteResponse(error_code=error))
        pending = frozenset(state.txn.pending_partitions(request.group_id))
        result = delete_offsets(state.offsets, request, None if group is None else group.retention_view(), pending)
        result.records = [*result.records, *txn.deleting_records(state.txn, result.records)]
        return result

    def expire_offsets(self, state: GroupCoordinatorState, now_ms: int) -> Result[None]:
        """The periodic sweep (Kafka's cleanupGroupMetadata), over every group of the shard: its
        expired offsets become tombstones; a group whose offsets all expired, or that never had
        any, is deleted if it is empty (a classic group in Empty; a consumer group with no
        members at all: its classic members, and static members that left with epoch -2 to come
        back, are members) and no transaction of it is open. Share groups (which hold no
        offsets) are left alone, as Kafka 4.1+ leaves them (ShareGroup.shouldExpire is false).
        Groups with offsets come first, then those without (each in sorted order): only the
        former have offsets to walk, the latter cost a look-up or two each (100,000 of them:
        ~10 ms a sweep)."""
        retention_ms = self.offsets_config.offsets_retention_minutes * 60_000
        records: list[CoordinatorRecord] = []
        timestamps = KeptTimestamps()  # one for the sweep: the timestamps' bytes repeat across groups
        for group_id in sorted(state.offsets.offsets):
            view = state.retention_view(group_id)
            # As Kafka: an offset with a transactional offset staged over it does not expire, and
            # a group with an open transaction is not deleted.
            expiring = [
                r
                for r in expire_offsets(state.offsets, group_id, view, now_ms, retention_ms, timestamps)
                if not state.txn.has_pending(group_id, r.key.topic, r.key.partition)
            ]
            records += expiring
            if (
                expiring
                and view.is_empty
                and not state.txn.group_has_pending(group_id)
                and all_offsets_expire(state.offsets, group_id, expiring)
            ):
                records += self._delete_group_records(state, group_id)
        # Groups without offsets: Kafka's cleanupExpiredOffsets counts them as all expired.
        for group_id in _empty_groups_without_offsets(state):
            if not state.txn.group_has_pending(group_id):
                records += self._delete_group_records(state, group_id)
        # Producers idle past transactional.id.expiration.ms with nothing staged: their sequences go.
        records += txn.expired_producers(state.txn, now_ms, self.offsets_config.transactional_id_expiration_ms)
        return Result(None, records, [self._retention_timer(now_ms)])

    def topics_deleted(self, state: GroupCoordinatorState, topics: Iterable[tuple[str, str]]) -> Result[None]:
        deleted = list(topics)
        records: list[CoordinatorRecord] = []
        for name, topic_id in deleted:
            records += offsets_of_deleted_topic(
                state.offsets, name, topic_id, state.txn.pending_of_topic(name, topic_id)
            )
        records += txn.deleting_records(state.txn, records)
        # Share groups' state of the deleted incarnations goes too (Kafka 4.2 deletes it): a topic
        # re-created under the same name starts its share-partitions afresh, from
        # share.auto.offset.reset, not from the old incarnation's offsets.
        share = share_ops.deleted_topics_state(state.share_data, deleted)
        return Result(None, [*records, *share.records], share.timers)

    # --- transactional offsets (TxnOffsetCommit) ---------------------------------------------

    def validate_txn_commit(
        self, state: GroupCoordinatorState, request: TxnOffsetCommitRequest, topic_ids: dict[str, str | None]
    ) -> tuple[ErrorCode, txn.Sequence]:
        """Kafka's validateTransactionalOffsetCommit, plus the bounds of OffsetCommit and a zombie
        producer epoch this shard has seen superseded: (error of the whole request, the sequence
        the transaction topic record must carry). Run before anything is sent to the cluster."""
        sequence = txn.next_sequence(state.txn, request.producer_id, request.producer_epoch)
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID, sequence
        fenced = txn.stale_epoch(state.txn, request.producer_id, request.producer_epoch)
        if fenced != ErrorCode.NONE:
            return fenced, sequence
        if all(self._metadata_too_large(p) for t in request.topics for p in t.partitions):
            # Nothing to stage (Kafka refuses such a partition alone): nothing is written either.
            return ErrorCode.OFFSET_METADATA_TOO_LARGE, sequence
        return _txn_group_error(state, request, topic_ids), sequence

    def _metadata_too_large(self, p: TxnOffsetCommitRequestPartition) -> bool:
        limit = self.offsets_config.offset_metadata_max_bytes
        return p.committed_metadata is not None and java_length(p.committed_metadata) > limit

    def stage_txn_offsets(
        self,
        state: GroupCoordinatorState,
        request: TxnOffsetCommitRequest,
        txn_offset: int,
        written: txn.Sequence,
        topic_ids: dict[str, str | None],
        now_ms: int,
    ) -> Result[TxnOffsetCommitResponse]:
        """Stage the offsets once their record of the client's transaction is in the transaction
        topic at ``txn_offset``: checked again (the group may have moved on meanwhile; the record
        then stays undecided in the transaction topic and is never applied). A partition whose
        metadata is too large is refused alone, the others staged (Kafka's commitTransactionalOffset)."""
        error, _ = self.validate_txn_commit(state, request, topic_ids)
        if error != ErrorCode.NONE:
            return Result(txn_commit_response(request, error))
        response = txn_commit_response(request, ErrorCode.NONE)
        offsets = []
        for t, answered in zip(request.topics, response.topics, strict=True):
            for p, partition in zip(t.partitions, answered.partitions, strict=True):
                if self._metadata_too_large(p):
                    partition.error_code = int(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                    continue
                offsets.append(
                    PendingTxnOffset(
                        t.name,
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.committed_metadata or "",
                        topic_ids.get(t.name),
                    )
                )
        records = txn.staging_records(
            request.group_id, request.producer_id, txn_offset, request.transactional_id, written, offsets, now_ms
        )
        return Result(response, records)

    def resolve_txn(
        self, state: GroupCoordinatorState, producer_id: int, marker_offset: int, committed: bool, now_ms: int
    ) -> Result[None]:
        """A marker of ``producer_id`` read in the transaction topic decides its staged offsets."""
        return Result(None, txn.resolve(state.txn, producer_id, marker_offset, committed, now_ms))

    # --- group administration ----------------------------------------------------------------

    def _delete_group_records(self, state: GroupCoordinatorState, group_id: str) -> list[CoordinatorRecord]:
        group = state.group(group_id)
        records = [] if group is None else group.tombstones()
        # A share group's share-partitions go with it (Kafka's DeleteShareGroupState): the same id
        # used again starts afresh at share.auto.offset.reset.
        return records + share_ops.delete_group_state(state.share_data, group_id)

    def delete_groups(
        self, state: GroupCoordinatorState, group_ids: list[str], now_ms: int
    ) -> Result[list[tuple[str, int]]]:
        """DeleteGroups for the groups of this shard: only empty groups go, with their offsets."""
        answers: list[tuple[str, int]] = []
        records: list[CoordinatorRecord] = []
        for group_id in group_ids:
            group = state.group(group_id)
            if group is not None:
                error = group.validate_delete()
            elif state.has_simple_group(group_id):
                error = ErrorCode.NONE
            else:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            if error == ErrorCode.NONE:
                tombstones = delete_group_offsets(state.offsets, group_id, state.txn.pending_partitions(group_id))
                records += tombstones
                records += txn.deleting_records(state.txn, tombstones)
                records += self._delete_group_records(state, group_id)
                if group_id in state.group_configs.configs:
                    # A deleted group's dynamic configs go with it.
                    records.append(group_config.config_record(group_id, {}))
            answers.append((group_id, int(error)))
        return Result(answers, records)

    # --- classic protocol --------------------------------------------------------------------

    def join_group(
        self,
        state: GroupCoordinatorState,
        request: JoinGroupRequest,
        token: Hashable,
        now_ms: int,
        context: RequestContext,
    ) -> Result[JoinGroupResponse]:
        return routing.classic_group_join(state, request, token, self.context(now_ms, context, state, request.group_id))

    def sync_group(
        self,
        state: GroupCoordinatorState,
        request: SyncGroupRequest,
        token: Hashable,
        now_ms: int,
        context: RequestContext,
    ) -> Result[SyncGroupResponse]:
        return routing.classic_group_sync(state, request, token, self.context(now_ms, context, state, request.group_id))

    def heartbeat(
        self, state: GroupCoordinatorState, request: HeartbeatRequest, now_ms: int, context: RequestContext
    ) -> Result[HeartbeatResponse]:
        return routing.classic_group_heartbeat(state, request, self.context(now_ms, context, state, request.group_id))

    def leave_group(
        self, state: GroupCoordinatorState, request: LeaveGroupRequest, now_ms: int, context: RequestContext
    ) -> Result[LeaveGroupResponse]:
        return routing.classic_group_leave(state, request, self.context(now_ms, context, state, request.group_id))

    # --- consumer protocol -------------------------------------------------------------------

    def consumer_group_heartbeat(
        self,
        state: GroupCoordinatorState,
        request: ConsumerGroupHeartbeatRequest,
        now_ms: int,
        context: RequestContext,
    ) -> Result[ConsumerGroupHeartbeatResponse]:
        ctx = self.context(now_ms, context, state, request.group_id)
        result = routing.consumer_group_heartbeat(state, request, ctx)
        if result.again is not None:
            # The answer read the topic metadata of the moment: a new image may bump the epoch.
            result.again = _OnImage(result.again, ctx.image, self.metadata)
        return result

    # --- share groups ------------------------------------------------------------------------

    def share_group_heartbeat(
        self,
        state: GroupCoordinatorState,
        request: ShareGroupHeartbeatRequest,
        now_ms: int,
        context: RequestContext,
    ) -> Result[ShareGroupHeartbeatResponse]:
        # A member leaving the group keeps the records it acquired: Kafka 4.2 gives them back when
        # its share session ends (a ShareFetch or ShareAcknowledge of the final epoch, or its
        # connection closing: the share session cache calls ShareGroupListener.onMemberLeave),
        # not on the leave heartbeat. librdkafka sends a closing consumer's last acknowledgements
        # after its leave heartbeat; released here, they would be refused and redelivered.
        return routing.share_group_heartbeat(state, request, self.context(now_ms, context, state, request.group_id))

    # --- group configs -----------------------------------------------------------------------

    def alter_group_config(
        self,
        state: GroupCoordinatorState,
        group_id: str,
        changes: list[group_config.ConfigChange] | None,
        replacement: list[tuple[str, str | None]] | None,
        validate_only: bool,
    ) -> Result[tuple[int, str | None]]:
        """IncrementalAlterConfigs (``changes``) or AlterConfigs (``replacement``) of one group:
        (error code, message); the new overrides are one record unless only validated."""
        current = state.group_configs.of(group_id)
        try:
            if replacement is not None:
                updated = group_config.replace_all(replacement, self.consumer_config, self.share_config)
            else:
                updated = group_config.incremental_alter(
                    current, changes or [], self.consumer_config, self.share_config
                )
        except GroupError as exc:
            return Result((int(exc.error), exc.message))
        if validate_only or updated == current:
            return Result((int(ErrorCode.NONE), None))
        return Result((int(ErrorCode.NONE), None), [group_config.config_record(group_id, updated)])


def _txn_group_error(
    state: GroupCoordinatorState, request: TxnOffsetCommitRequest, topic_ids: dict[str, str | None]
) -> ErrorCode:
    """The group's own check of a transactional commit (Kafka's group.validateOffsetCommit with
    isTransactional): an unknown group accepts generation -1 only (a simple group); a consumer
    group's stale member epoch is ILLEGAL_GENERATION, as Kafka answers it through v5."""
    group = state.group(request.group_id)
    if group is None:
        return ErrorCode.NONE if request.generation_id < 0 else ErrorCode.ILLEGAL_GENERATION
    if group.type == CLASSIC:
        error = state.classic.validate_offset_commit(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id, True
        )
        return ErrorCode.NONE if error is None else error
    consumer_group = state.consumer.group(request.group_id)
    if consumer_group is None:
        return ErrorCode.NONE
    if request.generation_id == -1 and request.member_id == "" and request.group_instance_id is None:
        # A TxnOffsetCommit need not name a member (the producer's group id alone, before
        # KIP-447: kafka-python, the Java producer's String overload): the member fields are
        # checked only when one is given, as Kafka's ConsumerGroup.validateOffsetCommit does.
        return ErrorCode.NONE
    partitions = [(topic_ids.get(t.name) or "", p.partition_index) for t in request.topics for p in t.partitions]
    error = consumer_group.offset_commit_error(request.member_id, request.generation_id, partitions)
    return ErrorCode.ILLEGAL_GENERATION if error == ErrorCode.STALE_MEMBER_EPOCH else error


def txn_commit_response(request: TxnOffsetCommitRequest, code: ErrorCode | int) -> TxnOffsetCommitResponse:
    """The same answer for every partition of ``request``."""
    return TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=int(code))
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


# --- reads (on the committed state, or the live one for classic in-progress states) ----------


def offset_fetch_error(state: GroupCoordinatorState, request: OffsetFetchRequestGroup) -> ErrorCode:
    group = state.group(request.group_id)
    return ErrorCode.NONE if group is None else group.validate_offset_fetch(request.member_id, request.member_epoch)


def group_listing(
    live: GroupCoordinatorState, states_filter: Iterable[str], types_filter: Iterable[str]
) -> Iterator[GroupSummary | None]:
    """The groups ListGroups lists, unsorted and lazily, over the group tables as they are now (a
    copy of their entries is taken before the first one is listed): a caller may take it in slices
    and let other work run between them. A group created meanwhile is then left out and one
    deleted meanwhile still listed, as in any listing of many shards. A group the filters leave
    out is a None, so that a caller counts every group looked at (``take_in_slices``): a filter
    matching few of 100,000 groups would otherwise look at all of them in one slice."""
    states = {s.lower().strip() for s in states_filter}  # as Kafka, trimmed too
    types = {t.lower() for t in types_filter}
    groups: list[Group] = [
        *live.consumer.groups.values(),
        *live.share.groups.values(),
        *live.classic.groups.values(),
    ]
    # Groups that only ever committed offsets (or staged them in a transaction) are listed as
    # empty classic groups, like Kafka.
    simple = (
        list(dict.fromkeys([*live.offsets.offsets, *live.txn.open_by_partition]))
        if (not types or CLASSIC in types) and (not states or "empty" in states)
        else []
    )

    def listing() -> Iterator[GroupSummary | None]:
        for g in groups:
            if types and g.type not in types:
                yield None
                continue
            listed = g.listed()
            yield listed if not states or listed.group_state.lower() in states else None
        for gid in simple:
            yield GroupSummary(gid, "", "Empty", CLASSIC) if live.group_type(gid) is None else None

    return listing()


def describe_classic_groups(
    live: GroupCoordinatorState, group_ids: list[str], api_version: int
) -> list[DescribeGroupsResponseDescribedGroup]:
    out = []
    for group_id in group_ids:
        if live.group_type(group_id) in (CONSUMER, SHARE):
            # As for an unknown group: Dead with no error before v6 (Kafka's describeGroups).
            error_version = api_version >= DESCRIBE_GROUP_NOT_FOUND_VERSION
            out.append(
                DescribeGroupsResponseDescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND if error_version else ErrorCode.NONE,
                    error_message=f"Group {group_id} is not a classic group." if error_version else None,
                    group_state="Dead",
                )
            )
        elif live.group_type(group_id) is None and live.has_simple_group(group_id):
            out.append(DescribeGroupsResponseDescribedGroup(group_id=group_id, group_state="Empty"))
        else:
            out.extend(classic.describe_groups(live.classic, [group_id], api_version))
    return out


def describe_consumer_groups(
    state: GroupCoordinatorState, group_ids: list[str], image: TopicsImage, config: ConsumerGroupConfig
) -> ConsumerGroupDescribeResponse:
    """ConsumerGroupDescribe: a group id that names a classic group (a simple, offsets-only group
    included, which Kafka holds as a classic group) is GROUP_ID_NOT_FOUND with Kafka's message
    for the wrong type, not the one for a missing group."""
    response = cg.consumer_group_describe(state.consumer, group_ids, image, config)
    for described in response.groups:
        if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND and state.group_known(described.group_id):
            described.error_message = f"Group {described.group_id} is not a consumer group."
    return response


def describe_share_group(
    state: GroupCoordinatorState, group_id: str, image: TopicsImage
) -> ShareGroupDescribeResponseDescribedGroup:
    """ShareGroupDescribe of one group: an id naming a group of another type (an offsets-only
    group included) is GROUP_ID_NOT_FOUND with Kafka's message for the wrong type."""
    return share.describe_share_group(group_id, state.share.group(group_id), state.group_known(group_id), image)
