"""Seeded simulations of eager and cooperative (KIP-429) classic clients; see ``sim``."""

from __future__ import annotations

from collections import Counter

import pytest

from coordinator.groups.classic import (
    Subscription,
    TopicPartitions,
)
from tests.groups_classic.sim import Scenario, Simulation
from tests.sim.clients import cooperative_sticky_assign, range_assign

SEEDS = 320


def test_simulated_scenarios_keep_the_invariants() -> None:
    stats: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for seed in range(SEEDS):
        sim = Simulation(Scenario.random(seed))
        sim.run()
        stats.update(sim.stats)
        kinds[sim.sc.mode] += 1
    # The runs must actually reach the paths they are meant to exercise.
    assert kinds["cooperative"] > 60 and kinds["eager"] > 60 and kinds["upgrade-1"] > 20 and kinds["upgrade-2"] > 20
    assert stats["assignor:range"] > 0 and stats["assignor:cooperative-sticky"] > 0
    assert stats["cooperative_revocations"] > 0
    assert stats["static_rejoin_without_rebalance"] > 0
    assert stats["heartbeat:REBALANCE_IN_PROGRESS"] > 0
    assert stats["join:MEMBER_ID_REQUIRED"] > 0
    assert stats["lost:join"] > 0 and stats["lost:sync"] > 0
    assert stats["GROUP_MAX_SIZE_REACHED"] > 0


def test_same_seed_same_run() -> None:
    a = Simulation(Scenario.random(7))
    a.run()
    b = Simulation(Scenario.random(7))
    b.run()
    assert a.trace == b.trace
    assert a.log.entries == b.log.entries


@pytest.mark.slow
def test_long_simulations() -> None:
    for seed in range(SEEDS, SEEDS + 3000):
        Simulation(Scenario.random(seed, chaos_ms=180_000)).run()


def test_cooperative_assignor_revokes_before_it_reassigns() -> None:
    topics = {"t": 4}
    owned = Subscription(("t",), owned_partitions=(TopicPartitions("t", (0, 1, 2, 3)),), generation_id=1)
    fresh = Subscription(("t",), generation_id=-1)
    first = cooperative_sticky_assign({"a": owned, "b": fresh}, topics)
    # Two partitions must move from a to b: in the first round they go to nobody.
    assert first == {"a": {("t", 0), ("t", 1)}, "b": set()}
    kept = Subscription(("t",), owned_partitions=(TopicPartitions("t", (0, 1)),), generation_id=2)
    second = cooperative_sticky_assign({"a": kept, "b": fresh}, topics)
    assert second == {"a": {("t", 0), ("t", 1)}, "b": {("t", 2), ("t", 3)}}


def test_range_assignor() -> None:
    assert range_assign(["b", "a"], {"t": 3}) == {"a": {("t", 0), ("t", 1)}, "b": {("t", 2)}}
