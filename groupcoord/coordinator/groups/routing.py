"""Which engine answers a request, and when a group changes protocol (Kafka's
GroupMetadataManager entry points: consumerGroupHeartbeat, classicGroupJoin and friends).

Routing goes by the group's type alone: a classic request for a consumer group goes to the
consumer group's engine (its classic members), whatever the migration policy. Group ids are one
namespace: a share group never converts, and a request of another protocol for it is refused as
Kafka refuses it (ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND, JoinGroup INCONSISTENT_GROUP_PROTOCOL,
the other classic requests UNKNOWN_MEMBER_ID), as is a ShareGroupHeartbeat for a group of another
type. The policy
(``group.consumer.migration.policy``) is read only where a group converts:

* upgrade: a consumer-protocol member joining a non-empty classic group
  (``convert_to_consumer_group_and_join``);
* downgrade: the last consumer-protocol member leaving, or being fenced, with only classic
  members left (``maybe_downgrade_after_leave``, ``fence_or_downgrade``).

A request that fails writes nothing: the tombstones that replace an empty group of the other
protocol are only added to a successful answer.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterable
from typing import Any

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups import classic, share
from groupcoord.coordinator.groups import consumer as cg
from groupcoord.coordinator.groups.classic.group import ClassicGroup
from groupcoord.coordinator.groups.classic.requests import UNKNOWN_MEMBER_ID, join_error, leave_identities
from groupcoord.coordinator.groups.consumer.fencing import fence_members
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.consumer.member import MemberState
from groupcoord.coordinator.groups.consumer.requests import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from groupcoord.coordinator.groups.consumer.timers import RebalanceTimeout, SessionTimeout
from groupcoord.coordinator.groups.consumer.validation import validate_heartbeat_request
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.groups.migration import classic_members
from groupcoord.coordinator.groups.migration.classic_members import leave_response, leaving_members
from groupcoord.coordinator.groups.migration.convert import (
    classic_teardown_timers,
    consumer_members_of,
    converted_session_timers,
    downgrade,
    downgrade_allowed,
    owned_assignments,
    parked_answers,
    scratch_state,
    upgrade_records,
    validate_online_upgrade,
)
from groupcoord.coordinator.groups.migration.timers import (
    ClassicMemberJoinTimeout,
    ClassicMemberSyncTimeout,
    cancel_classic_member_timers,
)
from groupcoord.coordinator.groups.share.group import ShareGroup
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park, Result, TimerOp
from groupcoord.records import CoordinatorRecord

LEAVE_EPOCHS = (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH)


def _heartbeat_error(error: GroupError) -> Result[ConsumerGroupHeartbeatResponse]:
    return Result(ConsumerGroupHeartbeatResponse(error_code=int(error.error), error_message=error.message))


def _failed(response: Any) -> bool:
    return not isinstance(response, Park) and response.error_code not in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED)


# --- ConsumerGroupHeartbeat -------------------------------------------------------------------


def consumer_group_heartbeat(
    state: GroupCoordinatorState, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ConsumerGroupHeartbeatResponse]:
    gid = request.group_id
    group = state.group(gid)
    try:
        # Kafka validates the request before the shard: a malformed one never meets a group.
        validate_heartbeat_request(request, ctx.request.api_version, ctx.consumer)
        if group is None and request.member_epoch != 0:
            # getOrMaybeCreateConsumerGroup (and consumerGroupLeave): only epoch 0 creates.
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")
        if isinstance(group, ShareGroup):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        if isinstance(group, ClassicGroup):
            return _consumer_group_heartbeat_to_classic_group(state, group, request, ctx)
    except GroupError as exc:
        return _heartbeat_error(exc)
    result = cg.consumer_group_heartbeat(state.consumer, request, ctx)
    if request.member_epoch in LEAVE_EPOCHS and isinstance(group, ConsumerGroup):
        return maybe_downgrade_after_leave(state, group, request, result, ctx)
    return result


def _consumer_group_heartbeat_to_classic_group(
    state: GroupCoordinatorState, group: ClassicGroup, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ConsumerGroupHeartbeatResponse]:
    not_consumer = GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is not a consumer group.")
    if request.member_epoch != 0:
        raise not_consumer
    if group.is_empty():
        # An empty classic group is replaced by a consumer group (maybeDeleteEmptyClassicGroup).
        result = cg.consumer_group_heartbeat(state.consumer, request, ctx)
        if _failed(result.response):
            return Result(result.response)
        result.records = [*group.tombstones(), *result.records]
        return result
    refusal = validate_online_upgrade(group, ctx.consumer)
    if refusal is not None:
        raise refusal  # GROUP_ID_NOT_FOUND naming the reason, as Kafka's validateOnlineUpgrade
    return convert_to_consumer_group_and_join(state, group, request, ctx)


def convert_to_consumer_group_and_join(
    state: GroupCoordinatorState, group: ClassicGroup, request: ConsumerGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ConsumerGroupHeartbeatResponse]:
    """Online upgrade (convertToConsumerGroup): the classic group becomes a consumer group and the
    heartbeat is processed against it, in one batch. A classic rebalance in progress is cut short:
    its parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS, so those members
    rejoin, now inside the consumer group."""
    gid = group.group_id
    try:
        owned = owned_assignments(group, state.classic.records.get(gid))
        conversion = upgrade_records(group, ctx.image, owned)
        members = consumer_members_of(group, ctx.image, owned)
    except GroupError as exc:
        return _heartbeat_error(exc)
    joined = cg.consumer_group_heartbeat(scratch_state(conversion), request, ctx)
    if _failed(joined.response):
        return Result(joined.response)
    records: list[CoordinatorRecord] = [classic.group_metadata_tombstone(gid), *conversion, *joined.records]
    timers: list[TimerOp] = [
        *classic_teardown_timers(state.classic, group),
        *converted_session_timers(gid, members, ctx.now_ms),
        *joined.timers,
    ]
    return Result(joined.response, records, timers, parked_answers(group))


def maybe_downgrade_after_leave(
    state: GroupCoordinatorState,
    group: ConsumerGroup,
    request: ConsumerGroupHeartbeatRequest,
    left: Result[ConsumerGroupHeartbeatResponse],
    ctx: GroupContext,
) -> Result[ConsumerGroupHeartbeatResponse]:
    """After a leave (epoch -1): if only classic members remain and the policy allows it, the
    group becomes a classic group instead of losing one member (consumerGroupLeave +
    convertToClassicGroup). A static member's temporary leave (-2) keeps its place: no change."""
    response = left.response
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    if (
        request.member_epoch != LEAVE_GROUP_MEMBER_EPOCH
        or response.error_code != ErrorCode.NONE
        or response.member_id is None
        or not downgrade_allowed(group, [response.member_id], ctx.consumer, ctx.classic)
    ):
        return left
    converted = downgrade(state.classic, group, [response.member_id], ctx)
    if converted is None:
        return left
    return Result(response, converted.records, converted.timers, converted.completions)


