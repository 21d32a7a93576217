"""TargetAssignmentBuilder: run the group's assignor and turn the result into records.

Only members whose target changed get a ConsumerGroupTargetAssignmentMember record; the
ConsumerGroupTargetAssignmentMetadata record (epoch + timestamp) comes last, and the runtime
appends the whole list as one batch so a half-written target assignment is never visible.

Two ways to the same result. The full way builds the assignor's GroupSpec from every member and
diffs every member's new target against its old one. The incremental way, for the uniform
assignor on a homogeneous, rack-free group whose current targets the group's TargetIndex
describes, asks ``uniform_incremental`` for the members whose target changes and writes records
for those alone: a member joining or leaving a 5,000-member group costs the ~10 partitions that
move, not the 5,000 members. ``uniform_incremental`` proves, and the property tests check, that
both ways produce the same records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import filterfalse, repeat
from operator import is_

from groupcoord.coordinator.groups.assignors import (
    GroupSpec,
    MemberSubscriptionSpec,
    PartitionAssignor,
    UniformAssignor,
)
from groupcoord.coordinator.groups.assignors.target_index import TargetIndex
from groupcoord.coordinator.groups.assignors.uniform_incremental import reassign_homogeneous
from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, TopicPartitionSet
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.records import CoordinatorRecord

_EMPTY: TopicPartitionSet = {}


@dataclass(slots=True)
class TargetAssignmentResult:
    records: list[CoordinatorRecord]
    targets: dict[str, TopicPartitionSet]


class TargetAssignmentBuilder:
    def __init__(self, group_id: str, group_epoch: int, assignor: PartitionAssignor, topics: TopicsImage) -> None:
        self.group_id = group_id
        self.group_epoch = group_epoch
        self.assignor = assignor
        self.topics = topics

    def build(
        self,
        members: Mapping[str, ConsumerGroupMember],
        subscribed_topic_ids: Mapping[str, frozenset[str]],
        current_targets: Mapping[str, TopicPartitionSet],
        now_ms: int,
        index: TargetIndex | None = None,
    ) -> TargetAssignmentResult:
        """``index``, when given, must describe ``current_targets`` (the group's own TargetIndex
        with the group's own targets); it enables the incremental way."""
        changes = None
        if index is not None:
            changes = self._changes_incremental(members, subscribed_topic_ids, current_targets, index)
        if changes is None:
            changes = self._changes_full(members, subscribed_topic_ids, current_targets)
        records = [log_records.target_member_record(self.group_id, mid, changes[mid]) for mid in sorted(changes)]
        records.append(log_records.target_metadata_record(self.group_id, self.group_epoch, now_ms))
        targets = dict(current_targets)
        for mid in list(filterfalse(members.__contains__, current_targets)):
            del targets[mid]
        targets.update(changes)
        return TargetAssignmentResult(records, targets)

    def _changes_full(
        self,
        members: Mapping[str, ConsumerGroupMember],
        subscribed_topic_ids: Mapping[str, frozenset[str]],
        current_targets: Mapping[str, TopicPartitionSet],
    ) -> dict[str, TopicPartitionSet]:
        spec = GroupSpec(
            {
                mid: MemberSubscriptionSpec(
                    member_id=mid,
                    subscribed_topic_ids=subscribed_topic_ids[mid],
                    assigned=current_targets.get(mid, _EMPTY),
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                )
                for mid, m in members.items()
            }
        )
        changes: dict[str, TopicPartitionSet] = {}
        for mid, new in self.assignor.assign(spec, self.topics).items():
            old = current_targets.get(mid, _EMPTY)
            if new is old:  # the assignor handed the member's own mapping back: unchanged
                continue
            new = {t: ps for t, ps in new.items() if ps}
            if new != {t: ps for t, ps in old.items() if ps}:
                changes[mid] = new
        return changes

    def _changes_incremental(
        self,
        members: Mapping[str, ConsumerGroupMember],
        subscribed_topic_ids: Mapping[str, frozenset[str]],
        current_targets: Mapping[str, TopicPartitionSet],
        index: TargetIndex,
    ) -> dict[str, TopicPartitionSet] | None:
        if not isinstance(self.assignor, UniformAssignor) or not members:
            return None
        first = next(iter(subscribed_topic_ids.values()))
        # Identity is enough: compute_target_assignment hands equal subscriptions over as one object.
        if not all(map(is_, subscribed_topic_ids.values(), repeat(first))):
            return None
        if self._racks_in_use(members, first):
            return None
        changes = reassign_homogeneous(members.keys(), current_targets, index, first, self.topics)
        if changes is None:
            return None
        return {mid: ps for mid, ps in changes.items() if ps != current_targets.get(mid, _EMPTY)}

    def _racks_in_use(self, members: Mapping[str, ConsumerGroupMember], subscribed: frozenset[str]) -> bool:
        return self.topics.any_racks(subscribed) and any(m.rack_id for m in members.values())
