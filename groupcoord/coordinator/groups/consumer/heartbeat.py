"""ConsumerGroupHeartbeat: join, heartbeat, reconcile and leave in one RPC (KIP-848).

A regular heartbeat runs Kafka's three steps:

1. create or update the member; bump the group epoch if its subscription, regex or assignor
   preference changed, the member set changed, or the metadata hash of the subscribed topics
   changed (topics created, deleted, re-created or grown);
2. if the target assignment lags the group epoch and the assignment interval has passed, run
   the assignor over the whole group (TargetAssignmentBuilder);
3. move this member one step towards its target (CurrentAssignmentBuilder).

Nothing here mutates the state: the result's records, replayed by the runtime, do.
"""

from __future__ import annotations

import zlib

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.fencing import fence_members
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.groups.consumer.member_id import generate_member_id
from groupcoord.coordinator.groups.consumer.member_update import (
    reconcile_member,
    replace_static_member,
    update_group_epoch_and_target,
)
from groupcoord.coordinator.groups.consumer.requests import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    assignment,
    owned_partitions,
)
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.groups.consumer.timers import (
    cancel_member_timers,
    rebalance_key,
    schedule_rebalance,
    schedule_session,
)
from groupcoord.coordinator.groups.consumer.validation import throw_if_member_epoch_invalid
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.runtime.api import CancelTimer, Result, ScheduleTimer, TimerOp
from groupcoord.records import CoordinatorRecord


def consumer_group_heartbeat(
    state: ConsumerGroupsState, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ConsumerGroupHeartbeatResponse]:
    # The request is valid here: routing.consumer_group_heartbeat validates it once, before the
    # group is looked up, as Kafka's consumerGroupHeartbeat entry does.
    try:
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return _leave(state, request, ctx.image)
        return _heartbeat(state, request, ctx)
    except GroupError as exc:
        return Result(ConsumerGroupHeartbeatResponse(error_code=int(exc.error), error_message=exc.message))


