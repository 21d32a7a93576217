"""The rolling migration classic -> consumer -> classic through the production migration path
(policy ``bidirectional``) on the real shard: 100 scenarios in the suite (more with --run-slow)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.migration import run_seed


def _run(seeds: range) -> Counter[str]:
    total: Counter[str] = Counter()
    for seed in seeds:
        total.update(run_seed(seed).stats)
    return total


def test_rolling_classic_consumer_classic_100_scenarios() -> None:
    stats = _run(range(100))
    # The scenarios really migrate: groups are upgraded and downgraded, classic and consumer
    # members share consumer groups, and faults happen (seeds 0-99: 89 upgrades and downgrades,
    # 272 crashes, 76 reloads, 164 quiet mixed groups).
    assert stats["upgrade"] >= 75 and stats["downgrade"] >= 75, stats
    assert stats["mixed-steps"] > 1000 and stats["crash"] > 50 and stats["reload"] > 25, stats
    # Halfway through the rolls the group settled with classic and consumer members together.
    assert stats["quiet-mixed"] >= 75, stats
    assert stats["end:classic"] == 100


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_rolling_many_more_scenarios() -> None:
    _run(range(100, 3000))
