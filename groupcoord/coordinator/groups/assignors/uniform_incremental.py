"""The homogeneous uniform assignment, computed from what changed rather than from every partition.

``reassign_homogeneous`` returns exactly what ``uniform_homogeneous.assign_homogeneous`` would
return for the same members and current targets, but only for the members whose target changes,
at a cost of the members that change and the partitions that move (plus a few set operations
over member ids): one member joining a 5,000-member group moves ~10 partitions and touches ~11
members instead of recomputing 5,000. It relies on a ``TargetIndex`` of the current targets to
know, without looking, that every target partition is valid and held once; when it cannot vouch
for that (a topic shrank or went away, a partition is held twice, ...) it returns None and the
caller runs the full assignor.

Why it equals the full computation when every target partition is valid and held once (the rule
is in ``uniform_homogeneous``): then a member's valid partitions are exactly its target, so step 1
only touches members above q (the first e of them in member order keep their lowest q + 1, the
others their lowest q); the partitions nobody keeps are those of the truncated tails, of members
that left, and of no one; step 2 hands them out lowest first to members below q, then one each to
the first members at exactly q. Each of those sets is read from the index's members-by-count
buckets, never by walking all members.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, KeysView, Mapping
from itertools import compress, filterfalse, repeat
from operator import gt

from groupcoord.coordinator.groups.assignors.target_index import TargetIndex
from groupcoord.coordinator.groups.assignors.uniform_homogeneous import (
    Assignment,
    as_mapping,
    merge,
    partition_sizes,
    quotas,
)
from groupcoord.coordinator.groups.topics import TopicsImage


def reassign_homogeneous(
    member_ids: KeysView[str],
    targets: Mapping[str, Assignment],
    index: TargetIndex,
    subscribed: frozenset[str],
    topics: TopicsImage,
) -> dict[str, Assignment] | None:
    """New targets of the members (all subscribed to ``subscribed``, none rack-aware) whose target
    changes, given ``targets`` (which ``index`` describes; members not in ``member_ids`` left);
    None when only the full assignor can say."""
    if not member_ids or not index.usable or index.holdings != index.distinct_total:
        return None
    sizes = partition_sizes(subscribed, topics)
    held = index.held
    # Every held topic subscribed and every held partition below its topic's count: C-level passes
    # first (a topic's array is as long as its highest partition ever held, plus one).
    if not sizes.keys() >= held.keys():
        return None
    if any(map(gt, map(len, held.values()), map(sizes.__getitem__, held))) and any(
        any(h[sizes[t] :]) for t, h in held.items()
    ):
        return None
    total = sum(sizes.values())
    if total == 0:
        return None
    q, extras_left = quotas(total, len(member_ids))
    count = index.count
    # filterfalse walks in C without building a set of every member.
    leavers = set(filterfalse(member_ids.__contains__, count))
    joiners = list(filterfalse(count.__contains__, member_ids))

    def having(counts: Iterable[int]) -> list[str]:
        """Members of the new group whose target holds one of ``counts`` partitions."""
        out: list[str] = []
        for c in counts:
            bucket = index.by_count.get(c)
            if bucket:
                out.extend(filterfalse(leavers.__contains__, bucket) if leavers else bucket)
            if c == 0:
                out.extend(joiners)
        return out

    sizes_held = set(index.by_count)
    if joiners:
        sizes_held.add(0)
    changes: dict[str, Assignment] = {}
    pool: list[tuple[str, int]] = []
    # Step 1: members above q keep their lowest q + 1 (the first e of them) or q.
    truncated_to_q: list[str] = []
    for m in sorted(having(c for c in sizes_held if c > q)):
        limit = q
        if extras_left > 0:
            limit += 1
            extras_left -= 1
        if count[m] == limit:
            continue
        ranked = sorted((t, p) for t, ps in targets[m].items() for p in ps)
        changes[m] = as_mapping(ranked[:limit])
        pool += ranked[limit:]
        if limit == q:
            truncated_to_q.append(m)
    # Nobody keeps the partitions of members that left, nor those no target holds.
    for m in leavers:
        pool += [(t, p) for t, ps in targets[m].items() for p in ps]
    if index.distinct_total < total:
        distinct = index.distinct
        for t in compress(sizes, map(gt, sizes.values(), map(distinct.get, sizes, repeat(0)))):
            h = held.get(t, bytearray())
            pool += [(t, p) for p in range(sizes[t]) if p >= len(h) or not h[p]]
    pool.sort()
    # Step 2: fill members below q in member order, then one each to the first at exactly q.
    ptr = 0
    under = sorted(having(c for c in sizes_held if c < q))
    for m in under:
        need = q - count.get(m, 0)
        changes[m] = merge(targets.get(m, {}), as_mapping(pool[ptr : ptr + need]))
        ptr += need
    if extras_left > 0 and ptr < len(pool):
        at_q = heapq.nsmallest(extras_left, having([q]))
        for m in heapq.nsmallest(extras_left, set(at_q + truncated_to_q + under)):
            if ptr >= len(pool):
                break
            changes[m] = merge(changes.get(m, targets.get(m, {})), as_mapping(pool[ptr : ptr + 1]))
            ptr += 1
    return changes