# --- ShareGroupHeartbeat ----------------------------------------------------------------------


def share_group_heartbeat(
    state: GroupCoordinatorState, request: ShareGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ShareGroupHeartbeatResponse]:
    """Kafka validates the request before the shard, then getOrMaybeCreateShareGroup refuses an id
    held by a group of another type (an offsets-only group is a classic group in Kafka)."""
    gid = request.group_id
    try:
        share.validate_share_heartbeat(request)
        if state.group_known(gid) and state.share.group(gid) is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
    except GroupError as exc:
        return Result(ShareGroupHeartbeatResponse(error_code=int(exc.error), error_message=exc.message))
    return share.share_group_heartbeat(state.share, request, ctx)


# --- classic requests --------------------------------------------------------------------------


def classic_group_join(
    state: GroupCoordinatorState, request: JoinGroupRequest, token: Hashable, ctx: GroupContext
) -> Result[JoinGroupResponse]:
    group = state.group(request.group_id)
    if isinstance(group, ShareGroup):
        # Kafka's classicGroupJoin: the group exists and is neither classic nor consumer.
        return Result(join_error(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    if isinstance(group, ConsumerGroup) and not group.is_empty():
        return classic_group_join_to_consumer_group(state, request, ctx)
    return classic_group_join_to_classic_group(state, group, request, token, ctx)


def classic_group_join_to_consumer_group(
    state: GroupCoordinatorState, request: JoinGroupRequest, ctx: GroupContext
) -> Result[JoinGroupResponse]:
    """A classic member joins (or rejoins) a non-empty consumer group: online migration. When it
    replaces the last consumer-protocol static member, the group becomes classic
    (validateOnlineDowngradeWithReplacedMember)."""
    group = state.consumer.group(request.group_id)
    assert group is not None
    replaced = (
        group.static_member(request.group_instance_id)
        if request.group_instance_id is not None and request.member_id == UNKNOWN_MEMBER_ID
        else None
    )
    joined = classic_members.classic_join_to_consumer_group(state.consumer, request, ctx)
    response = joined.response
    if (
        replaced is None
        or replaced.uses_classic_protocol
        or not isinstance(response, JoinGroupResponse)
        or response.error_code != ErrorCode.NONE
        or not _downgrade_allowed_with_replaced_member(group, replaced.member_id, ctx)
    ):
        return joined
    # The group as the join left it (the replacement applied), converted in the same batch.
    after = scratch_state([])
    after.groups[group.group_id] = copy.deepcopy(group)
    for record in joined.records:
        after.replay(record)
    converted_from = after.group(group.group_id)
    assert converted_from is not None
    # Kafka 4.4 rebalances the converted group only when the joining member's subscription differs
    # from the replaced member's (KAFKA-19546) or the target assignment lags the group epoch
    # (KAFKA-20273): otherwise everyone keeps its target, and a rolling downgrade of static members
    # causes no stop-the-world. We also rebalance while any member is still converging: the
    # classic group hands out targets, and a partition not yet revoked would have two owners.
    joined_member = converted_from.members[response.member_id]
    rebalance = not joined_member.subscription_equals(replaced) or not _settled(converted_from)
    converted = downgrade(state.classic, converted_from, [], ctx, rebalance)
    if converted is None:
        return joined
    state.consumer.classic_join_deadlines.pop((group.group_id, response.member_id), None)
    return Result(
        response, [*joined.records, *converted.records], joined.timers + converted.timers, converted.completions
    )


def classic_group_join_to_classic_group(
    state: GroupCoordinatorState,
    group: Any,
    request: JoinGroupRequest,
    token: Hashable,
    ctx: GroupContext,
) -> Result[JoinGroupResponse]:
    result = classic.classic_join(state.classic, request, token, ctx)
    if isinstance(group, ConsumerGroup) and not _failed(result.response):
        # An empty consumer group becomes a classic group (maybeDeleteEmptyConsumerGroup).
        result.records = [*group.tombstones(), *result.records]
    return result


def _settled(group: ConsumerGroup) -> bool:
    """The target is current and every member holds exactly its part of it."""
    return group.group_epoch == group.assignment_epoch and all(
        m.state == MemberState.STABLE and m.member_epoch == group.assignment_epoch for m in group.members.values()
    )


def _downgrade_allowed_with_replaced_member(group: ConsumerGroup, replaced_id: str, ctx: GroupContext) -> bool:
    """validateOnlineDowngradeWithReplacedMember: every other member speaks the classic protocol
    (the replacement does), the policy allows a downgrade, and the size fits a classic group."""
    others = (m for mid, m in group.members.items() if mid != replaced_id)
    return (
        all(m.uses_classic_protocol for m in others)
        and ctx.consumer.downgrade_enabled
        and len(group.members) <= ctx.classic.max_size
    )


def classic_group_sync(
    state: GroupCoordinatorState, request: SyncGroupRequest, token: Hashable, ctx: GroupContext
) -> Result[SyncGroupResponse]:
    if isinstance(state.group(request.group_id), ConsumerGroup):
        return classic_members.classic_sync_to_consumer_group(state.consumer, request, ctx)
    return classic.classic_sync(state.classic, request, token, ctx)


def classic_group_heartbeat(
    state: GroupCoordinatorState, request: HeartbeatRequest, ctx: GroupContext
) -> Result[HeartbeatResponse]:
    if isinstance(state.group(request.group_id), ConsumerGroup):
        return classic_members.classic_heartbeat_to_consumer_group(state.consumer, request, ctx)
    return classic.classic_heartbeat(state.classic, request, ctx)


def classic_group_leave(
    state: GroupCoordinatorState, request: LeaveGroupRequest, ctx: GroupContext
) -> Result[LeaveGroupResponse]:
    group = state.group(request.group_id) if request.group_id else None
    if not isinstance(group, ConsumerGroup):
        return classic.classic_leave(state.classic, request, ctx)
    valid, answers = leaving_members(group, leave_identities(request, ctx.request.api_version))
    response = leave_response(ctx.request.api_version, answers)
    if not valid:
        return Result(response)
    removed = fence_or_downgrade(state, group, valid, ctx)
    return Result(response, removed.records, removed.timers, removed.completions)


# --- fencing and timers ------------------------------------------------------------------------


def fence_or_downgrade(
    state: GroupCoordinatorState, group: ConsumerGroup, leaving: Iterable[str], ctx: GroupContext
) -> Result[None]:
    """Remove ``leaving``; if only classic members remain (and the policy allows), the group
    becomes a classic group instead (consumerGroupFenceMembers + convertToClassicGroup)."""
    gone = list(dict.fromkeys(leaving))
    if downgrade_allowed(group, gone, ctx.consumer, ctx.classic):
        converted = downgrade(state.classic, group, gone, ctx)
        if converted is not None:
            for mid in gone:
                state.consumer.classic_join_deadlines.pop((group.group_id, mid), None)
            return converted
    records, timers = fence_members(group, gone, ctx.image)
    for mid in gone:
        if mid in group.members:
            # Classic members also have join and sync timers, and a join deadline.
            timers += cancel_classic_member_timers(group.group_id, mid)
            state.consumer.classic_join_deadlines.pop((group.group_id, mid), None)
    return Result(None, records, timers)


def on_timer(state: GroupCoordinatorState, event: Any, ctx: GroupContext) -> Result[None]:
    """Timers of consumer groups: a classic member's join or sync timeout, and any fencing that
    leaves only classic members (a downgrade); everything else is the consumer engine's. A share
    member's session timeout is the share engine's."""
    if isinstance(event, share.ShareSessionTimeout):
        return share.on_session_timeout(state.share, event.group_id, event.member_id, ctx.image)
    if isinstance(event, (ClassicMemberJoinTimeout, ClassicMemberSyncTimeout)):
        if isinstance(event, ClassicMemberJoinTimeout):
            state.consumer.classic_join_deadlines.pop((event.group_id, event.member_id), None)
        group = state.consumer.group(event.group_id)
        member = group.members.get(event.member_id) if group is not None else None
        if group is None or member is None or not member.uses_classic_protocol:
            return Result(None)
        return fence_or_downgrade(state, group, [member.member_id], ctx)
    if isinstance(event, (SessionTimeout, RebalanceTimeout)):
        converted = _downgrade_on_timeout(state, event, ctx)
        if converted is not None:
            return converted
    return cg.on_timer(state.consumer, event, ctx.now_ms, ctx.image, ctx.consumer)


def _downgrade_on_timeout(
    state: GroupCoordinatorState, event: SessionTimeout | RebalanceTimeout, ctx: GroupContext
) -> Result[None] | None:
    group = state.consumer.group(event.group_id)
    member = group.members.get(event.member_id) if group is not None else None
    if group is None or member is None:
        return None
    if isinstance(event, RebalanceTimeout) and (
        member.member_epoch != event.member_epoch or member.state != MemberState.UNREVOKED_PARTITIONS
    ):
        return None
    if not downgrade_allowed(group, [member.member_id], ctx.consumer, ctx.classic):
        return None
    converted = downgrade(state.classic, group, [member.member_id], ctx)
    if converted is not None:
        state.consumer.classic_join_deadlines.pop((group.group_id, member.member_id), None)
    return converted
