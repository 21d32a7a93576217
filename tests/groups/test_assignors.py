"""Property tests of the server-side assignors (hypothesis)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec, RangeAssignor, UniformAssignor
from groupcoord.coordinator.groups.assignors.spec import GroupAssignment
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage

RACKS = ("r0", "r1", "r2")


def make_image(counts: list[int], racks: bool = False) -> TopicsImage:
    topics = []
    for i, n in enumerate(counts):
        prack = tuple(frozenset({RACKS[(i + p) % 3]}) for p in range(n)) if racks else ()
        topics.append(TopicImage(f"t{i}", f"id{i}", n, prack))
    return TopicsImage.of(topics)


def flatten(a: GroupAssignment) -> Counter[tuple[str, int]]:
    return Counter((t, p) for ps in a.values() for t, parts in ps.items() for p in parts)


def sizes(a: GroupAssignment) -> list[int]:
    return [sum(len(ps) for ps in m.values()) for m in a.values()]


def check_complete(a: GroupAssignment, spec: GroupSpec, img: TopicsImage) -> None:
    seen = flatten(a)
    wanted = {
        (t, p) for m in spec.members.values() for t in m.subscribed_topic_ids for p in range(img.partition_count(t))
    }
    assert set(seen) == wanted
    assert all(n == 1 for n in seen.values())
    for mid, parts in a.items():
        assert set(parts) <= spec.members[mid].subscribed_topic_ids


homogeneous = st.tuples(
    st.integers(min_value=1, max_value=40),  # members
    st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=4),  # partitions per topic
    st.booleans(),  # racks
)


@settings(max_examples=150, deadline=None)
@given(homogeneous)
def test_uniform_homogeneous_exactly_once_and_balanced(params: tuple[int, list[int], bool]) -> None:
    n_members, counts, racks = params
    img = make_image(counts, racks)
    ids = frozenset(f"id{i}" for i in range(len(counts)))
    spec = GroupSpec(
        {
            f"m{j}": MemberSubscriptionSpec(f"m{j}", ids, rack_id=RACKS[j % 3] if racks else None)
            for j in range(n_members)
        }
    )
    a = UniformAssignor().assign(spec, img)
    check_complete(a, spec, img)
    s = sizes(a)
    assert max(s) - min(s) <= 1


@settings(max_examples=150, deadline=None)
@given(homogeneous, st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=5))
def test_uniform_homogeneous_is_sticky(params: tuple[int, list[int], bool], joiners: int, leavers: int) -> None:
    n_members, counts, racks = params
    img = make_image(counts, racks)
    ids = frozenset(f"id{i}" for i in range(len(counts)))
    members = {f"m{j}": MemberSubscriptionSpec(f"m{j}", ids) for j in range(n_members)}
    first = UniformAssignor().assign(GroupSpec(members), img)
    stay = sorted(members)[: max(1, n_members - leavers)]
    nxt = {m: MemberSubscriptionSpec(m, ids, first[m]) for m in stay}
    for j in range(joiners):
        nxt[f"new{j}"] = MemberSubscriptionSpec(f"new{j}", ids)
    second = UniformAssignor().assign(GroupSpec(nxt), img)
    check_complete(second, GroupSpec(nxt), img)
    s = sizes(second)
    assert max(s) - min(s) <= 1
    # Stickiness: a remaining member keeps min(old count, new quota) of its old partitions.
    total = sum(counts)
    quota = total // len(nxt)
    for m in stay:
        old = {(t, p) for t, ps in first[m].items() for p in ps}
        new = {(t, p) for t, ps in second[m].items() for p in ps}
        assert len(old & new) >= min(len(old), quota)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=15),
    st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=5),
    st.data(),
)
def test_uniform_heterogeneous_each_partition_once_to_a_subscriber(
    n_members: int, counts: list[int], data: st.DataObject
) -> None:
    img = make_image(counts)
    all_ids = [f"id{i}" for i in range(len(counts))]
    members = {}
    for j in range(n_members):
        subs = data.draw(st.sets(st.sampled_from(all_ids), min_size=1))
        members[f"m{j}"] = MemberSubscriptionSpec(f"m{j}", frozenset(subs))
    spec = GroupSpec(members)
    a = UniformAssignor().assign(spec, img)
    check_complete(a, spec, img)
    # No single move between two subscribers of a topic would improve the balance.
    load = {m: sum(len(ps) for ps in a[m].values()) for m in a}
    for m, parts in a.items():
        for t, ps in parts.items():
            if not ps:
                continue
            for other, spec_o in members.items():
                if t in spec_o.subscribed_topic_ids:
                    assert load[m] - load[other] <= 1
    # Sticky on a second run with the same members.
    again = UniformAssignor().assign(
        GroupSpec({m: MemberSubscriptionSpec(m, s.subscribed_topic_ids, a[m]) for m, s in members.items()}), img
    )
    assert again == a


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=12),
    st.lists(st.integers(min_value=0, max_value=25), min_size=1, max_size=4),
)
def test_range_co_partitions(n_members: int, counts: list[int]) -> None:
    same = [max(counts)] * len(counts)  # co-partitioned topics: same partition count
    img = make_image(same)
    ids = frozenset(f"id{i}" for i in range(len(same)))
    spec = GroupSpec({f"m{j:02d}": MemberSubscriptionSpec(f"m{j:02d}", ids) for j in range(n_members)})
    a = RangeAssignor().assign(spec, img)
    check_complete(a, spec, img)
    for parts in a.values():
        per_topic = [sorted(parts.get(t, ())) for t in sorted(ids)]
        assert all(p == per_topic[0] for p in per_topic)  # same partition numbers of every topic
        if per_topic[0]:
            assert per_topic[0] == list(range(per_topic[0][0], per_topic[0][-1] + 1))  # contiguous


def test_uniform_rack_aware_prefers_local_replicas() -> None:
    img = make_image([6], racks=True)  # partition p lives on rack r(p % 3)
    spec = GroupSpec({f"m{j}": MemberSubscriptionSpec(f"m{j}", frozenset({"id0"}), rack_id=RACKS[j]) for j in range(3)})
    a = UniformAssignor().assign(spec, img)
    for j in range(3):
        assert sorted(a[f"m{j}"]["id0"]) == [p for p in range(6) if p % 3 == j]


def test_uniform_rack_aware_heterogeneous_prefers_local_replicas_on_ties() -> None:
    img = make_image([3, 3], racks=True)
    spec = GroupSpec(
        {
            "a": MemberSubscriptionSpec("a", frozenset({"id0", "id1"}), rack_id="r1"),
            "b": MemberSubscriptionSpec("b", frozenset({"id0"}), rack_id="r0"),
        }
    )
    a = UniformAssignor().assign(spec, img)
    check_complete(a, spec, img)
    assert 0 in a["b"]["id0"]  # id0-0 lives on r0
