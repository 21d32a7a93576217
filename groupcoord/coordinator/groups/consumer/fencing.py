"""Removing a member from a group: leave (-1), session timeout, rebalance timeout.

Kafka's consumerGroupFenceMember: tombstone the member's three records, drop regexes only it
used, bump the group epoch with the metadata hash of what the others still subscribe to, and
when the group becomes empty move the assignment epoch along with timestamp 0 so the next
member's first assignment is not throttled.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.groups.consumer import log_records
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.consumer.subscriptions import regexes_in_use, subscribed_names_of
from groupcoord.coordinator.groups.consumer.timers import cancel_member_timers
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.runtime.api import TimerOp
from groupcoord.records import CoordinatorRecord


def fence_members(
    group: ConsumerGroup, member_ids: Iterable[str], image: TopicsImage
) -> tuple[list[CoordinatorRecord], list[TimerOp]]:
    """Remove members at once (a leave, a timeout, a classic LeaveGroup naming several): their
    records tombstoned, regexes only they used dropped, one group epoch bump."""
    gid = group.group_id
    gone = [mid for mid in dict.fromkeys(member_ids) if mid in group.members]
    records: list[CoordinatorRecord] = []
    timers: list[TimerOp] = []
    if not gone:
        return records, timers
    for mid in gone:
        records += [
            log_records.current_assignment_tombstone(gid, mid),
            log_records.target_member_tombstone(gid, mid),
            log_records.member_metadata_tombstone(gid, mid),
        ]
        timers += cancel_member_timers(gid, mid)
    # What the others still subscribe to, from the group's counts less the members leaving.
    name_counts, regex_counts = group.subscription_counts_with(group.members[mid] for mid in gone)
    for regex in sorted(regexes_in_use(group.members[mid] for mid in gone) - regex_counts.keys()):
        if regex in group.regexes:
            records.append(log_records.regex_tombstone(gid, regex))
    epoch = group.group_epoch + 1
    subscribed = subscribed_names_of(name_counts, regex_counts, group.regexes)
    records.append(log_records.group_epoch_record(gid, epoch, image.metadata_hash(subscribed)))
    if len(gone) == len(group.members):
        records.append(log_records.target_metadata_record(gid, epoch, 0))
    return records, timers
