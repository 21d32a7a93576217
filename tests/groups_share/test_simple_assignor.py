"""The simple share assignor's rules (KIP-932): every member gets work, each partition is shared
by ceil(members / partitions), balance before stickiness, heterogeneous groups per topic."""

from __future__ import annotations

import random

import pytest

from groupcoord.coordinator.groups.assignors import GroupSpec, MemberSubscriptionSpec
from groupcoord.coordinator.groups.assignors.simple import SimpleAssignor, desired_counts
from tests.groups_share.harness import image, topic
from tests.messages import tid

T, U = tid("t"), tid("u")
ASSIGNOR = SimpleAssignor()


def _spec(subs: dict[str, set[str]], current: dict[str, dict[str, set[int]]] | None = None) -> GroupSpec:
    current = current or {}
    return GroupSpec(
        {
            m: MemberSubscriptionSpec(m, frozenset(ts), {t: frozenset(ps) for t, ps in current.get(m, {}).items()})
            for m, ts in subs.items()
        }
    )


@pytest.mark.parametrize(
    ("partitions", "members", "expected"),
    [(3, 2, [2, 1]), (2, 5, [2, 1, 1, 1, 1]), (4, 4, [1, 1, 1, 1]), (0, 3, [0, 0, 0]), (7, 3, [3, 2, 2])],
)
def test_desired_counts(partitions: int, members: int, expected: list[int]) -> None:
    assert desired_counts(partitions, members) == expected


@pytest.mark.parametrize(("partitions", "members"), [(1, 1), (1, 4), (3, 2), (2, 5), (6, 6), (10, 3), (3, 10)])
def test_balance_and_sharing_from_scratch(partitions: int, members: int) -> None:
    ids = [f"m{i}" for i in range(members)]
    out = ASSIGNOR.assign(_spec({m: {T} for m in ids}), image(topic("t", partitions)))
    sharing = -(-members // partitions)
    holders = {p: [m for m in ids if p in out[m].get(T, ())] for p in range(partitions)}
    assert all(len(h) == sharing for h in holders.values())
    sizes = sorted(len(out[m].get(T, ())) for m in ids)
    assert sizes[0] >= 1 and sizes[-1] - sizes[0] <= 1


def test_sticky_when_balanced_and_rebalanced_when_a_member_joins() -> None:
    img = image(topic("t", 4))
    current = {"a": {T: {0, 1}}, "b": {T: {2, 3}}}
    assert ASSIGNOR.assign(_spec({"a": {T}, "b": {T}}, current), img) == {
        "a": {T: frozenset({0, 1})},
        "b": {T: frozenset({2, 3})},
    }
    out = ASSIGNOR.assign(_spec({"a": {T}, "b": {T}, "c": {T}}, current), img)
    # a keeps its two (its count), b keeps one of its own, c takes the one b gave up.
    assert out["a"] == {T: frozenset({0, 1})}
    assert out["b"][T] < {2, 3} and len(out["b"][T]) == 1
    assert out["c"][T] == frozenset({2, 3}) - out["b"][T]


def test_unsubscribed_topics_are_dropped_and_heterogeneous_groups_balance_per_topic() -> None:
    img = image(topic("t", 2), topic("u", 2))
    out = ASSIGNOR.assign(_spec({"a": {T}, "b": {U}, "c": {T, U}}, {"a": {U: {0}}}), img)
    assert U not in out["a"]
    assert sorted(out["a"][T] | out["c"].get(T, frozenset())) == [0, 1]
    assert sorted(out["b"][U] | out["c"].get(U, frozenset())) == [0, 1]
    assert out["c"].get(T) and out["c"].get(U)


def test_deterministic_whatever_the_order_of_the_input() -> None:
    img = image(topic("t", 5), topic("u", 3))
    subs = {f"m{i}": ({T, U} if i % 2 else {T}) for i in range(7)}
    expected = ASSIGNOR.assign(_spec(subs), img)
    items = list(subs.items())
    for seed in range(5):
        random.Random(seed).shuffle(items)
        assert ASSIGNOR.assign(_spec(dict(items)), img) == expected
