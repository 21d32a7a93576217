"""UniformAssignor ("uniform", the default): balanced, sticky, optionally rack-aware.

Like Kafka's UniformAssignor it picks one of two builders:

* homogeneous (every member subscribes to the same topics): ``uniform_homogeneous``, where the
  rule is written down; every member ends with ``P // M`` or ``P // M + 1`` partitions and keeps
  what it had up to that quota.
* heterogeneous: the members are split into independent parts (members linked by a shared
  topic). A part where everyone subscribes to the same topics (Kafka's bucketed benchmark shape)
  is a homogeneous problem and goes to that builder. A mixed part goes to the general builder
  (GeneralUniformAssignmentBuilder): members keep their valid partitions, unassigned partitions
  go to the least loaded subscriber, then partitions move from loaded to lightly loaded
  subscribers until no single move improves the balance.

Rack awareness: when members have racks and partitions have replica racks, a partition that
has to be placed goes to a member in one of its replicas' racks if one has room, so consumers
fetch from a local replica. Balance and stickiness always come first.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from operator import attrgetter

from groupcoord.coordinator.groups.assignors.spec import GroupAssignment, GroupSpec, MemberSubscriptionSpec
from groupcoord.coordinator.groups.assignors.uniform_homogeneous import assign_homogeneous
from groupcoord.coordinator.groups.topics import TopicsImage

_SUBSCRIPTION = attrgetter("subscribed_topic_ids")


class UniformAssignor:
    name = "uniform"

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
        if not group.members:
            return {}
        if group.is_homogeneous():
            first = next(iter(group.members.values()))
            return assign_homogeneous(group.members, first.subscribed_topic_ids, topics)
        result: GroupAssignment = {}
        for subscriptions, part in _parts(group.members, topics):
            if len(subscriptions) == 1:
                result.update(assign_homogeneous(part, subscriptions[0], topics))
            else:
                result.update(_assign_heterogeneous(part, topics))
        return result


def _parts(
    members: Mapping[str, MemberSubscriptionSpec], topics: TopicsImage
) -> list[tuple[list[frozenset[str]], dict[str, MemberSubscriptionSpec]]]:
    """Members linked (directly or not) by a subscribed topic with partitions: per part, its
    distinct subscriptions and its members.

    The parts share no topic, so each can be assigned on its own. Members subscribing to nothing
    assignable form a part of their own (they get nothing)."""
    by_sub: dict[frozenset[str], list[str]] = {}
    for mid, sub in zip(members, map(_SUBSCRIPTION, members.values()), strict=True):
        by_sub.setdefault(sub, []).append(mid)
    subs = list(by_sub)
    parent = list(range(len(subs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, sub in enumerate(subs):
        for t in sub:
            if topics.partition_count(t) <= 0:
                continue
            j = owner.setdefault(t, i)
            if j != i:
                parent[find(i)] = find(j)
    parts: dict[int, tuple[list[frozenset[str]], dict[str, MemberSubscriptionSpec]]] = {}
    for i, sub in enumerate(subs):
        part_subs, part = parts.setdefault(find(i), ([], {}))
        part_subs.append(sub)
        mids = by_sub[sub]
        part.update(zip(mids, map(members.__getitem__, mids), strict=True))
    return [parts[k] for k in sorted(parts)]


def _assign_heterogeneous(group: Mapping[str, MemberSubscriptionSpec], topics: TopicsImage) -> GroupAssignment:
    members = sorted(group.values(), key=lambda m: m.member_id)
    ids = [m.member_id for m in members]
    subs: dict[str, list[int]] = {}
    for j, m in enumerate(members):
        for t in m.subscribed_topic_ids:
            if topics.partition_count(t) > 0:
                subs.setdefault(t, []).append(j)
    assignment: list[dict[str, set[int]]] = [{} for _ in members]
    count = [0] * len(members)
    held: set[tuple[str, int]] = set()

    # Stickiness: keep every partition still valid for its holder.
    for j, m in enumerate(members):
        for t, ps in m.assigned.items():
            if t not in m.subscribed_topic_ids:
                continue
            n = topics.partition_count(t)
            for p in sorted(ps):
                if p < n and (t, p) not in held:
                    held.add((t, p))
                    assignment[j].setdefault(t, set()).add(p)
                    count[j] += 1

    rack_aware = any(m.rack_id for m in members) and topics.has_racks()
    # Topics with the fewest subscribers first: they have the least freedom.
    for t in sorted(subs, key=lambda t: (len(subs[t]), t)):
        subscribers = subs[t]
        heap = [(count[j], j) for j in subscribers]
        heapq.heapify(heap)
        img = topics.topic_by_id(t)
        assert img is not None
        for p in range(img.partitions):
            if (t, p) in held:
                continue
            while heap[0][0] != count[heap[0][1]]:
                j0 = heap[0][1]
                heapq.heapreplace(heap, (count[j0], j0))
            c, j = heap[0]
            if rack_aware:
                racks = img.racks_of(p)
                if racks and members[j].rack_id not in racks:
                    local = [k for k in subscribers if count[k] == c and members[k].rack_id in racks]
                    if local:
                        j = local[0]
            held.add((t, p))
            assignment[j].setdefault(t, set()).add(p)
            count[j] += 1
            heapq.heappush(heap, (count[j], j))

    _balance(subs, assignment, count)
    return {ids[j]: {t: frozenset(ps) for t, ps in assignment[j].items() if ps} for j in range(len(members))}


def _balance(subs: dict[str, list[int]], assignment: list[dict[str, set[int]]], count: list[int]) -> None:
    """Move single partitions from a loaded holder to a lighter subscriber of the same topic.

    Each move lowers the sum of squared member loads, so the loop ends; it stops when no member
    holding a partition of a topic is more than one partition above a subscriber of that topic.
    """
    moved = True
    while moved:
        moved = False
        for t in sorted(subs):
            subscribers = subs[t]
            if len(subscribers) < 2:
                continue
            while True:
                lightest = min(subscribers, key=lambda j: (count[j], j))
                holders = [j for j in subscribers if assignment[j].get(t)]
                if not holders:
                    break
                heaviest = max(holders, key=lambda j: (count[j], -j))
                if count[heaviest] - count[lightest] <= 1:
                    break
                p = max(assignment[heaviest][t])
                assignment[heaviest][t].discard(p)
                assignment[lightest].setdefault(t, set()).add(p)
                count[heaviest] -= 1
                count[lightest] += 1
                moved = True
