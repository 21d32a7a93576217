"""Removing a member from a group: leave (-1), session timeout, rebalance timeout.

Kafka's consumerGroupFenceMember: tombstone the member's three records, drop regexes only it
used, bump the group epoch with the metadata hash of what the others still subscribe to, and
when the group becomes empty move the assignment epoch along with timestamp 0 so the next
member's first assignment is not throttled.
"""

from __future__ import annotations

from coordinator.groups.consumer import log_records
from coordinator.groups.consumer.group import ConsumerGroup
from coordinator.groups.consumer.member import ConsumerGroupMember
from coordinator.groups.consumer.subscriptions import group_topic_names
from coordinator.groups.consumer.timers import cancel_member_timers
from coordinator.groups.topics import TopicsImage
from coordinator.runtime.api import TimerOp
from records import CoordinatorRecord


def fence_member(
    group: ConsumerGroup, member: ConsumerGroupMember, image: TopicsImage
) -> tuple[list[CoordinatorRecord], list[TimerOp]]:
    gid = group.group_id
    records = [
        log_records.current_assignment_tombstone(gid, member.member_id),
        log_records.target_member_tombstone(gid, member.member_id),
        log_records.member_metadata_tombstone(gid, member.member_id),
    ]
    remaining = [m for mid, m in group.members.items() if mid != member.member_id]
    regex = member.subscribed_topic_regex
    if regex is not None and group.regex_counts.get(regex, 0) <= 1 and regex in group.regexes:
        records.append(log_records.regex_tombstone(gid, regex))
    new_hash = image.metadata_hash(group_topic_names(remaining, group.regexes))
    epoch = group.group_epoch + 1
    records.append(log_records.group_epoch_record(gid, epoch, new_hash))
    if not remaining:
        records.append(log_records.target_metadata_record(gid, epoch, 0))
    timers: list[TimerOp] = list(cancel_member_timers(gid, member.member_id))
    return records, timers
