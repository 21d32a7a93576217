"""JoinGroup (GroupCoordinatorService.joinGroup + GroupMetadataManager.classicGroupJoinToClassicGroup)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
)
from groupcoord.coordinator.groups.classic.member import ClassicGroupMember
from groupcoord.coordinator.groups.classic.rebalance import (
    complete_join,
    complete_sync,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
    schedule_heartbeat,
)
from groupcoord.coordinator.groups.classic.requests import (
    JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION,
    JOIN_SUPPORTS_SKIP_ASSIGNMENT_VERSION,
    UNKNOWN_MEMBER_ID,
    effective_rebalance_timeout_ms,
    join_error,
)
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.classic.timers import HeartbeatExpiry, heartbeat_key
from groupcoord.coordinator.groups.config import ClassicGroupConfig
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park, Result


def classic_join(
    state: ClassicGroupsState, request: JoinGroupRequest, token: Hashable, ctx: GroupContext
) -> Result[JoinGroupResponse]:
    """Answered at once (errors, MEMBER_ID_REQUIRED, a settled member's current generation) or
    parked until the join barrier closes; the Result that closes it answers every parked join."""
    fx = Effects(state.timers)
    response = _join(state, JoinCall(request, token, ctx.now_ms, ctx.classic, fx, ctx.request))
    return fx.result(response, token)


@dataclass(frozen=True, slots=True)
class JoinCall:
    """One JoinGroup as it travels through the join steps: the request, the token that parks it,
    the time, the config, the effects gathered so far and what came with the request (version,
    client id and host)."""

    request: JoinGroupRequest
    token: Hashable
    now_ms: int
    config: ClassicGroupConfig
    fx: Effects
    facts: RequestContext

    @property
    def rebalance_timeout_ms(self) -> int:
        return effective_rebalance_timeout_ms(self.request, self.facts.api_version)


def _join(state: ClassicGroupsState, call: JoinCall) -> JoinGroupResponse | Park:
    request, now_ms, config, fx = call.request, call.now_ms, call.config, call.fx
    if not request.group_id:
        return join_error(request.member_id, ErrorCode.INVALID_GROUP_ID)
    if not config.min_session_timeout_ms <= request.session_timeout_ms <= config.max_session_timeout_ms:
        return join_error(request.member_id, ErrorCode.INVALID_SESSION_TIMEOUT)

    is_unknown_member = request.member_id == UNKNOWN_MEMBER_ID
    group = state.groups.get(request.group_id)
    is_new_group = group is None
    if group is None:
        if not is_unknown_member:
            # A member id for a group that does not exist: the client must start over.
            return join_error(request.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        group = ClassicGroup(request.group_id, current_state_timestamp=now_ms)
        state.groups[request.group_id] = group

    response: JoinGroupResponse | Park
    if not _accept_joining_member(group, request.member_id, config):
        if group.has_member(request.member_id) or group.is_pending_member(request.member_id):
            # Kafka drops a member (or pending id) that came back too late to fit; it is not
            # parked, so nothing else is owed to it.
            group.remove(request.member_id)
            fx.cancel(heartbeat_key(group.group_id, request.member_id))
        response = join_error(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED)
    elif is_unknown_member:
        response = _join_new_member(state, group, call)
    else:
        response = _join_existing_member(group, call)

    if is_new_group and not fx.records:
        # The group must exist in the log even if its first rebalance is still open.
        fx.write_group_metadata(group, group.to_empty_record_value())
    return response


def _accept_joining_member(group: ClassicGroup, member_id: str, config: ClassicGroupConfig) -> bool:
    """group.max.size (GROUP_MAX_SIZE_REACHED)."""
    if group.state in (EMPTY, DEAD):
        return True
    if group.state is PREPARING_REBALANCE:
        # Counting members already parked (not the group size, which may exceed a lowered
        # limit) admits the first max.size rejoiners and turns away the rest.
        member = group.members.get(member_id)
        return (member is not None and member.is_awaiting_join) or group.num_awaiting_join() < config.max_size
    return group.has_member(member_id) or len(group.members) < config.max_size


def _join_new_member(state: ClassicGroupsState, group: ClassicGroup, call: JoinCall) -> JoinGroupResponse | Park:
    request, now_ms, fx = call.request, call.now_ms, call.fx
    if group.state is DEAD:
        return join_error(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
        return join_error(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    facts = call.facts
    new_member_id = state.new_member_id(group, facts.client_id, request.group_instance_id, now_ms, facts.nonce)
    if request.group_instance_id is not None:
        existing = group.static_member_id(request.group_instance_id)
        if existing is not None:
            return _replace_static_member(group, existing, new_member_id, call)
        return _add_member_and_rebalance(group, new_member_id, call)
    if facts.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION:
        # MEMBER_ID_REQUIRED: the client rejoins with this id, so a retried first join cannot
        # leave a trail of phantom members in the barrier. The pending id lives one session.
        group.add_pending_member(new_member_id)
        fx.schedule(
            heartbeat_key(group.group_id, new_member_id),
            now_ms + request.session_timeout_ms,
            HeartbeatExpiry(group.group_id, new_member_id),
        )
        return join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED)
    return _add_member_and_rebalance(group, new_member_id, call)


def _join_existing_member(group: ClassicGroup, call: JoinCall) -> JoinGroupResponse | Park:
    request = call.request
    member_id = request.member_id
    if group.state is DEAD:
        return join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
        return join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.is_pending_member(member_id):
        if request.group_instance_id is not None:
            # Pending ids are only handed to dynamic members; Kafka fails this as a server error.
            return join_error(member_id, ErrorCode.UNKNOWN_SERVER_ERROR)
        return _add_member_and_rebalance(group, member_id, call)

    error = group.validate_member(member_id, request.group_instance_id)
    if error is not ErrorCode.NONE:
        return join_error(member_id, error)
    member = group.members[member_id]
    if group.state is PREPARING_REBALANCE:
        return _update_member_and_rebalance(group, member, call)
    if group.state is COMPLETING_REBALANCE:
        if member.matches(request.protocols):
            # Same metadata: most likely a lost JoinGroup response; resend the generation.
            return _current_generation(group, member_id, with_members=group.is_leader(member_id))
        return _update_member_and_rebalance(group, member, call)
    if group.state is STABLE:
        # A leader's JoinGroup always rebalances: that is how it reacts to changes (new topic
        # partitions) that do not show in any member's metadata.
        if group.is_leader(member_id) or not member.matches(request.protocols):
            return _update_member_and_rebalance(group, member, call)
        return _current_generation(group, member_id, with_members=False)
    # Empty with a member cannot happen; let the client reset and rejoin as Kafka does.
    return join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID)


def _current_generation(group: ClassicGroup, member_id: str, with_members: bool) -> JoinGroupResponse:
    return JoinGroupResponse(
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        member_id=member_id,
        members=group.current_members_for_join() if with_members else [],
    )


def _add_member_and_rebalance(group: ClassicGroup, member_id: str, call: JoinCall) -> Park:
    request, token, now_ms, config, fx = call.request, call.token, call.now_ms, call.config, call.fx
    member = ClassicGroupMember(
        member_id=member_id,
        group_instance_id=request.group_instance_id,
        client_id=call.facts.client_id,
        client_host=call.facts.client_host,
        rebalance_timeout_ms=call.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocol_type=request.protocol_type,
        supported_protocols=tuple(request.protocols),
        is_new=True,
    )
    if group.state is PREPARING_REBALANCE and group.previous_state is EMPTY:
        group.new_member_added = True
    group.add(member, token)
    # A parked new member cannot heartbeat and a dropped connection goes unnoticed while parked;
    # bound its wait so abandoned joins do not pile up in a long rebalance.
    schedule_heartbeat(fx, group, member, now_ms, config.new_member_join_timeout_ms)
    maybe_prepare_rebalance_or_complete_join(fx, group, now_ms, config)
    return Park(token)


def _update_member_and_rebalance(group: ClassicGroup, member: ClassicGroupMember, call: JoinCall) -> Park:
    request, token, now_ms, config, fx = call.request, call.token, call.now_ms, call.config, call.fx
    superseded = group.update_member(
        member, tuple(request.protocols), call.rebalance_timeout_ms, request.session_timeout_ms, token
    )
    if superseded is not None:
        # The client gave up on its earlier join and sent this one; answer the old one so the
        # runtime does not keep it parked.
        fx.complete(superseded, join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
    maybe_prepare_rebalance_or_complete_join(fx, group, now_ms, config)
    return Park(token)


def _replace_static_member(
    group: ClassicGroup, old_member_id: str, new_member_id: str, call: JoinCall
) -> JoinGroupResponse | Park:
    """KIP-345: a restarted static instance (same group.instance.id, no member id) takes over
    its old member. In a Stable group whose protocol choice is unaffected it keeps the old
    assignment without a rebalance; the old member id is fenced (FENCED_INSTANCE_ID)."""
    request, token, now_ms, config, fx = call.request, call.token, call.now_ms, call.config, call.fx
    assert request.group_instance_id is not None
    leader_before = group.leader_id
    new_member, old_member = group.replace_static_member(request.group_instance_id, old_member_id, new_member_id)
    complete_join(fx, old_member, join_error(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
    complete_sync(fx, old_member, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID))
    fx.cancel(heartbeat_key(group.group_id, old_member_id))
    schedule_heartbeat(fx, group, new_member, now_ms)
    group.update_member(
        new_member, tuple(request.protocols), call.rebalance_timeout_ms, request.session_timeout_ms, token
    )

    if group.state is STABLE:
        if group.protocol_name == group.select_protocol():
            # Persist the new member id (with the old assignment) instead of rebalancing.
            fx.write_group_metadata(group)
            if call.facts.api_version >= JOIN_SUPPORTS_SKIP_ASSIGNMENT_VERSION:
                is_leader = group.is_leader(new_member_id)
                response = JoinGroupResponse(
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id or "",
                    # A static leader gets the members but must not reassign: skip_assignment.
                    skip_assignment=is_leader,
                    member_id=new_member_id,
                    members=group.current_members_for_join() if is_leader else [],
                )
            else:
                # Older clients cannot skip the assignment, so they are never told they lead
                # (the old leader id is reported), which keeps them from reassigning.
                response = JoinGroupResponse(
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=leader_before or "",
                    member_id=new_member_id,
                )
            new_member.awaiting_join = None
            return response
        maybe_prepare_rebalance_or_complete_join(fx, group, now_ms, config)
    elif group.state is COMPLETING_REBALANCE:
        # The leader may already be assigning for the old member id; the new one would get
        # nothing, so rebalance again.
        prepare_rebalance(fx, group, now_ms, config)
    else:
        maybe_complete_join_phase(fx, group, now_ms, config)
    return Park(token)
