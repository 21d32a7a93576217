"""ShareGroupHeartbeat: join, heartbeat and leave of a share group in one RPC (KIP-932; Kafka's
GroupMetadataManager.shareGroupHeartbeat), in Kafka's steps:

1. create or update the member; bump the group epoch if its subscription changed, or the metadata
   hash of the subscribed topics changed (topics created, deleted, re-created or grown);
2. if the target assignment lags the group epoch, run the ``simple`` assignor over the whole
   group (no assignment interval: Kafka runs it at once for share groups);
3. move the member to its target in one step: a share-partition is never revoked first, since
   several members may hold it at once (ShareGroupAssignmentBuilder).

A leave (epoch -1), a session timeout and a fenced member all go through ``fence_member``.
Nothing here mutates the state: the result's records, replayed by the runtime, do.

Where this differs from Kafka 4.2: every subscribed partition is assignable at once. Kafka first
initializes each share-partition's state through its share coordinator
(ShareGroupStatePartitionMetadata) and assigns only initialized partitions; here the
share-partition state is this coordinator's own, created when the partition is first fetched.
"""

from __future__ import annotations

from dataclasses import replace

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec
from groupcoord.coordinator.groups.assignors.simple import SimpleAssignor
from groupcoord.coordinator.groups.config import ShareGroupConfig
from groupcoord.coordinator.groups.consumer.member import MemberState, TopicPartitionSet
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.groups.share import log_records
from groupcoord.coordinator.groups.share.group import ShareGroup
from groupcoord.coordinator.groups.share.member import ShareGroupMember
from groupcoord.coordinator.groups.share.state import ShareGroupsState
from groupcoord.coordinator.groups.share.timers import cancel_session, schedule_session
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.schema import topic_id_uuid
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatResponseAssignment,
    ShareGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.runtime.api import Result, TimerOp
from groupcoord.records import CoordinatorRecord

LEAVE_GROUP_MEMBER_EPOCH = -1
ASSIGNOR = SimpleAssignor()


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_REQUEST, message)


def _blank(value: str | None) -> bool:
    """Kafka's throwIfEmptyString: a value given but empty once trimmed."""
    return value is not None and not value.strip()


def validate_share_heartbeat(request: ShareGroupHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid: checked before the group is looked up."""
    if _blank(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if _blank(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if _blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise _invalid("SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")


def share_group_heartbeat(
    state: ShareGroupsState, request: ShareGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ShareGroupHeartbeatResponse]:
    """The request is valid and the group id names no group of another type: the caller
    (``groupcoord.coordinator.groups.routing``) checked both, as Kafka's service and shard do."""
    try:
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return _leave(state, request, ctx)
        return _heartbeat(state, request, ctx)
    except GroupError as exc:
        return Result(ShareGroupHeartbeatResponse(error_code=int(exc.error), error_message=exc.message))


def _leave(
    state: ShareGroupsState, request: ShareGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ShareGroupHeartbeatResponse]:
    group = state.group(request.group_id)
    if group is None:
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    if request.member_id not in group.members:
        raise _unknown_member(group, request.member_id)
    records, timers = fence_member(group, request.member_id, ctx.image)
    response = ShareGroupHeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch)
    return Result(response, records, timers)


def _unknown_member(group: ShareGroup, member_id: str) -> GroupError:
    return GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")


