"""RangeAssignor ("range"): contiguous partition ranges per topic, co-partitioned across topics.

Members are ordered the same way for every topic, so members with the same subscription get
the same partition numbers of every topic with the same partition count (joins across
co-partitioned topics stay local). Static members sort by instance id so a bounce keeps
their ranges.
"""

from __future__ import annotations

from groupcoord.coordinator.groups.assignors.spec import GroupAssignment, GroupSpec, MemberSubscriptionSpec
from groupcoord.coordinator.groups.topics import TopicsImage


def _order_key(m: MemberSubscriptionSpec) -> tuple[int, str, str]:
    if m.instance_id is not None:
        return (0, m.instance_id, m.member_id)
    return (1, m.member_id, "")


class RangeAssignor:
    name = "range"

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
        ordered = sorted(group.members.values(), key=_order_key)
        result: dict[str, dict[str, frozenset[int]]] = {m.member_id: {} for m in ordered}
        subscribers = _subscribers(ordered)
        # Topics with the same subscribers and partition count split the same way: split once
        # and hand each member its range of all those topics in one C-level update (Kafka's
        # shape, 1,000 topics x 50 partitions over 5,000 members, is one split, not 50,000 steps).
        same_split: dict[tuple[int, int], list[str]] = {}
        for t in sorted(subscribers):
            n = topics.partition_count(t)
            if n > 0:
                same_split.setdefault((id(subscribers[t]), n), []).append(t)
        for split_topics in same_split.values():
            members = subscribers[split_topics[0]]
            n = topics.partition_count(split_topics[0])
            quota, extra = divmod(n, len(members))
            start = 0
            # With more members than partitions only the first ``extra`` get one: stop there.
            for i in range(len(members) if quota else extra):
                size = quota + (1 if i < extra else 0)
                result[members[i]].update(dict.fromkeys(split_topics, frozenset(range(start, start + size))))
                start += size
        out: GroupAssignment = {}
        out.update(result)
        return out


def _subscribers(ordered: list[MemberSubscriptionSpec]) -> dict[str, list[str]]:
    """Topic id -> its subscribers in member order, built per distinct subscription rather than
    per member and topic (5,000 members x 1,000 topics would be 5M steps): topics subscribed by
    the same set of subscriptions share one list."""
    classes: dict[frozenset[str], list[int]] = {}
    for i, m in enumerate(ordered):
        classes.setdefault(m.subscribed_topic_ids, []).append(i)
    by_topic: dict[str, list[frozenset[str]]] = {}
    for sub in classes:
        for t in sub:
            by_topic.setdefault(t, []).append(sub)
    shared: dict[tuple[frozenset[str], ...], list[str]] = {}
    out: dict[str, list[str]] = {}
    for t, subs in by_topic.items():
        key = tuple(subs)
        lst = shared.get(key)
        if lst is None:
            positions = classes[subs[0]] if len(subs) == 1 else sorted(i for s in subs for i in classes[s])
            lst = shared[key] = [ordered[i].member_id for i in positions]
        out[t] = lst
    return out
