"""Seeded random runs of share-group membership (joins, heartbeats, subscription changes, leaves,
session expiries, topics growing), with the invariants checked after every step: the state equals
the replay of its records; group epoch >= assignment epoch >= every member epoch; a member holds
only partitions of topics it subscribes to; once every member has heartbeated at the current
epoch, every partition of a subscribed topic is held by someone and every member has work."""

from __future__ import annotations

import random

import pytest

from groupcoord.coordinator.errors import ErrorCode
from tests.groups_share.harness import GROUP, Coordinator, image, topic
from tests.messages import tid

TOPICS = ("a", "b")


def _check(c: Coordinator) -> None:
    assert c.replayed().snapshot() == c.state.snapshot()
    g = c.state.share.group(GROUP)
    if g is None:
        return
    assert g.group_epoch >= g.assignment_epoch
    for m in g.members.values():
        assert m.member_epoch <= g.assignment_epoch
        subscribed = {tid(name) for name in m.subscribed_topic_names}
        assert set(m.assigned) <= subscribed
        for t, ps in m.assigned.items():
            assert all(0 <= p < c.metadata.partition_count(t) for p in ps)


def _settle(c: Coordinator) -> None:
    """Every member heartbeats until none moves (at most a few rounds)."""
    g = c.state.share.group(GROUP)
    for _ in range(3):
        if g is None:
            return
        for mid in sorted(g.members):
            r = c.beat(mid, g.members[mid].member_epoch)
            assert r.error_code == ErrorCode.NONE
            _check(c)
    if g is None or not g.members:
        return
    held = {(t, p) for m in g.members.values() for t, ps in m.assigned.items() for p in ps}
    wanted = {
        (tid(name), p)
        for m in g.members.values()
        for name in m.subscribed_topic_names
        for p in range(c.metadata.partition_count(tid(name)))
    }
    assert held == wanted
    assert all(m.assigned for m in g.members.values())


@pytest.mark.parametrize("seed", range(8))
def test_random_membership_keeps_the_invariants(seed: int) -> None:
    rng = random.Random(seed)
    sizes = {"a": rng.randint(1, 4), "b": rng.randint(1, 3)}
    c = Coordinator(image(*(topic(n, s) for n, s in sizes.items())))
    version = 1
    for step in range(45):
        g = c.state.share.group(GROUP)
        members = sorted(g.members) if g is not None else []
        action = rng.random()
        if action < 0.3 or not members:
            c.join(f"m{step}", rng.sample(TOPICS, rng.randint(1, 2)))
        elif action < 0.6:
            mid = rng.choice(members)
            assert c.beat(mid, g.members[mid].member_epoch).error_code == ErrorCode.NONE  # type: ignore[union-attr]
        elif action < 0.7:
            mid = rng.choice(members)
            epoch = g.members[mid].member_epoch  # type: ignore[union-attr]
            c.beat(mid, epoch, subscribed_topic_names=rng.sample(TOPICS, rng.randint(1, 2)))
        elif action < 0.8:
            c.beat(rng.choice(members), -1)
        elif action < 0.9:
            c.fire(f"share-session\x00{GROUP}\x00{rng.choice(members)}")
        else:
            name = rng.choice(TOPICS)
            sizes[name] += 1
            version += 1
            c.metadata = image(*(topic(n, s) for n, s in sizes.items()), version=version)
        _check(c)
        if step % 15 == 14:
            _settle(c)
    _settle(c)