def _throw_if_member_epoch_invalid(member: ShareGroupMember, received: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid: the member's epoch, or its previous one (the
    answer that bumped it was lost); a share member owns nothing exclusively, so no owned
    partitions are compared. Epoch 0 is a rejoin of a member that lost its state (it was fenced,
    or its client restarted with the same id), as KIP-848 specifies and Kafka allows since
    KAFKA-19233 (consumer groups already did here): it gets its current epoch and assignment."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _heartbeat(
    state: ShareGroupsState, request: ShareGroupHeartbeatRequest, ctx: GroupContext
) -> Result[ShareGroupHeartbeatResponse]:
    config: ShareGroupConfig = ctx.share
    gid, mid, epoch = request.group_id, request.member_id, request.member_epoch
    group = state.group(gid)
    if group is None:
        if epoch != 0:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {gid} not found.")
        group = ShareGroup(gid)
    if len(group.members) >= config.max_size and mid not in group.members:
        raise GroupError(
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            f"The share group has reached its maximum capacity of {config.max_size} members.",
        )
    member = group.members.get(mid)
    if member is None:
        if epoch != 0:
            raise _unknown_member(group, mid)
        member = ShareGroupMember(member_id=mid)
    else:
        _throw_if_member_epoch_invalid(member, epoch)

    # Step 1: the member as this heartbeat describes it (fields left out keep their value).
    updated = replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        subscribed_topic_names=(
            tuple(sorted(set(request.subscribed_topic_names)))
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names
        ),
        client_id=ctx.request.client_id,
        client_host=ctx.request.client_host,
        has_metadata=True,
    )
    records: list[CoordinatorRecord] = []
    if not member.has_metadata or not updated.metadata_equals(member):
        records.append(log_records.member_metadata_record(gid, updated))
    subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
    members = dict(group.members)
    members[mid] = updated
    metadata_hash = ctx.image.metadata_hash(frozenset(n for m in members.values() for n in m.subscribed_topic_names))
    group_epoch = group.group_epoch
    if subscription_changed or metadata_hash != group.metadata_hash:
        group_epoch += 1
        records.append(log_records.group_epoch_record(gid, group_epoch, metadata_hash))

    # Step 2: the target assignment, whenever it lags the group epoch.
    target_epoch, member_target = group.assignment_epoch, group.target.get(mid, {})
    if group_epoch > group.assignment_epoch:
        targets, target_records = compute_target_assignment(group, group_epoch, members, ctx.image)
        records += target_records
        target_epoch, member_target = group_epoch, targets.get(mid, {})

    # Step 3: the member takes its target (only topics it still subscribes to) in one step.
    reconciled = updated
    if subscription_changed or not updated.is_reconciled_to(target_epoch):
        subscribed = group.topic_ids(updated.subscribed_topic_names, ctx.image)
        assigned = {t: ps for t, ps in member_target.items() if t in subscribed and ps}
        if target_epoch != updated.member_epoch:
            reconciled = replace(
                updated,
                state=MemberState.STABLE,
                assigned=assigned,
                previous_member_epoch=updated.member_epoch,
                member_epoch=target_epoch,
            )
        else:
            reconciled = replace(updated, assigned=assigned)
    if not member.has_assignment or not reconciled.assignment_equals(member):
        reconciled = replace(reconciled, has_assignment=True)
        records.append(log_records.current_assignment_record(gid, reconciled))

    response = ShareGroupHeartbeatResponse(
        member_id=mid, member_epoch=reconciled.member_epoch, heartbeat_interval_ms=config.heartbeat_interval_ms
    )
    # The assignment goes with a full request (a join, or any heartbeat naming its topics) and
    # whenever it changed.
    if (
        epoch == 0
        or request.subscribed_topic_names is not None
        or _nonempty(member.assigned) != _nonempty(reconciled.assigned)
    ):
        response.assignment = heartbeat_assignment(reconciled.assigned)
    timers: list[TimerOp] = [schedule_session(gid, mid, ctx.now_ms, config.session_timeout_ms)]
    return Result(response, records, timers)


def _nonempty(ps: TopicPartitionSet) -> dict[str, frozenset[int]]:
    return {t: frozenset(p) for t, p in ps.items() if p}


def compute_target_assignment(
    group: ShareGroup, group_epoch: int, members: dict[str, ShareGroupMember], image: TopicsImage
) -> tuple[dict[str, dict[str, frozenset[int]]], list[CoordinatorRecord]]:
    """The simple assignor over ``members``: a record for each member whose target changed, then
    the target's epoch, one batch (Kafka's ShareTargetAssignmentBuilder)."""
    spec = GroupSpec(
        {
            mid: MemberSubscriptionSpec(
                member_id=mid,
                subscribed_topic_ids=group.topic_ids(m.subscribed_topic_names, image),
                assigned=group.target.get(mid, {}),
                rack_id=m.rack_id,
            )
            for mid, m in members.items()
        }
    )
    assigned = ASSIGNOR.assign(spec, image)
    targets: dict[str, dict[str, frozenset[int]]] = {}
    records: list[CoordinatorRecord] = []
    for mid in sorted(members):
        new = {t: ps for t, ps in assigned.get(mid, {}).items() if ps}
        old = {t: ps for t, ps in group.target.get(mid, {}).items() if ps}
        if new != old:
            records.append(log_records.target_member_record(group.group_id, mid, new))
        targets[mid] = new
    records.append(log_records.target_metadata_record(group.group_id, group_epoch))
    return targets, records


def fence_member(
    group: ShareGroup, member_id: str, image: TopicsImage
) -> tuple[list[CoordinatorRecord], list[TimerOp]]:
    """Remove a member (leave, session timeout; Kafka's shareGroupFenceMember): its three records
    tombstoned and the group epoch bumped with the metadata hash of what the others subscribe to,
    so the next heartbeat reassigns its partitions."""
    gid = group.group_id
    remaining = frozenset(n for mid, m in group.members.items() if mid != member_id for n in m.subscribed_topic_names)
    records = log_records.member_tombstones(gid, member_id)
    records.append(log_records.group_epoch_record(gid, group.group_epoch + 1, image.metadata_hash(remaining)))
    return records, [cancel_session(gid, member_id)]


def heartbeat_assignment(partitions: TopicPartitionSet) -> ShareGroupHeartbeatResponseAssignment:
    return ShareGroupHeartbeatResponseAssignment(
        topic_partitions=[
            ShareGroupHeartbeatResponseTopicPartitions(topic_id=topic_id_uuid(t), partitions=sorted(ps))
            for t, ps in sorted(partitions.items())
            if ps
        ]
    )


def on_session_timeout(state: ShareGroupsState, group_id: str, member_id: str, image: TopicsImage) -> Result[None]:
    """The timer may outlive its member (it left, or the group was deleted): checked again here."""
    group = state.group(group_id)
    if group is None or member_id not in group.members:
        return Result(None)
    records, timers = fence_member(group, member_id, image)
    return Result(None, records, timers)
