"""Classic-protocol members inside a consumer group (KIP-848 "Supporting Online Consumer Group
Upgrade"; Kafka's classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup).

Each classic member is reconciled on its own by the consumer-group engine:

* JoinGroup updates the member (subscription and owned partitions from its Subscription bytes,
  supported protocols, session timeout), bumps the group epoch when the subscription or the
  membership changed, computes the target assignment if due, and moves the member one step
  towards its target (CurrentAssignmentBuilder: revoke before assign, nothing still owned by
  another member). The response carries the member epoch as generation; the member is never the
  leader, so it sends an empty SyncGroup.
* SyncGroup returns what the member may own now, as ConsumerProtocolAssignment bytes.
* Heartbeat keeps the session and answers REBALANCE_IN_PROGRESS when the member must rejoin:
  its epoch lags the group epoch, it must revoke partitions, or partitions it waits for are free.
* LeaveGroup fences the named members like a consumer-protocol leave.

Nothing here mutates the persisted state; the result's records, replayed, do. The only soft
state is ``ConsumerGroupsState.classic_join_deadlines``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)
from groupcoord.coordinator.groups.classic.requests import (
    JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION,
    LEAVE_BATCH_VERSION,
    SYNC_REQUIRES_PROTOCOL_VERSION,
    UNKNOWN_MEMBER_ID,
    effective_rebalance_timeout_ms,
    join_error,
)
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.groups.consumer.member_id import generate_member_id
from groupcoord.coordinator.groups.consumer.member_update import (
    reconcile_member,
    replace_static_member,
    update_group_epoch_and_target,
)
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.groups.consumer.timers import (
    cancel_member_timers,
    rebalance_key,
    schedule_session,
)
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.groups.migration.convert import (
    assignment_bytes,
    classic_metadata,
    metadata_version,
    owned_partitions,
)
from groupcoord.coordinator.groups.migration.timers import (
    cancel_classic_member_timers,
    join_timeout_key,
    schedule_join_timeout,
    schedule_sync_timeout,
    sync_timeout_key,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import (
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
    LeaveGroupResponseMemberResponse,
)
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.runtime.api import CancelTimer, Result, TimerOp
from groupcoord.records import CoordinatorRecord

# --- shared checks ------------------------------------------------------------------------------


def _error(error: ErrorCode, message: str) -> GroupError:
    return GroupError(error, message)


def validate_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """validateConsumerGroupMember: the instance id maps to this member id, the member exists."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        return member
    member = group.static_member(instance_id)
    if member is None:
        raise _error(
            ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is not a member of group {group.group_id}."
        )
    if member.member_id != member_id:
        raise _error(
            ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} is fenced."
        )
    return member


def _require_classic(member: ConsumerGroupMember) -> None:
    if not member.uses_classic_protocol:
        raise _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")


