"""Uniform assignor when every member subscribes to the same topics (Kafka's
UniformHomogeneousAssignmentBuilder), as one rule that the incremental path reproduces exactly.

The rule. P partitions in the subscribed topics, M members in member-id order, q = P // M,
e = P % M; a partition's rank is (topic id, partition), "lowest" means lowest rank.

1. Keep. A member's *valid* partitions are its current target partitions of subscribed topics,
   below the topic's partition count and not kept by an earlier member. A member with at most q
   valid partitions keeps them all. One with more keeps its lowest q + 1 while fewer than e
   earlier members kept q + 1, else its lowest q.
2. Fill. The partitions nobody kept go out lowest first: to the members below q, in member order,
   until each has q; then what is left, one each to the members at exactly q, in member order.

So every member ends with q or q + 1 (exactly e with q + 1), a member never loses a partition it
could keep without breaking that, and the result depends on nothing but the input. A member that
keeps all it had is handed back its own mapping: the unchanged majority costs no copy.

Rack awareness changes only step 2: a partition goes to a member with room on one of its
replicas' racks when there is one (balance and stickiness still come first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from groupcoord.coordinator.groups.assignors.spec import GroupAssignment, MemberSubscriptionSpec
from groupcoord.coordinator.groups.topics import TopicsImage

Assignment = Mapping[str, frozenset[int]]


def partition_sizes(subscribed: frozenset[str], topics: TopicsImage) -> Mapping[str, int]:
    """Partition count of each subscribed topic that exists and has partitions."""
    return topics.partition_counts(subscribed)


def quotas(total: int, members: int) -> tuple[int, int]:
    """(q, e): every member gets q partitions, e of them one more."""
    return divmod(total, members)


def clean_count(assigned: Assignment, sizes: Mapping[str, int], taken: Mapping[str, set[int]]) -> int:
    """How many partitions ``assigned`` holds if every one is valid and not yet taken, else -1."""
    c = 0
    for t, ps in assigned.items():
        n = sizes.get(t)
        if n is None or not ps or min(ps) < 0 or max(ps) >= n or not taken[t].isdisjoint(ps):
            return -1
        c += len(ps)
    return c


def as_mapping(pairs: list[tuple[str, int]]) -> dict[str, frozenset[int]]:
    per_topic: dict[str, list[int]] = {}
    for t, p in pairs:
        per_topic.setdefault(t, []).append(p)
    return {t: frozenset(ps) for t, ps in per_topic.items()}


def merge(kept: Assignment, got: dict[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    if not kept:
        return got
    out = dict(kept)
    for t, ps in got.items():
        old = out.get(t)
        out[t] = ps if old is None else old | ps
    return out


class Chunks:
    """Unassigned partitions, lowest first, handed out in runs (one frozenset per topic run).

    A run of a topic nobody held is a range; equal ranges of different topics (members 0-9 of
    1,000 topics) share one frozenset, which spares thousands of allocations per assignment."""

    __slots__ = ("chunks", "ci", "off", "left", "shared")

    def __init__(self, chunks: list[tuple[str, Sequence[int]]]) -> None:
        self.chunks = chunks
        self.ci = 0
        self.off = 0
        self.left = sum(len(ps) for _, ps in chunks)
        self.shared: dict[range, frozenset[int]] = {}

    def _frozen(self, part: Sequence[int]) -> frozenset[int]:
        if type(part) is not range:
            return frozenset(part)
        fs = self.shared.get(part)
        if fs is None:
            fs = self.shared[part] = frozenset(part)
        return fs

    def take(self, k: int) -> dict[str, frozenset[int]]:
        """The next ``k`` partitions; callers never ask for more than ``left``."""
        self.left -= k
        t, ps = self.chunks[self.ci] if k else ("", ())
        end = self.off + k
        if end < len(ps):  # the common case: one run of one topic
            self.off = end
            return {t: self._frozen(ps[end - k : end])}
        got: dict[str, frozenset[int]] = {}
        while k > 0:
            t, ps = self.chunks[self.ci]
            part = ps[self.off : self.off + k]
            got[t] = self._frozen(part)
            k -= len(part)
            self.off += len(part)
            if self.off >= len(ps):
                self.ci += 1
                self.off = 0
        return got

    def pairs(self) -> list[tuple[str, int]]:
        return [(t, p) for t, ps in self.chunks for p in ps]


def unassigned_chunks(topic_ids: Sequence[str], sizes: Mapping[str, int], taken: Mapping[str, set[int]]) -> Chunks:
    chunks: list[tuple[str, Sequence[int]]] = []
    for t in topic_ids:
        n = sizes[t]
        tk = taken[t]
        if not tk:
            chunks.append((t, range(n)))
        elif len(tk) < n:
            chunks.append((t, [p for p in range(n) if p not in tk]))
    return Chunks(chunks)


def assign_homogeneous(
    members: Mapping[str, MemberSubscriptionSpec], subscribed: frozenset[str], topics: TopicsImage
) -> GroupAssignment:
    ids = sorted(members)
    sizes = partition_sizes(subscribed, topics)
    total = sum(sizes.values())
    if total == 0:
        return {m: {} for m in ids}
    q, extras_left = quotas(total, len(ids))
    topic_ids = sorted(sizes)
    taken: dict[str, set[int]] = {t: set() for t in topic_ids}
    kept: list[Assignment] = []
    count: list[int] = []
    # Step 1: keep.
    for mid in ids:
        assigned = members[mid].assigned
        c = clean_count(assigned, sizes, taken)
        if 0 <= c <= q or (c == q + 1 and extras_left > 0):
            if c > q:
                extras_left -= 1
            mapping: Assignment = assigned
        else:
            valid = sorted(
                (t, p)
                for t, ps in assigned.items()
                if t in sizes
                for p in ps
                if 0 <= p < sizes[t] and p not in taken[t]
            )
            c = len(valid)
            if c > q:
                if extras_left > 0:
                    c = q + 1
                    extras_left -= 1
                else:
                    c = q
            mapping = as_mapping(valid[:c])
        for t, ps in mapping.items():
            taken[t].update(ps)
        kept.append(mapping)
        count.append(c)
    # Step 2: fill.
    pool = unassigned_chunks(topic_ids, sizes, taken)
    if pool.left:
        if _racks_in_use(members, topics, subscribed):
            kept = _fill_rack_aware(ids, members, kept, count, pool, q, extras_left, topics)
        else:
            _fill(kept, count, pool, q, extras_left)
    return dict(zip(ids, kept, strict=True))


def _fill(kept: list[Assignment], count: list[int], pool: Chunks, q: int, extras_left: int) -> None:
    for j, c in enumerate(count):
        if c < q:
            kept[j] = merge(kept[j], pool.take(q - c))
            count[j] = q
    for j, c in enumerate(count):
        if extras_left == 0 or not pool.left:
            break
        if c == q:
            kept[j] = merge(kept[j], pool.take(1))
            count[j] = q + 1
            extras_left -= 1


def _racks_in_use(
    members: Mapping[str, MemberSubscriptionSpec], topics: TopicsImage, subscribed: frozenset[str]
) -> bool:
    return topics.any_racks(subscribed) and any(m.rack_id for m in members.values())


def _fill_rack_aware(
    ids: list[str],
    members: Mapping[str, MemberSubscriptionSpec],
    kept: list[Assignment],
    count: list[int],
    pool: Chunks,
    q: int,
    extras_left: int,
    topics: TopicsImage,
) -> list[Assignment]:
    racks = [members[m].rack_id for m in ids]
    got: list[dict[str, set[int]]] = [{} for _ in ids]

    replica_racks = {t: topics.topic_by_id(t).partition_racks for t in {t for t, _ in pool.chunks}}  # type: ignore[union-attr]
    rack_order: dict[frozenset[str], list[str]] = {}

    def give(j: int, items: list[tuple[str, int]]) -> None:
        g = got[j]
        for t, p in items:
            g.setdefault(t, set()).add(p)

    def place(todo: list[tuple[str, int]], capacity: list[int]) -> list[tuple[str, int]]:
        """Give partitions to members with capacity, rack-local first; returns what is left.

        A partition goes to the first member, in member order, with room on the first of its
        replicas' racks (in rack-name order) where anyone has room; else it waits for step two,
        which fills the members still with room in member order. A rack's members fill one after
        the other, so it is enough to count each rack's room per partition and to cut each rack's
        partitions into runs per member afterwards."""
        rack_members: dict[str, list[int]] = {}
        for j, rack in enumerate(racks):
            if capacity[j] > 0 and rack:
                rack_members.setdefault(rack, []).append(j)
        room = {r: sum(capacity[j] for j in js) for r, js in rack_members.items()}
        local: dict[str, list[tuple[str, int]]] = {r: [] for r in room}
        rest: list[tuple[str, int]] = []
        for t, p in todo:
            prs = replica_racks[t]
            where = prs[p] if p < len(prs) else frozenset()
            order = rack_order.get(where)
            if order is None:
                order = rack_order[where] = sorted(where)
            for r in order:
                if room.get(r, 0) > 0:
                    room[r] -= 1
                    local[r].append((t, p))
                    break
            else:
                rest.append((t, p))
        for r, js in rack_members.items():
            items, i = local[r], 0
            for j in js:
                k = min(capacity[j], len(items) - i)
                if k > 0:
                    give(j, items[i : i + k])
                    capacity[j] -= k
                    i += k
        ptr = 0
        for j in range(len(ids)):
            k = min(capacity[j], len(rest) - ptr)
            if k > 0:
                give(j, rest[ptr : ptr + k])
                capacity[j] -= k
                ptr += k
        return rest[ptr:]

    deficit = [max(0, q - c) for c in count]
    left = place(pool.pairs(), deficit)
    if left and extras_left > 0:
        # Only ``extras_left`` members, the first at exactly q in member order, may go above q.
        slots = [0] * len(ids)
        for j, c in enumerate(count):
            if extras_left == 0:
                break
            if c <= q:  # members below q were just filled to q
                slots[j] = 1
                extras_left -= 1
        place(left, slots)
    return [merge(k, {t: frozenset(ps) for t, ps in g.items()}) if g else k for k, g in zip(kept, got, strict=True)]
