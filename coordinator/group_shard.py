"""GroupCoordinatorShard: the whole state of one log partition and the handlers over it.

It composes the pure managers (offsets, classic groups, consumer groups) behind the one
``replay`` used both when loading and when writing, and decides which protocol owns a group id.
Everything here is pure: topic metadata arrives as a ``TopicsImage`` value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.groups import classic, migration
from coordinator.groups import consumer as cg
from coordinator.groups.classic import ClassicGroupConfig, ClassicGroupsState
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer import ConsumerGroupsState
from coordinator.groups.topics import TopicsImage
from coordinator.offsets.config import OffsetsConfig
from coordinator.offsets.handlers import commit_offsets
from coordinator.offsets.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequestGroup,
)
from coordinator.offsets.retention import (
    GroupRetentionView,
    all_offsets_expire,
    delete_group_offsets,
    delete_offsets,
    expire_offsets,
    offsets_of_deleted_topic,
)
from coordinator.offsets.state import OffsetsState
from coordinator.runtime.api import Park, Result, ScheduleTimer, TimerOp
from records import CoordinatorRecord, RecordType

CLASSIC = "classic"
CONSUMER = "consumer"
RETENTION_TIMER = "offsets-retention"


@dataclass(frozen=True, slots=True)
class RetentionSweep:
    """Timer event: expire old offsets (offsets.retention.check.interval.ms)."""


class GroupCoordinatorShard:
    def __init__(self) -> None:
        self.offsets = OffsetsState()
        self.classic = ClassicGroupsState()
        self.consumer = ConsumerGroupsState()

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type == RecordType.OFFSET_COMMIT:
            self.offsets.replay(record)
        elif record.type == RecordType.GROUP_METADATA:
            self.classic.replay(record)
        else:
            self.consumer.replay(record)

    def snapshot(self) -> Any:
        return {
            "offsets": self.offsets.snapshot(),
            "classic": self.classic.snapshot(),
            "consumer": self.consumer.snapshot(),
        }

    def group_type(self, group_id: str) -> str | None:
        """Which membership protocol manages the group (None: unknown, or offsets only)."""
        if self.consumer.group(group_id) is not None:
            return CONSUMER
        if self.classic.has_group(group_id):
            return CLASSIC
        return None

    def group_known(self, group_id: str) -> bool:
        return self.group_type(group_id) is not None or self.offsets.has_group(group_id)

    def retention_view(self, group_id: str) -> GroupRetentionView:
        if self.consumer.group(group_id) is not None:
            return GroupRetentionView(
                subscribed_topics=cg.subscribed_topic_names(self.consumer, group_id),
                is_empty=cg.is_group_empty(self.consumer, group_id),
                managed=True,
            )
        if self.classic.has_group(group_id):
            empty = self.classic.is_empty(group_id)
            group = self.classic.group(group_id)
            assert group is not None
            empty_since = group.current_state_timestamp if empty and group.protocol_type else None
            return GroupRetentionView(
                subscribed_topics=self.classic.subscribed_topics(group_id) or frozenset(),
                is_empty=empty,
                empty_since_ms=empty_since,
                managed=True,
                expires=group.offset_expiration_base_ms(0) is not None,
            )
        return GroupRetentionView()


def simple_group_commit_error(shard: GroupCoordinatorShard, request: OffsetCommitRequest) -> ErrorCode:
    """Commit validation for a group that no membership protocol manages (a "simple" group)."""
    if request.generation_id_or_member_epoch < 0:
        # Admin clients and consumers without group management commit with -1.
        return ErrorCode.NONE
    if not shard.group_known(request.group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND if request.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
    # A simple group has no members, so no member id and generation can match.
    return ErrorCode.UNKNOWN_MEMBER_ID


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


def _empty_image() -> TopicsImage:
    return TopicsImage.empty()


@dataclass(frozen=True)
class GroupCoordinatorHandlers:
    """The runtime's view of the shard: state factory, lifecycle hooks, and write handlers."""

    offsets_config: OffsetsConfig = field(default_factory=OffsetsConfig)
    classic_config: ClassicGroupConfig = field(default_factory=ClassicGroupConfig)
    consumer_config: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    # The latest topic metadata; read when a handler runs, passed to the logic as a value.
    metadata: Callable[[], TopicsImage] = _empty_image

    def create_state(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard()

    # --- lifecycle ---------------------------------------------------------------------------

    def _retention_timer(self, now_ms: int) -> ScheduleTimer:
        return ScheduleTimer(
            RETENTION_TIMER, now_ms + self.offsets_config.offsets_retention_check_interval_ms, RetentionSweep()
        )

    def on_loaded(self, state: GroupCoordinatorShard, now_ms: int) -> Result[None]:
        result = classic.classic_on_loaded(state.classic, now_ms, self.classic_config)
        timers: list[TimerOp] = [*result.timers, *cg.on_loaded(state.consumer, now_ms, self.consumer_config)]
        timers.append(self._retention_timer(now_ms))
        return Result(None, result.records, timers, result.completions)

    def on_timer(self, state: GroupCoordinatorShard, event: Any, now_ms: int) -> Result[None]:
        if isinstance(event, RetentionSweep):
            return self.expire_offsets(state, now_ms)
        if classic.is_classic_timer(event):
            return classic.classic_on_timer(state.classic, event, now_ms, self.classic_config)
        if self._migration_enabled:
            # Classic members' join/sync timeouts, and fencing that leaves only classic members.
            migrated = migration.on_timer(
                state.classic, state.consumer, event, now_ms, self.metadata(), self.consumer_config, self.classic_config
            )
            if migrated is not None:
                return migrated
        return cg.on_timer(state.consumer, event, now_ms, self.metadata(), self.consumer_config)

    # --- offsets -----------------------------------------------------------------------------

    def commit_offsets(
        self, state: GroupCoordinatorShard, request: OffsetCommitRequest, now_ms: int
    ) -> Result[OffsetCommitResponse]:
        partition_errors: dict[tuple[str, int], ErrorCode] = {}
        kind = state.group_type(request.group_id)
        if kind == CONSUMER:
            image = self.metadata()
            ids = {t.name: t.topic_id or image.topic_id(t.name) or "" for t in request.topics}
            verdict = cg.validate_offset_commit(
                state.consumer,
                request.group_id,
                request.member_id,
                request.generation_id_or_member_epoch,
                [(ids[t.name], p.partition_index) for t in request.topics for p in t.partitions],
            )
            error = ErrorCode(int(verdict.error))
            by_id = {v: k for k, v in ids.items()}
            partition_errors = {(by_id[tid], p): ErrorCode(int(e)) for (tid, p), e in verdict.partition_errors.items()}
        elif kind == CLASSIC:
            error = (
                state.classic.validate_offset_commit(
                    request.group_id,
                    request.member_id,
                    request.group_instance_id,
                    request.generation_id_or_member_epoch,
                )
                or ErrorCode.NONE
            )
        else:
            error = simple_group_commit_error(state, request)
        return commit_offsets(state.offsets, request, now_ms, self.offsets_config, error, partition_errors)

    def delete_offsets(
        self, state: GroupCoordinatorShard, request: OffsetDeleteRequest, now_ms: int
    ) -> Result[OffsetDeleteResponse]:
        kind = state.group_type(request.group_id)
        if kind == CLASSIC:
            error = state.classic.validate_offset_delete(request.group_id)
            if error != ErrorCode.NONE:
                return Result(OffsetDeleteResponse(error))
        view = state.retention_view(request.group_id) if kind is not None else None
        return delete_offsets(state.offsets, request, view)

    def expire_offsets(self, state: GroupCoordinatorShard, now_ms: int) -> Result[None]:
        """The periodic sweep: expired offsets become tombstones; a group left empty with no
        offsets is deleted (Kafka's cleanupGroupMetadata)."""
        retention_ms = self.offsets_config.offsets_retention_minutes * 60_000
        records: list[CoordinatorRecord] = []
        for group_id in sorted(state.offsets.offsets):
            view = state.retention_view(group_id)
            expiring = expire_offsets(state.offsets, group_id, view, now_ms, retention_ms)
            records += expiring
            if expiring and view.is_empty and all_offsets_expire(state.offsets, group_id, expiring):
                records += self._delete_group_records(state, group_id)
        return Result(None, records, [self._retention_timer(now_ms)])

    def topics_deleted(self, state: GroupCoordinatorShard, topics: Iterable[tuple[str, str]]) -> Result[None]:
        records: list[CoordinatorRecord] = []
        for name, topic_id in topics:
            records += offsets_of_deleted_topic(state.offsets, name, topic_id)
        return Result(None, records)

    # --- group administration ----------------------------------------------------------------

    def _delete_group_records(self, state: GroupCoordinatorShard, group_id: str) -> list[CoordinatorRecord]:
        kind = state.group_type(group_id)
        if kind == CONSUMER:
            return cg.delete_consumer_group(state.consumer, group_id).records
        if kind == CLASSIC:
            return state.classic.delete_group_records(group_id)
        return []

    def delete_groups(
        self, state: GroupCoordinatorShard, group_ids: list[str], now_ms: int
    ) -> Result[list[tuple[str, int]]]:
        """DeleteGroups for the groups of this shard: only empty groups go, with their offsets."""
        answers: list[tuple[str, int]] = []
        records: list[CoordinatorRecord] = []
        for group_id in group_ids:
            kind = state.group_type(group_id)
            if kind == CONSUMER:
                verdict = cg.delete_consumer_group(state.consumer, group_id).response
                assert not isinstance(verdict, Park)
                error = ErrorCode(int(verdict))
            elif kind == CLASSIC:
                error = state.classic.validate_delete_group(group_id)
            elif state.offsets.has_group(group_id):
                error = ErrorCode.NONE
            else:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            if error == ErrorCode.NONE:
                records += delete_group_offsets(state.offsets, group_id)
                records += self._delete_group_records(state, group_id)
            answers.append((group_id, int(error)))
        return Result(answers, records)

    # --- classic protocol --------------------------------------------------------------------

    @property
    def _migration_enabled(self) -> bool:
        """group.consumer.migration.policy=disabled keeps the two protocols apart entirely."""
        return self.consumer_config.migration_policy != "disabled"

    def _classic_member_in_consumer_group(self, state: GroupCoordinatorShard, group_id: str) -> bool:
        """A classic request for a consumer group goes to the consumer group's engine."""
        return self._migration_enabled and state.group_type(group_id) == CONSUMER

    def join_group(
        self, state: GroupCoordinatorShard, request: classic.JoinGroupRequest, token: Hashable, now_ms: int
    ) -> Result[classic.JoinGroupResponse]:
        prefix: list[CoordinatorRecord] = []
        if state.group_type(request.group_id) == CONSUMER:
            if not cg.is_group_empty(state.consumer, request.group_id):
                if self._migration_enabled:
                    # A classic member joins (or rejoins) a consumer group: online migration.
                    return migration.classic_join_to_consumer_group(
                        state.consumer, request, now_ms, self.metadata(), self.consumer_config, self.classic_config
                    )
                return Result(classic.JoinGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            # An empty consumer group becomes a classic group, as Kafka converts it on join.
            prefix = cg.delete_consumer_group(state.consumer, request.group_id).records
        result = classic.classic_join(state.classic, request, token, now_ms, self.classic_config)
        result.records[:0] = prefix
        return result

    def sync_group(
        self, state: GroupCoordinatorShard, request: classic.SyncGroupRequest, token: Hashable, now_ms: int
    ) -> Result[classic.SyncGroupResponse]:
        if self._classic_member_in_consumer_group(state, request.group_id):
            return migration.classic_sync_to_consumer_group(
                state.consumer, request, now_ms, self.metadata(), self.consumer_config
            )
        return classic.classic_sync(state.classic, request, token, now_ms, self.classic_config)

    def heartbeat(
        self, state: GroupCoordinatorShard, request: classic.HeartbeatRequest, now_ms: int
    ) -> Result[classic.HeartbeatResponse]:
        if self._classic_member_in_consumer_group(state, request.group_id):
            return migration.classic_heartbeat_to_consumer_group(state.consumer, request, now_ms, self.consumer_config)
        return classic.classic_heartbeat(state.classic, request, now_ms, self.classic_config)

    def leave_group(
        self, state: GroupCoordinatorShard, request: classic.LeaveGroupRequest, now_ms: int
    ) -> Result[classic.LeaveGroupResponse]:
        if request.group_id and self._classic_member_in_consumer_group(state, request.group_id):
            return migration.classic_leave_to_consumer_group(
                state.classic,
                state.consumer,
                request,
                now_ms,
                self.metadata(),
                self.consumer_config,
                self.classic_config,
            )
        return classic.classic_leave(state.classic, request, now_ms, self.classic_config)

    # --- consumer protocol -------------------------------------------------------------------

    def consumer_group_heartbeat(
        self,
        state: GroupCoordinatorShard,
        request: cg.ConsumerGroupHeartbeatRequest,
        now_ms: int,
        context: cg.RequestContext,
    ) -> Result[cg.ConsumerGroupHeartbeatResponse]:
        prefix: list[CoordinatorRecord] = []
        kind = state.group_type(request.group_id)
        if kind == CONSUMER and self._migration_enabled:
            # A leave may remove the last consumer-protocol member: then the group is downgraded.
            return migration.consumer_leave(
                state.classic,
                state.consumer,
                request,
                now_ms,
                self.metadata(),
                self.consumer_config,
                self.classic_config,
                context,
            )
        if kind == CLASSIC:
            if not state.classic.is_empty(request.group_id):
                if self._migration_enabled:
                    # Online upgrade: the classic group becomes a consumer group (one batch).
                    return migration.upgrade_and_join(
                        state.classic, request, now_ms, self.metadata(), self.consumer_config, context
                    )
                return Result(
                    cg.ConsumerGroupHeartbeatResponse(
                        error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {request.group_id} is a classic group with members; "
                        "online migration to the consumer protocol is not supported yet.",
                    )
                )
            # An empty classic group is replaced by a consumer group (Kafka does the same).
            prefix = state.classic.delete_group_records(request.group_id)
        result = cg.consumer_group_heartbeat(
            state.consumer, request, now_ms, self.metadata(), self.consumer_config, context
        )
        result.records[:0] = prefix
        return result


# --- reads (on the committed state, or the live one for classic in-progress states) ----------


def offset_fetch_error(state: GroupCoordinatorShard, request: OffsetFetchRequestGroup) -> ErrorCode:
    kind = state.group_type(request.group_id)
    if kind == CONSUMER:
        return ErrorCode(
            int(cg.validate_offset_fetch(state.consumer, request.group_id, request.member_id, request.member_epoch))
        )
    if kind == CLASSIC:
        return state.classic.validate_offset_fetch(request.group_id) or ErrorCode.NONE
    return ErrorCode.NONE


def list_groups(
    live: GroupCoordinatorShard, states_filter: Iterable[str], types_filter: Iterable[str]
) -> list[GroupSummary]:
    states = {s.lower() for s in states_filter}
    types = {t.lower() for t in types_filter}
    out = [
        GroupSummary(g.group_id, g.protocol_type, g.group_state, g.group_type)
        for g in classic.list_groups(live.classic, tuple(states), tuple(types))
    ]
    if not types or CONSUMER in types:
        out += [
            GroupSummary(gid, CONSUMER, s, CONSUMER) for gid, s in cg.list_group_states(live.consumer, states or None)
        ]
    if (not types or CLASSIC in types) and (not states or "empty" in states):
        # Groups that only ever committed offsets are listed as empty classic groups, like Kafka.
        out += [GroupSummary(gid, "", "Empty", CLASSIC) for gid in live.offsets.offsets if live.group_type(gid) is None]
    return sorted(out, key=lambda g: g.group_id)


def describe_classic_groups(
    live: GroupCoordinatorShard, group_ids: list[str], api_version: int
) -> list[classic.DescribedGroup]:
    out = []
    for group_id in group_ids:
        if live.group_type(group_id) == CONSUMER:
            out.append(
                classic.DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} is a consumer group: use ConsumerGroupDescribe.",
                    group_state="Dead",
                )
            )
        elif live.group_type(group_id) is None and live.offsets.has_group(group_id):
            out.append(classic.DescribedGroup(group_id=group_id, group_state="Empty"))
        else:
            out.extend(classic.describe_groups(live.classic, [group_id], api_version))
    return out