def _require_generation(member: ConsumerGroupMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise _error(
            ErrorCode.ILLEGAL_GENERATION,
            f"Member {member.member_id} has epoch {member.member_epoch}, not generation {generation_id}.",
        )


def _session_ms(member: ConsumerGroupMember, config: ConsumerGroupConfig) -> int:
    c = member.classic_member_metadata
    return config.session_timeout_ms if c is None else c.session_timeout_ms


def _first_protocol_name(member: ConsumerGroupMember) -> str | None:
    c = member.classic_member_metadata
    return c.supported_protocols[0].name if c is not None and c.supported_protocols else None


def classic_protocols_supported(group: ConsumerGroup, protocol_type: str, names: Iterable[str]) -> bool:
    """ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol name
    every classic member already in the group supports."""
    wanted = set(names)
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not wanted:
        return False
    for m in group.members.values():
        c = m.classic_member_metadata
        if c is not None:
            wanted &= {p.name for p in c.supported_protocols}
    return bool(wanted)


def waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Whether a partition of the member's target that it does not hold yet is still held by
    another member (ConsumerGroup.waitingOnUnreleasedPartition)."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        held = member.assigned.get(topic_id, {})
        for p in partitions:
            if p in held:
                continue
            owner = group.owner_of(topic_id, p)
            if owner is not None and owner != member.member_id:
                return True
    return False


# --- JoinGroup ----------------------------------------------------------------------------------


def classic_join_to_consumer_group(
    state: ConsumerGroupsState, request: JoinGroupRequest, ctx: GroupContext
) -> Result[JoinGroupResponse]:
    try:
        return _join(state, request, ctx)
    except GroupError as exc:
        return Result(join_error(request.member_id, exc.error))


def _join(state: ConsumerGroupsState, request: JoinGroupRequest, ctx: GroupContext) -> Result[JoinGroupResponse]:
    now_ms, image, config, classic_config = ctx.now_ms, ctx.image, ctx.consumer, ctx.classic
    rebalance_timeout_ms = effective_rebalance_timeout_ms(request, ctx.request.api_version)
    gid = request.group_id
    group = state.group(gid)
    assert group is not None
    if not classic_config.min_session_timeout_ms <= request.session_timeout_ms <= classic_config.max_session_timeout_ms:
        raise _error(
            ErrorCode.INVALID_SESSION_TIMEOUT, f"Session timeout {request.session_timeout_ms} is out of range."
        )

    instance_id = request.group_instance_id
    is_unknown = request.member_id == UNKNOWN_MEMBER_ID
    member_id = request.member_id
    if is_unknown:
        state.classic_member_seq += 1
        member_id = generate_member_id(group, instance_id, ctx, state.classic_member_seq)
    if len(group.members) >= config.max_size and member_id not in group.members:
        raise _error(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {config.max_size} members.",
        )
    if not classic_protocols_supported(group, request.protocol_type, (p.name for p in request.protocols)):
        raise _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "The group does not support these protocols.")
    if is_unknown and instance_id is None and ctx.request.api_version >= JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION:
        return Result(join_error(member_id, ErrorCode.MEMBER_ID_REQUIRED))

    # Step 0: the member as the group knows it, or the static member this one replaces.
    member, replaced, records, timers = _resolve_classic_member(state, group, request, member_id)

    try:
        subscription = decode_subscription(request.protocols[0].metadata)
    except ConsumerProtocolError as exc:
        raise _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Malformed consumer protocol subscription: {exc}") from exc

    # Step 1: the member as this JoinGroup describes it.
    updated = replace(
        member,
        instance_id=instance_id if instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        client_id=ctx.request.client_id,
        client_host=ctx.request.client_host,
        has_metadata=True,
        classic_member_metadata=classic_metadata(request.session_timeout_ms, request.protocols),
    )
    subscription_changed = not updated.subscription_equals(member)
    membership_changed = subscription_changed or (member_id not in group.members and replaced is None)
    if not member.has_metadata or not updated.metadata_equals(member) or replaced is not None:
        records.append(log_records.member_metadata_record(gid, updated))

    step = update_group_epoch_and_target(group, updated, replaced, membership_changed, ctx)
    records += step.records
    timers += step.timers

    # Step 3: reconcile with what the member says it owns (Subscription owned partitions).
    try:
        reconciled = reconcile_member(
            group, updated, step, image, owned_partitions(subscription, image), subscription_changed
        )
    except GroupError as exc:
        # The reconciliation refused the member's state (written by a newer coordinator): the
        # classic client must start over with a new member id.
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, exc.message) from exc
    if not reconciled.has_assignment or not reconciled.assignment_equals(member) or replaced is not None:
        records.append(log_records.current_assignment_record(gid, reconciled))
    # No rebalance timeout: a classic member only has the join and sync timers (Kafka's
    # maybeReconcile); one still revoking is told to rejoin, which arms its join timer.
    timers.append(CancelTimer(rebalance_key(gid, member_id)))
    state.classic_join_deadlines.pop((gid, member_id), None)
    timers.append(CancelTimer(join_timeout_key(gid, member_id)))
    timers.append(schedule_session(gid, member_id, now_ms, request.session_timeout_ms))
    timers.append(schedule_sync_timeout(gid, member_id, now_ms, rebalance_timeout_ms))

    response = JoinGroupResponse(
        generation_id=reconciled.member_epoch,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=request.protocols[0].name,
        leader="",
        member_id=member_id,
    )
    return Result(response, records, timers)


