"""SyncGroup (GroupMetadataManager.classicGroupSyncToClassicGroup): the leader's assignment
completes the rebalance; followers that sync first are parked until it arrives."""

from __future__ import annotations

from collections.abc import Hashable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import (
    COMPLETING_REBALANCE,
    DEAD,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
)
from groupcoord.coordinator.groups.classic.rebalance import remove_pending_sync_member, set_and_propagate_assignment
from groupcoord.coordinator.groups.classic.requests import SYNC_REQUIRES_PROTOCOL_VERSION
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park, Result


def classic_sync(
    state: ClassicGroupsState, request: SyncGroupRequest, token: Hashable, ctx: GroupContext
) -> Result[SyncGroupResponse]:
    fx = Effects(state.timers)
    response = _sync(state, request, token, ctx, fx)
    return fx.result(response, token)


def _is_protocol_inconsistent(requested: str | None, actual: str | None) -> bool:
    return requested is not None and actual is not None and requested != actual


def _validate(group: ClassicGroup, request: SyncGroupRequest) -> ErrorCode:
    if group.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    error = group.validate_member(request.member_id, request.group_instance_id)
    if error is not ErrorCode.NONE:
        return error
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if _is_protocol_inconsistent(request.protocol_type, group.protocol_type) or _is_protocol_inconsistent(
        request.protocol_name, group.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return ErrorCode.NONE


def _sync(
    state: ClassicGroupsState, request: SyncGroupRequest, token: Hashable, ctx: GroupContext, fx: Effects
) -> SyncGroupResponse | Park:
    now_ms = ctx.now_ms
    if not request.group_id:
        return SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    if ctx.request.api_version >= SYNC_REQUIRES_PROTOCOL_VERSION and (
        request.protocol_type is None or request.protocol_name is None
    ):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    group = state.groups.get(request.group_id)
    if group is None or group.is_empty():
        return SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    error = _validate(group, request)
    if error is not ErrorCode.NONE:
        return SyncGroupResponse(error_code=error)
    if group.state is PREPARING_REBALANCE:
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)

    member = group.members[request.member_id]
    if group.state is COMPLETING_REBALANCE:
        if member.awaiting_sync is not None and member.awaiting_sync != token:
            fx.complete(member.awaiting_sync, SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = token
        remove_pending_sync_member(fx, group, member.member_id)
        if group.is_leader(member.member_id):
            assignment = {a.member_id: a.assignment for a in request.assignments}
            # Kafka applies the assignment once the record is written; this runtime releases
            # every answer only after the record commits, so applying it now is equivalent.
            set_and_propagate_assignment(fx, group, assignment, now_ms)
            group.transition_to(STABLE, now_ms)
            fx.write_group_metadata(group)
        return Park(token)

    assert group.state is STABLE
    remove_pending_sync_member(fx, group, member.member_id)
    return SyncGroupResponse(
        protocol_type=group.protocol_type, protocol_name=group.protocol_name, assignment=member.assignment
    )
