"""The join barrier and the shared rebalance steps of GroupMetadataManager's classic protocol:
prepareRebalance, maybeCompleteJoinPhase, completeClassicGroupJoin, propagateAssignment and
removing a failed member. JoinGroup, SyncGroup, LeaveGroup and the timers all go through these."""

from __future__ import annotations

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
from groupcoord.coordinator.groups.classic.requests import UNKNOWN_MEMBER_ID, join_error
from groupcoord.coordinator.groups.classic.timers import (
    HeartbeatExpiry,
    InitialRebalanceDelay,
    JoinDeadline,
    SyncDeadline,
    heartbeat_key,
    join_key,
    sync_key,
)
from groupcoord.coordinator.groups.config import ClassicGroupConfig
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse

# --- session timers -----------------------------------------------------------------------------


def schedule_heartbeat(
    fx: Effects, group: ClassicGroup, member: ClassicGroupMember, now_ms: int, timeout_ms: int | None = None
) -> None:
    timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
    fx.schedule(
        heartbeat_key(group.group_id, member.member_id),
        now_ms + timeout,
        HeartbeatExpiry(group.group_id, member.member_id),
    )


# --- answering parked requests ------------------------------------------------------------------


def complete_join(fx: Effects, member: ClassicGroupMember, response: JoinGroupResponse) -> bool:
    if member.awaiting_join is None:
        return False
    fx.complete(member.awaiting_join, response)
    member.awaiting_join = None
    return True


def complete_sync(fx: Effects, member: ClassicGroupMember, response: SyncGroupResponse) -> bool:
    if member.awaiting_sync is None:
        return False
    fx.complete(member.awaiting_sync, response)
    member.awaiting_sync = None
    return True


def release_removed_member(
    fx: Effects, member: ClassicGroupMember, error: ErrorCode = ErrorCode.UNKNOWN_MEMBER_ID
) -> None:
    """Answer whatever a removed member still has parked; Kafka leaves such futures to time out,
    but the runtime would hold them forever."""
    complete_join(fx, member, join_error(UNKNOWN_MEMBER_ID, error))
    complete_sync(fx, member, SyncGroupResponse(error_code=error))


def remove_member(fx: Effects, group: ClassicGroup, member_id: str) -> None:
    member = group.remove(member_id)
    fx.cancel(heartbeat_key(group.group_id, member_id))
    if member is not None:
        release_removed_member(fx, member)


# --- SyncGroup fan-out --------------------------------------------------------------------------


def propagate_assignment(fx: Effects, group: ClassicGroup, error: ErrorCode, now_ms: int) -> None:
    ok = error is ErrorCode.NONE
    for member in group.members.values():
        response = SyncGroupResponse(
            error_code=error,
            protocol_type=group.protocol_type if ok else None,
            protocol_name=group.protocol_name if ok else None,
            assignment=member.assignment,
        )
        if complete_sync(fx, member, response):
            # A session that ran out while the member was parked was ignored; restart it now.
            schedule_heartbeat(fx, group, member, now_ms)


def set_and_propagate_assignment(fx: Effects, group: ClassicGroup, assignment: dict[str, bytes], now_ms: int) -> None:
    for member in group.members.values():
        member.assignment = assignment.get(member.member_id, b"")
    propagate_assignment(fx, group, ErrorCode.NONE, now_ms)


def reset_and_propagate_assignment_with_error(fx: Effects, group: ClassicGroup, error: ErrorCode, now_ms: int) -> None:
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(fx, group, error, now_ms)


def remove_sync_expiration(fx: Effects, group: ClassicGroup) -> None:
    group.pending_sync_members.clear()
    fx.cancel(sync_key(group.group_id))


def remove_pending_sync_member(fx: Effects, group: ClassicGroup, member_id: str) -> None:
    group.pending_sync_members.pop(member_id, None)
    if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync_members:
        fx.cancel(sync_key(group.group_id))


