"""TargetAssignmentBuilder: run the group's assignor and turn the result into records.

Only members whose target changed get a ConsumerGroupTargetAssignmentMember record; the
ConsumerGroupTargetAssignmentMetadata record (epoch + timestamp) comes last, and the runtime
appends the whole list as one batch so a half-written target assignment is never visible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec, PartitionAssignor
from coordinator.groups.consumer import log_records
from coordinator.groups.consumer.member import ConsumerGroupMember, TopicPartitionSet
from coordinator.groups.topics import TopicsImage
from records import CoordinatorRecord


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
    ) -> TargetAssignmentResult:
        spec = GroupSpec(
            {
                mid: MemberSubscriptionSpec(
                    member_id=mid,
                    subscribed_topic_ids=subscribed_topic_ids[mid],
                    assigned=current_targets.get(mid, {}),
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                )
                for mid, m in members.items()
            }
        )
        new_targets = self.assignor.assign(spec, self.topics)
        records: list[CoordinatorRecord] = []
        for mid in sorted(members):
            new = {t: ps for t, ps in new_targets.get(mid, {}).items() if ps}
            old = {t: ps for t, ps in current_targets.get(mid, {}).items() if ps}
            if new != old:
                records.append(log_records.target_member_record(self.group_id, mid, new))
            new_targets[mid] = new
        records.append(log_records.target_metadata_record(self.group_id, self.group_epoch, now_ms))
        return TargetAssignmentResult(records, dict(new_targets))
