"""LeaveGroup (GroupMetadataManager.classicGroupLeaveToClassicGroup): one member (v0-2) or a
batch with a result per member (v3+); static members may be removed by instance id alone."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import COMPLETING_REBALANCE, DEAD, PREPARING_REBALANCE, STABLE
from groupcoord.coordinator.groups.classic.rebalance import (
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    remove_member,
)
from groupcoord.coordinator.groups.classic.requests import LEAVE_BATCH_VERSION, UNKNOWN_MEMBER_ID, leave_identities
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.classic.timers import heartbeat_key
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
)
from groupcoord.coordinator.runtime.api import Result


def classic_leave(
    state: ClassicGroupsState, request: LeaveGroupRequest, ctx: GroupContext
) -> Result[LeaveGroupResponse]:
    fx = Effects(state.timers)
    identities = leave_identities(request, ctx.request.api_version)
    error, members = _leave(state, request.group_id, identities, ctx, fx)
    if ctx.request.api_version < LEAVE_BATCH_VERSION:
        # v0-2 have no per-member results: the first member error becomes the top-level one.
        if error is ErrorCode.NONE:
            error = next((ErrorCode(m.error_code) for m in members if m.error_code != ErrorCode.NONE), ErrorCode.NONE)
        return fx.result(LeaveGroupResponse(error_code=error))
    return fx.result(LeaveGroupResponse(error_code=error, members=members))


def _response(identity: LeaveGroupRequestMemberIdentity, error: ErrorCode) -> LeaveGroupResponseMemberResponse:
    return LeaveGroupResponseMemberResponse(
        member_id=identity.member_id, group_instance_id=identity.group_instance_id, error_code=error
    )


def _leave(
    state: ClassicGroupsState,
    group_id: str,
    identities: list[LeaveGroupRequestMemberIdentity],
    ctx: GroupContext,
    fx: Effects,
) -> tuple[ErrorCode, list[LeaveGroupResponseMemberResponse]]:
    now_ms, config = ctx.now_ms, ctx.classic
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, []
    group = state.groups.get(group_id)
    if group is None:
        return ErrorCode.NONE, [_response(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in identities]
    if group.state is DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, []

    results: list[LeaveGroupResponseMemberResponse] = []
    removed_any = False
    for identity in identities:
        error = ErrorCode.NONE
        if identity.member_id == UNKNOWN_MEMBER_ID:
            # Administrative removal of a static member by instance id alone.
            member_id = (
                group.static_member_id(identity.group_instance_id) if identity.group_instance_id is not None else None
            )
            if member_id is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                remove_member(fx, group, member_id)
        elif group.is_pending_member(identity.member_id):
            group.remove(identity.member_id)
            fx.cancel(heartbeat_key(group.group_id, identity.member_id))
        else:
            error = group.validate_member(identity.member_id, identity.group_instance_id)
            if error is ErrorCode.NONE:
                remove_member(fx, group, identity.member_id)
        removed_any = removed_any or error is ErrorCode.NONE
        results.append(_response(identity, error))

    if removed_any:
        if group.state in (STABLE, COMPLETING_REBALANCE):
            maybe_prepare_rebalance_or_complete_join(fx, group, now_ms, config)
        elif group.state is PREPARING_REBALANCE:
            maybe_complete_join_phase(fx, group, now_ms, config)
    return ErrorCode.NONE, results
