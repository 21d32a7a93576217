"""The homogeneous uniform rule, and the incremental path that must reproduce the full one (hypothesis).

The rule (groupcoord/coordinator/groups/assignors/uniform_homogeneous.py), restated here as a slow
reference that walks partitions one by one: P partitions, M members in id order, q = P // M,
e = P % M, partitions ranked by (topic id, partition).
1. Keep: a member's valid partitions are its targets in subscribed topics, below the partition
   count, not kept by an earlier member; it keeps them all if at most q, else its lowest q + 1
   while fewer than e earlier members kept q + 1, else its lowest q.
2. Fill: the rest, lowest first, to members below q (member order) up to q, then one each to the
   members at exactly q (member order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec, UniformAssignor
from groupcoord.coordinator.groups.assignors.target_index import TargetIndex
from groupcoord.coordinator.groups.assignors.uniform_incremental import reassign_homogeneous
from groupcoord.coordinator.groups.consumer import group as group_module
from groupcoord.coordinator.groups.consumer.subscriptions import member_topic_id_sets
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from tests.groups.harness import Coordinator, topic
from tests.groups.harness import image as group_image

Targets = dict[str, Mapping[str, frozenset[int]]]


def image(counts: list[int]) -> TopicsImage:
    return TopicsImage.of(TopicImage(f"t{i}", f"id{i}", n) for i, n in enumerate(counts))


def reference(members: list[str], targets: Targets, sizes: dict[str, int]) -> dict[str, set[tuple[str, int]]]:
    """The rule, partition by partition."""
    ids = sorted(members)
    every = sorted((t, p) for t, n in sizes.items() for p in range(n))
    q, e = divmod(len(every), len(ids))
    kept: dict[str, list[tuple[str, int]]] = {}
    taken: set[tuple[str, int]] = set()
    for m in ids:
        valid = sorted(
            (t, p)
            for t, ps in targets.get(m, {}).items()
            for p in ps
            if t in sizes and 0 <= p < sizes[t] and (t, p) not in taken
        )
        if len(valid) > q:
            valid = valid[: q + 1] if e > 0 else valid[:q]
            if len(valid) == q + 1:
                e -= 1
        kept[m] = valid
        taken.update(valid)
    rest = [tp for tp in every if tp not in taken]
    for m in ids:
        while len(kept[m]) < q:
            kept[m].append(rest.pop(0))
    for m in ids:
        if rest and len(kept[m]) == q:
            kept[m].append(rest.pop(0))
    assert not rest
    return {m: set(kept[m]) for m in ids}


def pairs(a: Mapping[str, frozenset[int]]) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}


def full(members: list[str], targets: Targets, img: TopicsImage, subscribed: frozenset[str]) -> Targets:
    spec = GroupSpec({m: MemberSubscriptionSpec(m, subscribed, targets.get(m, {})) for m in members})
    return UniformAssignor().assign(spec, img)


def indexed(targets: Targets) -> TargetIndex:
    index = TargetIndex()
    for m, a in targets.items():
        index.replace(m, None, a)
    return index


def same_index(a: TargetIndex, b: TargetIndex) -> bool:
    def held(i: TargetIndex) -> dict[str, bytes]:
        return {t: bytes(h).rstrip(b"\0") for t, h in i.held.items()}

    return (a.count, a.by_count, held(a), a.distinct, a.holdings, a.distinct_total) == (
        b.count,
        b.by_count,
        held(b),
        b.distinct,
        b.holdings,
        b.distinct_total,
    )


counts_st = st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=4)
# One step of a group's life: members join or leave, topics grow or shrink, a target goes bad.
event_st = st.one_of(
    st.tuples(st.just("join"), st.integers(min_value=1, max_value=3)),
    st.tuples(st.just("leave"), st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("resize"), st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=12)),
    st.tuples(st.just("steal"), st.integers(min_value=0, max_value=50), st.integers(min_value=0, max_value=50)),
)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=25), counts_st, st.booleans())
def test_full_homogeneous_follows_the_rule(n_members: int, counts: list[int], sticky: bool) -> None:
    img = image(counts)
    subscribed = frozenset(f"id{i}" for i in range(len(counts)))
    members = [f"m{j:02d}" for j in range(n_members)]
    targets = full(members, {}, img, subscribed)
    if sticky:  # a second round after members m00 and m03 left and two joined
        members = [m for m in members if m not in ("m00", "m03")] + ["n1", "n0"]
    sizes = {t: n for t, n in ((f"id{i}", c) for i, c in enumerate(counts)) if n > 0}
    got = full(members, targets if sticky else {}, img, subscribed)
    want = reference(members, targets if sticky else {}, sizes)
    assert {m: pairs(a) for m, a in got.items()} == want


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=20), counts_st, st.lists(event_st, min_size=1, max_size=8))
def test_incremental_equals_full(n_members: int, counts: list[int], events: list[tuple[int | str, ...]]) -> None:
    counts = list(counts)
    img = image(counts)
    subscribed = frozenset(f"id{i}" for i in range(len(counts)))
    members = [f"m{j:02d}" for j in range(n_members)]
    targets: Targets = dict(full(members, {}, img, subscribed))
    index = indexed(targets)
    joined = 0
    for ev in events:
        kind = ev[0]
        if kind == "join":
            for _ in range(int(ev[1])):
                members.append(f"j{joined:02d}")
                joined += 1
        elif kind == "leave" and len(members) > 1:
            members.pop(int(ev[1]) % len(members))
        elif kind == "resize":
            counts[int(ev[1]) % len(counts)] = int(ev[2])
            img = image(counts)
        elif kind == "steal" and targets:
            # Copy one partition of one member's target into another's: held twice now.
            holders = sorted(m for m in targets if targets[m])
            if holders:
                src = holders[int(ev[1]) % len(holders)]
                dst = sorted(targets)[int(ev[2]) % len(targets)]
                t = sorted(targets[src])[0]
                stolen = {**targets[dst], t: targets[dst].get(t, frozenset()) | {min(targets[src][t])}}
                index.replace(dst, targets[dst], stolen)
                targets[dst] = stolen
        want = full(members, targets, img, subscribed)
        changes = reassign_homogeneous(dict.fromkeys(members).keys(), targets, index, subscribed, img)
        if changes is not None:
            got = {m: changes.get(m, targets.get(m, {})) for m in members}
            assert {m: pairs(a) for m, a in got.items()} == {m: pairs(a) for m, a in want.items()}
        # Move on with the full result, as replay would: leavers' targets go, changed ones are replaced.
        for m in [m for m in targets if m not in want]:
            index.replace(m, targets.pop(m), None)
        for m, a in want.items():
            if m not in targets or pairs(a) != pairs(targets[m]):
                index.replace(m, targets.get(m), a)
                targets[m] = a
        assert same_index(index, indexed(targets))


def test_incremental_one_join_touches_only_the_movers() -> None:
    img = image([50] * 20)  # 1,000 partitions
    subscribed = frozenset(f"id{i}" for i in range(20))
    members = [f"m{j:03d}" for j in range(99)]
    targets = full(members, {}, img, subscribed)  # 10 each, 10 members with 11
    changes = reassign_homogeneous(dict.fromkeys([*members, "new"]).keys(), targets, indexed(targets), subscribed, img)
    assert changes is not None
    assert set(changes) == {"new"} | {m for m in members if len(pairs(targets[m])) == 11}
    assert len(pairs(changes["new"])) == 10


def test_incremental_declines_when_a_topic_shrank() -> None:
    img = image([8])
    subscribed = frozenset({"id0"})
    targets = full(["a", "b"], {}, img, subscribed)
    assert (
        reassign_homogeneous(dict.fromkeys(["a", "b"]).keys(), targets, indexed(targets), subscribed, image([6]))
        is None
    )


def test_index_gives_up_on_absurd_partitions() -> None:
    index = TargetIndex()
    index.replace("a", None, {"t": frozenset({1 << 30})})
    assert not index.usable and not index.held
    index.replace("a", {"t": frozenset({1 << 30})}, None)  # ignored once given up
    assert reassign_homogeneous(dict.fromkeys(["a"]).keys(), {}, index, frozenset({"t"}), image([1])) is None


def _scenario(monkeypatch: pytest.MonkeyPatch, incremental: bool) -> tuple[list[Any], Any]:
    """Members join one by one, two leave, one re-subscribes, one rejoins: the log it writes."""
    # Small groups always take the full way; lower the bar so this one does not, or raise it.
    monkeypatch.setattr(group_module, "INCREMENTAL_MIN_MEMBERS", 2 if incremental else 1_000)
    c = Coordinator(group_image(topic("a", 7), topic("b", 5)))

    def epoch(mid: str) -> int:
        return int(c.group().members[mid].member_epoch)

    for j in range(9):
        assert c.join(f"m{j}", ["a", "b"]).error_code == 0
    for mid in ("m3", "m0"):
        assert c.beat(mid, -1).error_code == 0
    assert c.beat("m1", epoch("m1")).error_code == 0  # reassigns what the leavers held
    # Heterogeneous for a while (the full way), then homogeneous again.
    assert c.beat("m5", epoch("m5"), subscribed_topic_names=["a"]).error_code == 0
    assert c.beat("m5", epoch("m5"), subscribed_topic_names=["a", "b"]).error_code == 0
    assert c.join("m3", ["b", "a"]).error_code == 0
    return c.log, c.group()


def test_incremental_and_full_write_the_same_log(monkeypatch: pytest.MonkeyPatch) -> None:
    inc_log, group = _scenario(monkeypatch, incremental=True)
    full_log, _ = _scenario(monkeypatch, incremental=False)
    assert inc_log == full_log
    # The index replay kept since it was built is the index of the target the log holds.
    index = group._target_index
    assert index is not None and index.usable and same_index(index, indexed(group.target))


def test_members_with_equal_subscriptions_share_one_name_tuple() -> None:
    c = Coordinator(group_image(topic("a", 4), topic("b", 4)))
    c.join("x", ["a", "b"])
    c.join("y", ["a", "b"])
    members = c.group().members
    assert members["x"].subscribed_topic_names is members["y"].subscribed_topic_names
    subs = member_topic_id_sets(members, {}, c.metadata)
    assert subs["x"] is subs["y"]
