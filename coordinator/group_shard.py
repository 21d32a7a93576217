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
from coordinator.groups.group import CLASSIC, CONSUMER, CommitVerdict, Group, GroupSummary
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
from coordinator.runtime.api import Result, ScheduleTimer, TimerOp
from records import CoordinatorRecord, RecordType

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

    def group(self, group_id: str) -> Group | None:
        """The group a membership protocol manages under this id (None: unknown, or offsets only)."""
        consumer = self.consumer.group(group_id)
        if consumer is not None:
            return consumer
        return self.classic.group(group_id)

    def group_type(self, group_id: str) -> str | None:
        group = self.group(group_id)
        return None if group is None else group.type

    def group_known(self, group_id: str) -> bool:
        return self.group(group_id) is not None or self.offsets.has_group(group_id)

    def retention_view(self, group_id: str) -> GroupRetentionView:
        group = self.group(group_id)
        return GroupRetentionView() if group is None else group.retention_view()


def simple_group_commit_verdict(shard: GroupCoordinatorShard, request: OffsetCommitRequest) -> CommitVerdict:
    """Commit validation for a group that no membership protocol manages (a "simple" group)."""
    if request.generation_id_or_member_epoch < 0:
        # Admin clients and consumers without group management commit with -1.
        return CommitVerdict()
    if not shard.group_known(request.group_id):
        return CommitVerdict(ErrorCode.GROUP_ID_NOT_FOUND if request.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION)
    # A simple group has no members, so no member id and generation can match.
    return CommitVerdict(ErrorCode.UNKNOWN_MEMBER_ID)


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
        group = state.group(request.group_id)
        verdict = (
            group.validate_offset_commit(request, self.metadata())
            if group is not None
            else simple_group_commit_verdict(state, request)
        )
        error, partition_errors = verdict.error, dict(verdict.partition_errors)
        return commit_offsets(state.offsets, request, now_ms, self.offsets_config, error, partition_errors)

    def delete_offsets(
        self, state: GroupCoordinatorShard, request: OffsetDeleteRequest, now_ms: int
    ) -> Result[OffsetDeleteResponse]:
        group = state.group(request.group_id)
        if group is None:
            return delete_offsets(state.offsets, request, None)
        error = group.validate_offset_delete()
        if error != ErrorCode.NONE:
            return Result(OffsetDeleteResponse(error))
        return delete_offsets(state.offsets, request, group.retention_view())

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
        group = state.group(group_id)
        return [] if group is None else group.tombstones()

    def delete_groups(
        self, state: GroupCoordinatorShard, group_ids: list[str], now_ms: int
    ) -> Result[list[tuple[str, int]]]:
        """DeleteGroups for the groups of this shard: only empty groups go, with their offsets."""
        answers: list[tuple[str, int]] = []
        records: list[CoordinatorRecord] = []
        for group_id in group_ids:
            group = state.group(group_id)
            if group is not None:
                error = group.validate_delete()
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
        group = state.group(request.group_id)
        if group is not None and group.type == CONSUMER:
            if not group.is_empty():
                if self._migration_enabled:
                    # A classic member joins (or rejoins) a consumer group: online migration.
                    return migration.classic_join_to_consumer_group(
                        state.consumer, request, now_ms, self.metadata(), self.consumer_config, self.classic_config
                    )
                return Result(classic.JoinGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            # An empty consumer group becomes a classic group, as Kafka converts it on join.
            prefix = group.tombstones()
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
        group = state.group(request.group_id)
        kind = None if group is None else group.type
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
        if group is not None and group.type == CLASSIC:
            if not group.is_empty():
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
            prefix = group.tombstones()
        result = cg.consumer_group_heartbeat(
            state.consumer, request, now_ms, self.metadata(), self.consumer_config, context
        )
        result.records[:0] = prefix
        return result


# --- reads (on the committed state, or the live one for classic in-progress states) ----------


def offset_fetch_error(state: GroupCoordinatorShard, request: OffsetFetchRequestGroup) -> ErrorCode:
    group = state.group(request.group_id)
    return ErrorCode.NONE if group is None else group.validate_offset_fetch(request.member_id, request.member_epoch)


def list_groups(
    live: GroupCoordinatorShard, states_filter: Iterable[str], types_filter: Iterable[str]
) -> list[GroupSummary]:
    states = {s.lower() for s in states_filter}
    types = {t.lower() for t in types_filter}
    groups: list[Group] = [*live.consumer.groups.values(), *live.classic.groups.values()]
    out = [
        g.listed()
        for g in groups
        if (not types or g.type in types) and (not states or g.listed().group_state.lower() in states)
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
