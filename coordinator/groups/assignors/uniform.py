"""UniformAssignor ("uniform", the default): balanced, sticky, optionally rack-aware.

Like Kafka's UniformAssignor it picks one of two builders:

* homogeneous (every member subscribes to the same topics; OptimizedUniformAssignmentBuilder):
  every member ends with ``P // M`` or ``P // M + 1`` partitions. Members first keep what they
  already had up to that quota (stickiness), then the freed and new partitions fill the members
  below quota. Partitions are numbered globally so the whole pass is a few linear sweeps.
* heterogeneous (GeneralUniformAssignmentBuilder): members keep their valid partitions,
  unassigned partitions go to the least loaded subscriber, then partitions move from loaded to
  lightly loaded subscribers until no single move improves the balance.

Rack awareness: when members have racks and partitions have replica racks, a partition that
has to be placed goes to a member in one of its replicas' racks if one has room, so consumers
fetch from a local replica. Balance and stickiness always come first.
"""

from __future__ import annotations

import heapq
from collections import deque

from coordinator.groups.assignors.spec import GroupAssignment, GroupSpec, MemberSubscriptionSpec
from coordinator.groups.topics import TopicsImage


class UniformAssignor:
    name = "uniform"

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
        if not group.members:
            return {}
        if group.is_homogeneous():
            return _assign_homogeneous(group, topics)
        return _assign_heterogeneous(group, topics)


def _racks_in_use(members: list[MemberSubscriptionSpec], topics: TopicsImage, topic_ids: list[str]) -> bool:
    if not any(m.rack_id for m in members):
        return False
    for t in topic_ids:
        img = topics.topic_by_id(t)
        if img is not None and img.partition_racks:
            return True
    return False


def _assign_homogeneous(group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
    members = sorted(group.members.values(), key=lambda m: m.member_id)
    topic_ids = sorted(t for t in members[0].subscribed_topic_ids if topics.partition_count(t) > 0)
    base: dict[str, int] = {}
    counts: list[int] = []
    total = 0
    for t in topic_ids:
        base[t] = total
        n = topics.partition_count(t)
        counts.append(n)
        total += n
    result: GroupAssignment = {m.member_id: {} for m in members}
    if total == 0:
        return result

    min_quota, extra = divmod(total, len(members))
    taken = bytearray(total)
    owned: list[list[int]] = []
    extras_left = extra
    for m in members:
        keep: list[int] = []
        for t, ps in m.assigned.items():
            b = base.get(t)
            if b is None:
                continue
            n = topics.partition_count(t)
            for p in ps:
                if p < n and not taken[b + p]:
                    keep.append(b + p)
        if len(keep) > min_quota:
            keep.sort()
            if extras_left > 0:
                keep = keep[: min_quota + 1]
                extras_left -= 1
            else:
                keep = keep[:min_quota]
        for i in keep:
            taken[i] = 1
        owned.append(keep)

    unassigned = [i for i in range(total) if not taken[i]]
    if unassigned:
        if _racks_in_use(members, topics, topic_ids):
            _fill_rack_aware(members, owned, unassigned, min_quota, extras_left, topics, topic_ids, base)
        else:
            _fill(owned, unassigned, min_quota, extras_left)

    # Global index -> (topic id, partition): topics occupy consecutive ranges in ``topic_ids`` order.
    tid_of: list[str] = []
    pid_of: list[int] = []
    for t, n in zip(topic_ids, counts, strict=True):
        tid_of.extend([t] * n)
        pid_of.extend(range(n))
    for m, idx in zip(members, owned, strict=True):
        per_topic: dict[str, list[int]] = {}
        for i in idx:
            lst = per_topic.get(tid_of[i])
            if lst is None:
                per_topic[tid_of[i]] = [pid_of[i]]
            else:
                lst.append(pid_of[i])
        result[m.member_id] = {t: frozenset(ps) for t, ps in per_topic.items()}
    return result


def _fill(owned: list[list[int]], unassigned: list[int], min_quota: int, extras_left: int) -> None:
    ptr = 0
    for keep in owned:
        need = min_quota - len(keep)
        if need > 0:
            keep.extend(unassigned[ptr : ptr + need])
            ptr += need
    for keep in owned:
        if extras_left == 0 or ptr >= len(unassigned):
            break
        if len(keep) == min_quota:
            keep.append(unassigned[ptr])
            ptr += 1
            extras_left -= 1


def _fill_rack_aware(
    members: list[MemberSubscriptionSpec],
    owned: list[list[int]],
    unassigned: list[int],
    min_quota: int,
    extras_left: int,
    topics: TopicsImage,
    topic_ids: list[str],
    base: dict[str, int],
) -> None:
    racks_of: list[frozenset[str]] = []
    for t in topic_ids:
        img = topics.topic_by_id(t)
        assert img is not None
        racks_of.extend(img.racks_of(p) for p in range(img.partitions))

    def place(pool: list[int], capacity: list[int]) -> list[int]:
        """Give partitions to members with capacity, rack-local first; returns what is left."""
        by_rack: dict[str, deque[int]] = {}
        for j, m in enumerate(members):
            if capacity[j] > 0 and m.rack_id:
                by_rack.setdefault(m.rack_id, deque()).append(j)
        rest: list[int] = []
        for i in pool:
            chosen = -1
            for rack in sorted(racks_of[i]):
                q = by_rack.get(rack)
                while q and capacity[q[0]] == 0:
                    q.popleft()
                if q:
                    chosen = q[0]
                    break
            if chosen < 0:
                rest.append(i)
                continue
            owned[chosen].append(i)
            capacity[chosen] -= 1
        ptr = 0
        for j in range(len(members)):
            take = min(capacity[j], len(rest) - ptr)
            if take > 0:
                owned[j].extend(rest[ptr : ptr + take])
                capacity[j] -= take
                ptr += take
        return rest[ptr:]

    deficit = [max(0, min_quota - len(k)) for k in owned]
    left = place(unassigned, deficit)
    if left and extras_left > 0:
        extra_slots = [1 if len(k) == min_quota else 0 for k in owned]
        # Only ``extras_left`` members may go above the minimum quota.
        granted = 0
        for j in range(len(extra_slots)):
            if extra_slots[j]:
                if granted >= extras_left:
                    extra_slots[j] = 0
                else:
                    granted += 1
        place(left, extra_slots)


def _assign_heterogeneous(group: GroupSpec, topics: TopicsImage) -> GroupAssignment:
    members = sorted(group.members.values(), key=lambda m: m.member_id)
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
