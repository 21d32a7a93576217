"""RangeAssignor ("range"): contiguous partition ranges per topic, co-partitioned across topics.

Members are ordered the same way for every topic, so members with the same subscription get
the same partition numbers of every topic with the same partition count (joins across
co-partitioned topics stay local). Static members sort by instance id so a bounce keeps
their ranges.
"""

from __future__ import annotations

from coordinator.groups.assignors.spec import GroupAssignment, GroupSpec, MemberSubscriptionSpec
from coordinator.groups.topics import TopicsImage


def _order_key(m: MemberSubscriptionSpec) -> tuple[int, str, str]:
    if m.instance_id is not None:
        return (0, m.instance_id, m.member_id)
    return (1, m.member_id, "")


class RangeAssignor:
    name = "range"

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
        ordered = sorted(group.members.values(), key=_order_key)
        result: dict[str, dict[str, frozenset[int]]] = {m.member_id: {} for m in ordered}
        subscribers: dict[str, list[str]] = {}
        for m in ordered:
            for t in m.subscribed_topic_ids:
                subscribers.setdefault(t, []).append(m.member_id)
        for t in sorted(subscribers):
            n = topics.partition_count(t)
            if n == 0:
                continue
            members = subscribers[t]
            quota, extra = divmod(n, len(members))
            start = 0
            for i, mid in enumerate(members):
                size = quota + (1 if i < extra else 0)
                if size:
                    result[mid][t] = frozenset(range(start, start + size))
                start += size
        return result