def _same_partitions(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    if a.assigned is b.assigned:
        # A steady heartbeat: the member is carried over as it was (its assignment not copied).
        return True
    if a.assigned.keys() != b.assigned.keys():
        return False
    return all(a.assigned[t].keys() == b.assigned[t].keys() for t in a.assigned)


def _leave(
    state: ConsumerGroupsState, request: ConsumerGroupHeartbeatRequest, image: TopicsImage
) -> Result[ConsumerGroupHeartbeatResponse]:
    group = state.group(request.group_id)
    if group is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {request.group_id} is unknown.")
    member: ConsumerGroupMember | None
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is unknown.")
    else:
        member = group.static_member(request.instance_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if member.member_id != request.member_id:
            raise GroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {request.member_id} with instance id {request.instance_id} "
                f"was fenced by member {member.member_id}.",
            )
    response = ConsumerGroupHeartbeatResponse(member_id=member.member_id, member_epoch=request.member_epoch)
    if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        # The static member keeps its assignment for a rejoin within the session timeout; what it
        # was still revoking is released now since it stopped consuming. The session timer keeps
        # running and removes the member if it does not come back.
        left = member.evolve(member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
        return Result(
            response,
            [log_records.current_assignment_record(group.group_id, left)],
            [CancelTimer(rebalance_key(group.group_id, member.member_id))],
        )
    records, timers = fence_members(group, [member.member_id], image)
    return Result(response, records, timers)


def _heartbeat(
    state: ConsumerGroupsState, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ConsumerGroupHeartbeatResponse]:
    now_ms, config, context = ctx.now_ms, ctx.consumer, ctx.request
    group_id = request.group_id
    epoch = request.member_epoch
    group = state.group(group_id)
    if group is None:
        if epoch != 0:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member {request.member_id}.")
        group = ConsumerGroup(group_id)

    # Step 0: who the member is (a new id, or a static member replacing its predecessor).
    member_id, member, replaced, records, timers = _resolve_member(group, request, ctx)

    # Step 1: the member as this heartbeat describes it.
    updated = member_from_heartbeat(member, request, context)
    subscription_changed = not updated.subscription_equals(member)
    # A static member taking over its instance's assignment is the same logical member: no bump.
    membership_changed = (
        subscription_changed
        or updated.server_assignor != member.server_assignor
        or (member_id not in group.members and replaced is None)
    )
    if not member.has_metadata or not updated.metadata_equals(member):
        records.append(log_records.member_metadata_record(group_id, updated))

    step = update_group_epoch_and_target(group, updated, replaced, membership_changed, ctx)
    records += step.records
    timers += step.timers

    # Step 3: reconcile this member one step.
    reconciled = reconcile_member(group, updated, step, ctx.image, owned_partitions(request), subscription_changed)
    if not reconciled.has_assignment or not reconciled.assignment_equals(member):
        records.append(log_records.current_assignment_record(group_id, reconciled))
        if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
            timers.append(
                schedule_rebalance(
                    group_id, member_id, reconciled.member_epoch, now_ms, reconciled.rebalance_timeout_ms
                )
            )
        else:
            timers.append(CancelTimer(rebalance_key(group_id, member_id)))
    timers.append(schedule_session(group_id, member_id, now_ms, config.session_timeout_ms))

    response = ConsumerGroupHeartbeatResponse(
        member_id=member_id,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=(
            member_heartbeat_interval(
                member_id, config.heartbeat_interval_ms, first=_awaits_first_assignment(reconciled, step.group_epoch)
            )
            if len(group.members) >= SPREAD_HEARTBEATS_FROM
            else config.heartbeat_interval_ms
        ),
    )
    full_request = epoch == 0 or (
        request.rebalance_timeout_ms != -1
        and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        and request.topic_partitions is not None
    )
    if full_request or not _same_partitions(member, reconciled):
        response.assignment = assignment(reconciled.assigned)
    result = Result(response, records, timers)
    if not records and len(timers) == 1 and not group.regex_counts and group.members.get(member_id) is member:
        # Only the session timer moved: a steady heartbeat. Regex subscriptions are refreshed on
        # a heartbeat once their time is due, so a group with any is never answered so.
        result.again = _Steady(state, group, member, config.session_timeout_ms)
    return result


class _Steady:
    """``Result.again`` of a steady heartbeat: it stands while the group, its epochs and the
    member are the ones it was computed from (the runtime also drops it on any record replayed
    and on a new topic image); a repeat moves the session timer from its own time. Slotted: one
    is kept per steady member's connection."""

    __slots__ = ("state", "group", "member", "group_epoch", "assignment_epoch", "session_timeout_ms", "session")

    def __init__(
        self, state: ConsumerGroupsState, group: ConsumerGroup, member: ConsumerGroupMember, session_timeout_ms: int
    ) -> None:
        self.state, self.group, self.member, self.session_timeout_ms = state, group, member, session_timeout_ms
        self.group_epoch, self.assignment_epoch = group.group_epoch, group.assignment_epoch
        # The session timer's key and event, made once: a repeat only moves its deadline
        # (making them was most of what a repeat's group check cost).
        self.session = schedule_session(group.group_id, member.member_id, 0, 0)

    def __call__(self, now_ms: int) -> list[TimerOp] | None:
        group, member = self.group, self.member
        if (
            self.state.group(group.group_id) is not group
            or group.members.get(member.member_id) is not member
            or group.group_epoch != self.group_epoch
            or group.assignment_epoch != self.assignment_epoch
            or group.regex_counts
        ):
            return None
        session = self.session
        return [ScheduleTimer(session.key, now_ms + self.session_timeout_ms, session.event)]


# Groups of at least this many members have their heartbeats spread (``member_heartbeat_interval``);
# smaller ones are told the configured interval, as Kafka tells every member.
SPREAD_HEARTBEATS_FROM = 100


def member_heartbeat_interval(member_id: str, interval_ms: int, first: bool = False) -> int:
    """The interval a member of a big group is told to heartbeat at: up to a fifth shorter than
    the configured one, by a fraction fixed per member (from its id; deterministic); ``first``
    (a member waiting for its first assignment, ``_awaits_first_assignment``): anywhere from a
    fifth of it to all of it, by that fraction.

    Kafka tells every member the configured interval. Members that joined together (a rollout, a
    mass join) then heartbeat together for as long as they live, in bursts of the whole group
    every interval: with 5,000 members every heartbeat of a burst waits for those before it
    (measured: p99 of several seconds at 0.2 ms of serve CPU each). A period that differs per
    member spreads them over the interval within a few heartbeats. It is never longer than
    configured, so no session comes closer to its timeout; the cost is up to a fifth more
    heartbeats (about a tenth on average).

    Spread over a fifth, 5,000 members that joined together still came back within one second
    for their assignments, each a write (the epoch move): measured, that second burst of a mass
    join was its worst (client p99 4.4 s against 2.6 s for the joins themselves). The first
    interval after a join sets each member's phase for good, so only that one is spread over
    four fifths: the burst comes back over four seconds, and a member waits no longer than it
    would have for its assignment. Later intervals (the member holds or awaits no partitions
    at the group's epoch) are the narrow ones again, so steady heartbeats cost no more."""
    spread = interval_ms * 4 // 5 if first else interval_ms // 5
    return interval_ms - zlib.crc32(member_id.encode()) % (spread + 1) if spread else interval_ms


def _awaits_first_assignment(member: ConsumerGroupMember, group_epoch: int) -> bool:
    """A member that holds no partition, is revoking none, and is behind the group's epoch: it
    joined since the last target assignment (or in a storm of joins), and will heartbeat again
    for what the next one gives it."""
    return member.member_epoch < group_epoch and not member.assigned and not member.pending_revocation


def _resolve_member(
    group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> tuple[str, ConsumerGroupMember, ConsumerGroupMember | None, list[CoordinatorRecord], list[TimerOp]]:
    """Step 0: the member id (generated for a v0 join), the member as the group knows it, and the
    static member it replaces with the records and timer cancellations of that replacement."""
    group_id, epoch, config = group.group_id, request.member_epoch, ctx.consumer
    member_id = request.member_id
    if len(group.members) >= config.max_size and (not member_id or member_id not in group.members):
        raise GroupError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {config.max_size} members.",
        )
    if not member_id:
        member_id = generate_member_id(group, request.instance_id, ctx, len(group.members))

    records: list[CoordinatorRecord] = []
    timers: list[TimerOp] = []
    replaced: ConsumerGroupMember | None = None
    member = _get_or_create_member(group, request, member_id)
    if request.instance_id is not None and epoch == 0:
        existing = group.static_member(request.instance_id)
        # Kafka 4.4 (throwIfInstanceIdIsUnreleased): an instance id held by a consumer-protocol
        # member is taken over, by a new member id or by its own, only after it left with -2; a
        # live holder's epoch-0 heartbeat is refused too. A classic holder is replaced as is.
        if (
            existing is not None
            and not existing.uses_classic_protocol
            and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
        ):
            raise GroupError(
                ErrorCode.UNRELEASED_INSTANCE_ID,
                f"Static member {member_id} with instance id {request.instance_id} cannot join the group "
                f"because the instance id is owned by {existing.member_id} member.",
            )
        if existing is not None and existing.member_id != member_id:
            replaced = existing
            member = existing.evolve(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records += replace_static_member(group, existing, member)
            timers += cancel_member_timers(group_id, existing.member_id)
    return member_id, member, replaced, records, timers


def member_from_heartbeat(
    member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest, context: RequestContext
) -> ConsumerGroupMember:
    """Step 1: the member as this heartbeat describes it (fields left out keep their value)."""
    if _changes_nothing(member, request, context):
        # A steady heartbeat (every field left out, same client): the member as it is, rather
        # than an equal copy; ``replace`` of a frozen dataclass of 17 fields was the largest
        # single cost of a steady heartbeat's group logic.
        return member
    return member.evolve(
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
        ),
        server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(
            tuple(sorted(set(request.subscribed_topic_names)))
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        subscribed_topic_regex=(
            (request.subscribed_topic_regex or None)
            if request.subscribed_topic_regex is not None
            else member.subscribed_topic_regex
        ),
        client_id=context.client_id,
        client_host=context.client_host,
        has_metadata=True,
        classic_member_metadata=None,
    )


def _changes_nothing(
    member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest, context: RequestContext
) -> bool:
    """Whether ``member_from_heartbeat`` would return a member equal to ``member``."""
    return (
        member.has_metadata
        and member.classic_member_metadata is None
        and request.subscribed_topic_names is None
        and request.subscribed_topic_regex is None
        and request.rebalance_timeout_ms in (-1, member.rebalance_timeout_ms)
        and (request.instance_id is None or request.instance_id == member.instance_id)
        and (request.rack_id is None or request.rack_id == member.rack_id)
        and (request.server_assignor is None or request.server_assignor == member.server_assignor)
        and context.client_id == member.client_id
        and context.client_host == member.client_host
    )


def _get_or_create_member(
    group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest, member_id: str
) -> ConsumerGroupMember:
    epoch = request.member_epoch
    if request.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group.")
            return ConsumerGroupMember(member_id=member_id)
        throw_if_member_epoch_invalid(member, epoch, owned_partitions(request))
        return member
    existing = group.static_member(request.instance_id)
    if epoch == 0:
        if existing is not None and existing.member_id == member_id:
            return existing
        # A new static member, or a replacement the caller checks against the existing one.
        return group.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
    if existing is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {request.instance_id} was fenced by member {existing.member_id}.",
        )
    throw_if_member_epoch_invalid(existing, epoch, owned_partitions(request))
    return existing
