"""The rolling migration classic -> consumer -> classic through the production migration path
(policy ``bidirectional``) on the real shard: 50 scenarios in the suite (2,950 more with --run-slow)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.migration import run_seed


def _run(seeds: range) -> Counter[str]:
    total: Counter[str] = Counter()
    for seed in seeds:
        total.update(run_seed(seed).stats)
    return total


def test_rolling_classic_consumer_classic_50_scenarios() -> None:
    stats = _run(range(50))
    # The scenarios really migrate: groups are upgraded and downgraded, classic and consumer
    # members share consumer groups, and faults happen (seeds 0-49: 44 upgrades and downgrades,
    # 130 crashes, 37 reloads, 80 quiet mixed groups).
    assert stats["upgrade"] >= 37 and stats["downgrade"] >= 37, stats
    assert stats["mixed-steps"] > 1000 and stats["crash"] > 50 and stats["reload"] > 25, stats
    # Halfway through the rolls the group settled with classic and consumer members together.
    assert stats["quiet-mixed"] >= 37, stats
    assert stats["end:classic"] == 50


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_rolling_many_more_scenarios() -> None:
    _run(range(50, 3000))
