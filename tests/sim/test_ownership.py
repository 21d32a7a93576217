"""The real shard over a simulated log: ownership moves, zombies, append faults, compaction."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.ownership import run_seed

# The CI slice: these 100 seeds reach every path asserted below. Seeds 100-199 run with
# --run-slow, with 10,000 more.
SEEDS = 100


def _run(seeds: range, **kwargs: int) -> Counter[str]:
    stats: Counter[str] = Counter()
    for seed in seeds:
        stats.update(run_seed(seed, **kwargs).stats)
    return stats


def test_ownership_moves_zombies_and_faults_keep_the_invariants() -> None:
    stats = _run(range(SEEDS))
    # The runs reach what they claim to exercise (seeds 0-99: 97 moves, 25 zombies, 51 reloads).
    assert stats["move"] >= 50 and stats["zombie"] >= 15 and stats["reload"] >= 25, stats
    assert stats["zombie-steps"] > 0 and stats["zombie-fenced"] > 0, stats  # two owners served at once
    assert stats["skipped-zombie-records"] > 0, stats  # zombie writes reached the log, and were ignored
    assert stats["commit:UNKNOWN_SERVER_ERROR"] > 0, stats  # oversized records refused alone
    assert stats["compacted"] > 0 and stats["crash"] > 0, stats
    assert stats["commit:NONE"] > 1000 and stats["hb:NOT_COORDINATOR"] > 0, stats
    # The shard's life, as its transition table has it (checked move by move by the invariant).
    for move in ("loading->claiming", "claiming->active", "active->draining", "draining->loading"):
        assert stats[f"phase:{move}"] > 0, (move, stats)
    assert stats["phase:active->fenced"] > 0 and stats["phase:fenced->loading"] > 0, stats


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_many_more_ownership_scenarios() -> None:
    _run(range(SEEDS, 2 * SEEDS))
    _run(range(100_000, 110_000))
