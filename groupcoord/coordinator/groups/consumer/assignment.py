"""Running the chosen assignor over a (possibly updated) view of a group's members."""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator.groups.assignors import assignor
from groupcoord.coordinator.groups.assignors.target_index import TargetIndex
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.group import ResolvedRegularExpression, choose_assignor
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, TopicPartitionSet
from groupcoord.coordinator.groups.consumer.subscriptions import assignor_preferences, member_topic_id_sets
from groupcoord.coordinator.groups.consumer.target_assignment import TargetAssignmentBuilder, TargetAssignmentResult
from groupcoord.coordinator.groups.topics import TopicsImage


def can_compute_target(assignment_timestamp: int, now_ms: int, config: ConsumerGroupConfig) -> bool:
    """Throttle: at most one target assignment per group.consumer.assignment.interval.ms."""
    return now_ms - assignment_timestamp >= config.assignment_interval_ms


def compute_target_assignment(
    group_id: str,
    group_epoch: int,
    members: Mapping[str, ConsumerGroupMember],
    regexes: Mapping[str, ResolvedRegularExpression],
    current_targets: Mapping[str, TopicPartitionSet],
    image: TopicsImage,
    config: ConsumerGroupConfig,
    now_ms: int,
    index: TargetIndex | None = None,
) -> TargetAssignmentResult:
    """``index`` is the group's TargetIndex when ``current_targets`` is the group's own target
    (it lets the uniform assignor work incrementally); None otherwise."""
    name = choose_assignor(assignor_preferences(members.values()), config.assignors, config.default_assignor)
    subscribed = member_topic_id_sets(members, regexes, image)
    builder = TargetAssignmentBuilder(group_id, group_epoch, assignor(name), image)
    return builder.build(members, subscribed, current_targets, now_ms, index)