# --- the join barrier ---------------------------------------------------------------------------


def prepare_rebalance(fx: Effects, group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> None:
    if group.state is COMPLETING_REBALANCE:
        # Followers parked in SyncGroup must rejoin: the assignment they wait for is void.
        reset_and_propagate_assignment_with_error(fx, group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
    remove_sync_expiration(fx, group)
    initial = group.state is EMPTY
    if initial:
        # group.initial.rebalance.delay.ms: a new group waits for more members before its first
        # generation, extended while members keep arriving, up to the rebalance timeout.
        delay = config.initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        fx.schedule(join_key(group.group_id), now_ms + delay, InitialRebalanceDelay(group.group_id, delay, remaining))
    group.transition_to(PREPARING_REBALANCE, now_ms)
    if not initial:
        maybe_complete_join_else_schedule(fx, group, now_ms, config)


def maybe_complete_join_else_schedule(
    fx: Effects, group: ClassicGroup, now_ms: int, config: ClassicGroupConfig
) -> None:
    if group.has_all_members_joined():
        complete_join_phase(fx, group, now_ms, config)
    else:
        fx.schedule(join_key(group.group_id), now_ms + group.rebalance_timeout_ms(), JoinDeadline(group.group_id))


def maybe_prepare_rebalance_or_complete_join(
    fx: Effects, group: ClassicGroup, now_ms: int, config: ClassicGroupConfig
) -> None:
    if group.can_rebalance():
        prepare_rebalance(fx, group, now_ms, config)
    else:
        maybe_complete_join_phase(fx, group, now_ms, config)


def maybe_complete_join_phase(fx: Effects, group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> None:
    """Close the barrier once everyone rejoined, except in the initial rebalance, which always
    waits out its delay."""
    if group.state is not PREPARING_REBALANCE or group.previous_state is EMPTY:
        return
    if group.has_all_members_joined():
        complete_join_phase(fx, group, now_ms, config)


def complete_join_phase(fx: Effects, group: ClassicGroup, now_ms: int, config: ClassicGroupConfig) -> None:
    """completeClassicGroupJoin: drop dynamic members that did not rejoin, start the next
    generation, and answer every parked JoinGroup (the leader gets everyone's metadata)."""
    fx.cancel(join_key(group.group_id))
    for member in group.not_yet_rejoined_members():
        if not member.is_static:
            remove_member(fx, group, member.member_id)
    if group.state is DEAD:
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        # Only static members are left and none rejoined: wait another rebalance timeout, by
        # which their sessions will have expired if they are gone.
        fx.schedule(join_key(group.group_id), now_ms + group.rebalance_timeout_ms(), JoinDeadline(group.group_id))
        return
    group.init_next_generation(now_ms)
    if group.state is EMPTY:
        fx.write_group_metadata(group)
        return
    leader_view = group.current_members_for_join()
    for member in group.members.values():
        complete_join(
            fx,
            member,
            JoinGroupResponse(
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                member_id=member.member_id,
                members=leader_view if group.is_leader(member.member_id) else [],
            ),
        )
        schedule_heartbeat(fx, group, member, now_ms)
        member.is_new = False
        group.pending_sync_members[member.member_id] = None
    fx.schedule(
        sync_key(group.group_id),
        now_ms + group.rebalance_timeout_ms(),
        SyncDeadline(group.group_id, group.generation_id),
    )


def remove_member_and_update_group(
    fx: Effects, group: ClassicGroup, member: ClassicGroupMember, now_ms: int, config: ClassicGroupConfig
) -> None:
    """A member failed (session expiry): remove it and let the group react."""
    remove_member(fx, group, member.member_id)
    if group.state in (STABLE, COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(fx, group, now_ms, config)
    elif group.state is PREPARING_REBALANCE and group.has_all_members_joined():
        complete_join_phase(fx, group, now_ms, config)
