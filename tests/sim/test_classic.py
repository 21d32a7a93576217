"""Classic consumers, eager and cooperative (KIP-429) and both stages of the rolling upgrade,
on the real shard over a simulated log; see tests/sim/scenarios/classic.py."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.classic import run_seed

SEEDS = 320


def test_simulated_scenarios_keep_the_invariants() -> None:
    stats: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for seed in range(SEEDS):
        sim = run_seed(seed)
        stats.update(sim.stats)
        kinds[sim.sc.mode] += 1
    # The runs must actually reach the paths they are meant to exercise.
    assert kinds["cooperative"] > 60 and kinds["eager"] > 60 and kinds["upgrade-1"] > 20 and kinds["upgrade-2"] > 20
    assert stats["assignor:range"] > 0 and stats["assignor:cooperative-sticky"] > 0, stats
    assert stats["cooperative_revocations"] > 0, stats
    assert stats["static_rejoin_without_rebalance"] > 0, stats
    assert stats["heartbeat:REBALANCE_IN_PROGRESS"] > 0, stats
    assert stats["join:MEMBER_ID_REQUIRED"] > 0, stats
    assert stats["lost:join"] > 0 and stats["lost:sync"] > 0, stats
    assert stats["fatal:GROUP_MAX_SIZE_REACHED"] > 0, stats
    assert stats["deleted_by_sweep"] > 0, stats  # emptied, deleted by the retention sweep, and joined again


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_simulations() -> None:
    for seed in range(SEEDS, SEEDS + 3000):
        run_seed(seed, chaos_ms=180_000)
