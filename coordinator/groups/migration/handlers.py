"""The migration steps the shard composes: upgrade on a consumer-protocol join, downgrade when
the last consumer-protocol member leaves or is fenced, and the timers of classic members inside
consumer groups. Each returns one Result whose records the runtime appends as one atomic batch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coordinator.errors import ErrorCode, GroupError
from coordinator.groups import consumer as cg
from coordinator.groups.classic import ClassicGroupConfig, ClassicGroupsState, group_metadata_tombstone
from coordinator.groups.classic.messages import LeaveGroupRequest, LeaveGroupResponse
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.member import MemberState
from coordinator.groups.consumer.messages import LEAVE_GROUP_MEMBER_EPOCH
from coordinator.groups.consumer.state import ConsumerGroupsState
from coordinator.groups.consumer.timers import RebalanceTimeout, SessionTimeout
from coordinator.groups.migration.classic_members import fence_members, leave_response, leaving_members
from coordinator.groups.migration.convert import (
    classic_teardown_timers,
    consumer_members_of,
    converted_session_timers,
    downgrade,
    downgrade_allowed,
    scratch_state,
    upgrade_records,
    validate_online_upgrade,
)
from coordinator.groups.migration.timers import ClassicMemberJoinTimeout, ClassicMemberSyncTimeout
from coordinator.groups.topics import TopicsImage
from coordinator.runtime.api import Result, TimerOp
from records import CoordinatorRecord


def _heartbeat_error(error: GroupError) -> Result[cg.ConsumerGroupHeartbeatResponse]:
    return Result(cg.ConsumerGroupHeartbeatResponse(error_code=int(error.error), error_message=error.message))


def upgrade_and_join(
    classic_state: ClassicGroupsState,
    request: cg.ConsumerGroupHeartbeatRequest,
    now_ms: int,
    image: TopicsImage,
    config: ConsumerGroupConfig,
    context: cg.RequestContext,
) -> Result[cg.ConsumerGroupHeartbeatResponse]:
    """A consumer-protocol member joins a non-empty classic group: convert it, then process the
    heartbeat against the converted group, all in one Result (nothing is written on a refusal)."""
    group = classic_state.group(request.group_id)
    assert group is not None
    gid = group.group_id
    if request.member_epoch != 0:
        return _heartbeat_error(
            GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is a classic group; join with member epoch 0.")
        )
    refusal = validate_online_upgrade(group, config)
    if refusal is not None:
        return _heartbeat_error(refusal)
    try:
        conversion = upgrade_records(group, image)
        members = consumer_members_of(group, image)
    except GroupError as exc:
        return _heartbeat_error(exc)
    joined = cg.consumer_group_heartbeat(scratch_state(conversion), request, now_ms, image, config, context)
    if joined.response.error_code != ErrorCode.NONE:  # type: ignore[union-attr]
        return Result(joined.response)
    records: list[CoordinatorRecord] = [group_metadata_tombstone(gid), *conversion, *joined.records]
    timers: list[TimerOp] = [
        *classic_teardown_timers(classic_state, group),
        *converted_session_timers(gid, members, now_ms),
        *joined.timers,
    ]
    return Result(joined.response, records, timers)


def fence_or_downgrade(
    classic_state: ClassicGroupsState,
    consumer_state: ConsumerGroupsState,
    group: ConsumerGroup,
    leaving: Iterable[str],
    now_ms: int,
    image: TopicsImage,
    config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig,
) -> Result[None]:
    """Remove ``leaving``; if only classic members remain (and the policy allows), the group
    becomes a classic group instead (consumerGroupFenceMembers + convertToClassicGroup)."""
    gone = list(dict.fromkeys(leaving))
    if downgrade_allowed(group, gone, config, classic_config):
        converted = downgrade(classic_state, group, gone, image, now_ms, classic_config)
        if converted is not None:
            for mid in gone:
                consumer_state.classic_join_deadlines.pop((group.group_id, mid), None)
            return converted
    records, timers = fence_members(consumer_state, group, gone, image)
    return Result(None, records, timers)


def consumer_leave(
    classic_state: ClassicGroupsState,
    consumer_state: ConsumerGroupsState,
    request: cg.ConsumerGroupHeartbeatRequest,
    now_ms: int,
    image: TopicsImage,
    config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig,
    context: cg.RequestContext,
) -> Result[cg.ConsumerGroupHeartbeatResponse]:
    """ConsumerGroupHeartbeat with epoch -1: the usual leave, or a downgrade if the leaving
    member was the last one speaking the consumer protocol."""
    left = cg.consumer_group_heartbeat(consumer_state, request, now_ms, image, config, context)
    response = left.response
    assert isinstance(response, cg.ConsumerGroupHeartbeatResponse)
    group = consumer_state.group(request.group_id)
    if (
        request.member_epoch != LEAVE_GROUP_MEMBER_EPOCH
        or response.error_code != ErrorCode.NONE
        or group is None
        or response.member_id is None
        or not downgrade_allowed(group, [response.member_id], config, classic_config)
    ):
        return left
    converted = downgrade(classic_state, group, [response.member_id], image, now_ms, classic_config)
    if converted is None:
        return left
    return Result(response, converted.records, converted.timers, converted.completions)


def classic_leave_to_consumer_group(
    classic_state: ClassicGroupsState,
    consumer_state: ConsumerGroupsState,
    request: LeaveGroupRequest,
    now_ms: int,
    image: TopicsImage,
    config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig,
) -> Result[LeaveGroupResponse]:
    group = consumer_state.group(request.group_id)
    assert group is not None
    valid, answers = leaving_members(group, request)
    response = leave_response(request, answers)
    if not valid:
        return Result(response)
    removed = fence_or_downgrade(classic_state, consumer_state, group, valid, now_ms, image, config, classic_config)
    return Result(response, removed.records, removed.timers, removed.completions)


def is_migration_timer(event: Any) -> bool:
    return isinstance(event, (ClassicMemberJoinTimeout, ClassicMemberSyncTimeout))


def on_timer(
    classic_state: ClassicGroupsState,
    consumer_state: ConsumerGroupsState,
    event: Any,
    now_ms: int,
    image: TopicsImage,
    config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig,
) -> Result[None] | None:
    """Timers that fence a member of a consumer group when migration is involved: a classic
    member's join or sync timeout, or any fencing that leaves only classic members (downgrade).
    None: not ours, the consumer-group timer handler decides."""
    if isinstance(event, (ClassicMemberJoinTimeout, ClassicMemberSyncTimeout)):
        if isinstance(event, ClassicMemberJoinTimeout):
            consumer_state.classic_join_deadlines.pop((event.group_id, event.member_id), None)
        group = consumer_state.group(event.group_id)
        member = group.members.get(event.member_id) if group is not None else None
        if group is None or member is None or not member.uses_classic_protocol:
            return Result(None)
        return fence_or_downgrade(
            classic_state, consumer_state, group, [member.member_id], now_ms, image, config, classic_config
        )
    if isinstance(event, (SessionTimeout, RebalanceTimeout)):
        group = consumer_state.group(event.group_id)
        member = group.members.get(event.member_id) if group is not None else None
        if group is None or member is None:
            return None
        if isinstance(event, RebalanceTimeout) and (
            member.member_epoch != event.member_epoch or member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            return None
        if not downgrade_allowed(group, [member.member_id], config, classic_config):
            return None
        converted = downgrade(classic_state, group, [member.member_id], image, now_ms, classic_config)
        if converted is None:
            return None
        consumer_state.classic_join_deadlines.pop((group.group_id, member.member_id), None)
        return converted
    return None
