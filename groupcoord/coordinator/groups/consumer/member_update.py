"""The member update shared by ConsumerGroupHeartbeat and classic members of consumer groups
(Kafka's consumerGroupHeartbeat and classicGroupJoinToConsumerGroup), in Kafka's steps:

0. identify the member; a static member joining with a new member id replaces its previous
   incarnation (``replace_static_member``: one set of six records, no rebalance);
1. the member as the request describes it (each entry point reads its own request: the
   heartbeat fields, or the classic Subscription bytes);
2. bump the group epoch if the member set, the subscriptions or the subscribed topics' metadata
   changed, and recompute the target assignment when it lags (``update_group_epoch_and_target``);
3. move the member one step towards its target (``reconcile_member``, CurrentAssignmentBuilder).

Nothing here mutates the state: the records, replayed by the runtime, do.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.assignment import can_compute_target, compute_target_assignment
from groupcoord.coordinator.groups.consumer.current_assignment import CurrentAssignmentBuilder
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, TopicPartitionSet
from groupcoord.coordinator.groups.consumer.regex_refresh import maybe_schedule_resolution
from groupcoord.coordinator.groups.consumer.requests import Owned
from groupcoord.coordinator.groups.consumer.subscriptions import member_topic_ids, subscribed_names_of
from groupcoord.coordinator.groups.consumer.timers import schedule_assignment
from groupcoord.coordinator.groups.context import GroupContext
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.runtime.api import TimerOp
from groupcoord.records import CoordinatorRecord


def replace_static_member(
    group: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember
) -> list[CoordinatorRecord]:
    """Step 0: the new incarnation of a static member takes over the old one's assignment and
    target; the group epoch does not move (Kafka's replaceMember)."""
    gid = group.group_id
    return [
        log_records.current_assignment_tombstone(gid, old.member_id),
        log_records.target_member_tombstone(gid, old.member_id),
        log_records.member_metadata_tombstone(gid, old.member_id),
        log_records.member_metadata_record(gid, new),
        log_records.target_member_record(gid, new.member_id, group.target.get(old.member_id, {})),
        log_records.current_assignment_record(gid, new),
    ]


@dataclass(frozen=True, slots=True)
class GroupUpdate:
    """What steps 1 (group epoch) and 2 (target assignment) of a member update decided."""

    records: list[CoordinatorRecord]
    timers: list[TimerOp]
    group_epoch: int
    target_epoch: int
    member_target: TopicPartitionSet
    regexes: dict[str, ResolvedRegularExpression]
    # The static member the updated one replaced (it inherits what its predecessor owns).
    replaced: ConsumerGroupMember | None = None


def update_group_epoch_and_target(
    group: ConsumerGroup,
    updated: ConsumerGroupMember,
    replaced: ConsumerGroupMember | None,
    membership_changed: bool,
    ctx: GroupContext,
) -> GroupUpdate:
    """Bump the group epoch if the member set, the subscriptions or the subscribed topics'
    metadata changed, then recompute the target assignment when it lags (at most once per
    assignment interval). Shared by consumer-protocol heartbeats and classic members' joins."""
    group_id, member_id = group.group_id, updated.member_id
    image, now_ms, config = ctx.image, ctx.now_ms, ctx.consumer
    records: list[CoordinatorRecord] = []
    # What the group subscribes to with this update, from the group's counts adjusted for the
    # members it changes: a walk over every member per join made a mass join of n members cost
    # n^2 (5,000 members: the largest part of the serve CPU while they joined).
    changed = membership_changed or replaced is not None
    name_counts, regex_counts = (
        group.subscription_counts_with((group.members.get(member_id), replaced), updated)
        if changed
        else (group.topic_name_counts, group.regex_counts)
    )

    regexes, regex_records, timers = _update_regexes(group, set(regex_counts), ctx)
    records += regex_records

    if not changed and not regex_records:
        subscribed_names = group.subscribed_topic_names()
    else:
        subscribed_names = subscribed_names_of(name_counts, regex_counts, regexes)
    metadata_hash = image.metadata_hash(subscribed_names)

    group_epoch = group.group_epoch
    if membership_changed or metadata_hash != group.metadata_hash:
        group_epoch += 1
        records.append(log_records.group_epoch_record(group_id, group_epoch, metadata_hash))

    # Step 2: the target assignment, at most once per assignment interval.
    targets: dict[str, TopicPartitionSet] = group.target
    if replaced is not None:
        targets = dict(group.target)
        targets[member_id] = targets.pop(replaced.member_id, {})
    target_epoch = group.assignment_epoch
    member_target: TopicPartitionSet = targets.get(member_id, {})
    if group_epoch > group.assignment_epoch:
        if can_compute_target(group.assignment_timestamp, now_ms, config):
            members_view = dict(group.members)
            if replaced is not None:
                del members_view[replaced.member_id]
            members_view[member_id] = updated
            # The group's TargetIndex describes group.target, not a copy with a static member renamed.
            index = group.target_index() if targets is group.target else None
            result = compute_target_assignment(
                group_id, group_epoch, members_view, regexes, targets, image, config, now_ms, index
            )
            records += result.records
            target_epoch = group_epoch
            member_target = result.targets.get(member_id, {})
        else:
            timers.append(schedule_assignment(group_id, group.assignment_timestamp + config.assignment_interval_ms))

    return GroupUpdate(records, timers, group_epoch, target_epoch, member_target, regexes, replaced)


def reconcile_member(
    group: ConsumerGroup,
    updated: ConsumerGroupMember,
    step: GroupUpdate,
    image: TopicsImage,
    owned: Owned,
    subscription_changed: bool,
) -> ConsumerGroupMember:
    """Step 3: move the member one step towards its target (CurrentAssignmentBuilder). A static
    member that replaced ``replaced`` inherits what its predecessor still owns."""
    if updated.is_reconciled_to(step.target_epoch) and not subscription_changed:
        return updated
    member_id = updated.member_id
    replaced_id = step.replaced.member_id if step.replaced is not None else None

    def owner_of(topic_id: str, partition: int) -> str | None:
        owner = group.owner_of(topic_id, partition)
        return member_id if owner is not None and owner == replaced_id else owner

    return CurrentAssignmentBuilder(
        updated,
        step.target_epoch,
        step.member_target,
        member_topic_ids(updated, step.regexes, image),
        owner_of,
        owned,
        subscription_changed,
    ).build()


def _update_regexes(
    group: ConsumerGroup, in_use: set[str], ctx: GroupContext
) -> tuple[dict[str, ResolvedRegularExpression], list[CoordinatorRecord], list[TimerOp]]:
    """Drop the resolutions no member uses any more (tombstones, at once), and ask for the
    group's regexes to be resolved when that is due (``regex_refresh``: off the heartbeat, as
    Kafka does). The heartbeat goes on with the resolutions the group has: a new regex matches
    nothing until its resolution lands."""
    regexes = group.regexes
    records: list[CoordinatorRecord] = []
    unused = sorted(set(regexes) - in_use)
    if unused:
        regexes = {r: v for r, v in regexes.items() if r in in_use}
        records = [log_records.regex_tombstone(group.group_id, r) for r in unused]
    timers: list[TimerOp] = list(
        maybe_schedule_resolution(
            group, regexes, in_use, ctx.image.version, ctx.now_ms, ctx.consumer, ctx.request.may_describe_topic
        )
    )
    return regexes, records, timers