def _resolve_classic_member(
    state: ConsumerGroupsState, group: ConsumerGroup, request: JoinGroupRequest, member_id: str
) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None, list[CoordinatorRecord], list[TimerOp]]:
    """Step 0 of a classic join: the existing (classic) member, a new one, or a restarted static
    instance taking over its predecessor (any protocol) with the records of that replacement."""
    gid, instance_id = group.group_id, request.group_instance_id
    is_unknown = request.member_id == UNKNOWN_MEMBER_ID
    records: list[CoordinatorRecord] = []
    timers: list[TimerOp] = []
    replaced: ConsumerGroupMember | None = None
    if instance_id is None:
        existing = group.members.get(member_id)
        if existing is not None:
            _require_classic(existing)
        member = existing or ConsumerGroupMember(member_id=member_id)
    else:
        existing = group.static_member(instance_id)
        if existing is None:
            if not is_unknown and member_id not in group.members:
                raise _error(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            member = group.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
        elif is_unknown:
            # A restarted static instance takes over the old member and its assignment, even a
            # live consumer-protocol one: Kafka checks UNRELEASED_INSTANCE_ID only when neither
            # side speaks the classic protocol.
            replaced = existing
            member = replace(existing, member_id=member_id)
            records += replace_static_member(group, existing, member)
            timers += cancel_member_timers(gid, existing.member_id)
            timers += cancel_classic_member_timers(gid, existing.member_id)
            state.classic_join_deadlines.pop((gid, existing.member_id), None)
        elif existing.member_id != member_id:
            raise _error(
                ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} is fenced."
            )
        else:
            _require_classic(existing)
            member = existing
    return member, replaced, records, timers


# --- SyncGroup ----------------------------------------------------------------------------------


def classic_sync_to_consumer_group(
    state: ConsumerGroupsState, request: SyncGroupRequest, ctx: GroupContext
) -> Result[SyncGroupResponse]:
    try:
        return _sync(state, request, ctx)
    except GroupError as exc:
        return Result(SyncGroupResponse(error_code=int(exc.error)))


def _sync(state: ConsumerGroupsState, request: SyncGroupRequest, ctx: GroupContext) -> Result[SyncGroupResponse]:
    now_ms, image, config = ctx.now_ms, ctx.image, ctx.consumer
    if ctx.request.api_version >= SYNC_REQUIRES_PROTOCOL_VERSION and (
        request.protocol_type is None or request.protocol_name is None
    ):
        raise _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "SyncGroup v5+ must name the protocol type and name.")
    group = state.group(request.group_id)
    assert group is not None
    member = validate_member(group, request.member_id, request.group_instance_id)
    _require_classic(member)
    _require_generation(member, request.generation_id)
    protocol_name = _first_protocol_name(member)
    if (request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
        request.protocol_name is not None and request.protocol_name != protocol_name
    ):
        raise _error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "The protocol does not match the member's JoinGroup.")
    if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        # A newer epoch exists: rejoin first, within the join timeout (throwIfRebalanceInProgress).
        # A member still revoking keeps its epoch as the generation and must learn (here) what to
        # give up.
        return Result(
            SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS),
            [],
            join_timeout_if_absent(state, group, member, now_ms),
        )
    gid = group.group_id
    assert member.classic_member_metadata is not None
    version = metadata_version(member.classic_member_metadata.supported_protocols[0].metadata)
    timers: list[TimerOp] = [
        CancelTimer(sync_timeout_key(gid, member.member_id)),
        schedule_session(gid, member.member_id, now_ms, _session_ms(member, config)),
    ]
    return Result(
        SyncGroupResponse(
            protocol_type=request.protocol_type or CONSUMER_PROTOCOL_TYPE,
            protocol_name=request.protocol_name or protocol_name,
            assignment=assignment_bytes(member.assigned, image, version),
        ),
        [],
        timers,
    )


