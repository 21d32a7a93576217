"""Heartbeat (GroupMetadataManager.classicGroupHeartbeatToClassicGroup): keeps a member's
session alive and tells it when a rebalance is under way."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from groupcoord.coordinator.groups.classic.rebalance import schedule_heartbeat
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.runtime.api import Result, TimerOp


def classic_heartbeat(
    state: ClassicGroupsState, request: HeartbeatRequest, ctx: GroupContext
) -> Result[HeartbeatResponse]:
    fx = Effects(state.timers)
    return fx.result(_heartbeat(state, request, ctx.now_ms, fx))


def _heartbeat(state: ClassicGroupsState, request: HeartbeatRequest, now_ms: int, fx: Effects) -> HeartbeatResponse:
    if not request.group_id:
        return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    group = state.groups.get(request.group_id)
    if group is None:
        return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state is DEAD:
        return HeartbeatResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = group.validate_member(request.member_id, request.group_instance_id)
    if error is not ErrorCode.NONE:
        return HeartbeatResponse(error_code=error)
    if request.generation_id != group.generation_id:
        return HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION)
    if group.state is EMPTY:
        return HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    schedule_heartbeat(fx, group, group.members[request.member_id], now_ms)
    if group.state is PREPARING_REBALANCE:
        return HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    # Kafka answers NONE in CompletingRebalance too: a member may start heartbeating right after
    # its JoinGroup response, before it has synced; that heartbeat is a normal one.
    assert group.state in (COMPLETING_REBALANCE, STABLE)
    return HeartbeatResponse()


def classic_commit_keepalive(state: ClassicGroupsState, group_id: str, member_id: str, now_ms: int) -> list[TimerOp]:
    """An accepted OffsetCommit of a classic group's member keeps its session alive while the group
    is Stable or PreparingRebalance (Kafka's commitOffset reschedules the member's heartbeat), so
    a client whose only traffic for a while is commits (a long batch, heartbeats stalled) stays."""
    group = state.groups.get(group_id)
    if group is None or group.state not in (STABLE, PREPARING_REBALANCE):
        return []
    member = group.members.get(member_id)
    if member is None:
        return []
    fx = Effects(state.timers)
    schedule_heartbeat(fx, group, member, now_ms)
    return fx.timers