# --- Heartbeat ----------------------------------------------------------------------------------


def classic_heartbeat_to_consumer_group(
    state: ConsumerGroupsState, request: HeartbeatRequest, ctx: GroupContext
) -> Result[HeartbeatResponse]:
    now_ms, config = ctx.now_ms, ctx.consumer
    group = state.group(request.group_id)
    assert group is not None
    try:
        member = validate_member(group, request.member_id, request.group_instance_id)
        _require_classic(member)
        _require_generation(member, request.generation_id)
    except GroupError as exc:
        return Result(HeartbeatResponse(error_code=int(exc.error)))
    gid = group.group_id
    mid = member.member_id
    timers: list[TimerOp] = [schedule_session(gid, mid, now_ms, _session_ms(member, config))]
    error = ErrorCode.NONE
    if (
        member.member_epoch < group.group_epoch
        or member.state == MemberState.UNREVOKED_PARTITIONS
        or (member.state == MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased_partition(group, member))
    ):
        error = ErrorCode.REBALANCE_IN_PROGRESS
        timers += join_timeout_if_absent(state, group, member, now_ms)
    return Result(HeartbeatResponse(error_code=error), [], timers)


def join_timeout_if_absent(
    state: ConsumerGroupsState, group: ConsumerGroup, member: ConsumerGroupMember, now_ms: int
) -> list[TimerOp]:
    """A classic member told REBALANCE_IN_PROGRESS must rejoin within its rebalance timeout;
    later answers keep the deadline (scheduleConsumerGroupJoinTimeoutIfAbsent)."""
    key = (group.group_id, member.member_id)
    if key in state.classic_join_deadlines:
        return []
    deadline = now_ms + max(member.rebalance_timeout_ms, 0)
    state.classic_join_deadlines[key] = deadline
    return [schedule_join_timeout(group.group_id, member.member_id, deadline)]


# --- LeaveGroup ---------------------------------------------------------------------------------


def leaving_members(
    group: ConsumerGroup, identities: list[LeaveGroupRequestMemberIdentity]
) -> tuple[list[str], list[LeaveGroupResponseMemberResponse]]:
    """The members a LeaveGroup validly names, and the per-member answers."""
    valid: list[str] = []
    answers: list[LeaveGroupResponseMemberResponse] = []
    for identity in identities:
        error = ErrorCode.NONE
        member: ConsumerGroupMember | None = None
        if identity.member_id == UNKNOWN_MEMBER_ID:
            member = group.static_member(identity.group_instance_id) if identity.group_instance_id is not None else None
            if member is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
        else:
            try:
                member = validate_member(group, identity.member_id, identity.group_instance_id)
            except GroupError as exc:
                error = exc.error
        if member is not None and error is ErrorCode.NONE:
            valid.append(member.member_id)
        answers.append(
            LeaveGroupResponseMemberResponse(
                member_id=identity.member_id, group_instance_id=identity.group_instance_id, error_code=error
            )
        )
    return valid, answers


def leave_response(api_version: int, answers: list[LeaveGroupResponseMemberResponse]) -> LeaveGroupResponse:
    if api_version < LEAVE_BATCH_VERSION:
        error = next((ErrorCode(a.error_code) for a in answers if a.error_code != ErrorCode.NONE), ErrorCode.NONE)
        return LeaveGroupResponse(error_code=error)
    return LeaveGroupResponse(members=answers)
