"""Share-partition state under lost requests and answers, lock expiry, members leaving and
ownership moves with reloads from the (compacted) log; the invariants are listed in
tests/sim/scenarios/share_partition.py."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.share_partition import run_seed

SEEDS = 120


def _run(seeds: range, **kwargs: int) -> Counter[str]:
    stats: Counter[str] = Counter()
    for seed in seeds:
        stats.update(run_seed(seed, **kwargs).stats)
    return stats


def test_share_partition_scenarios_keep_the_invariants() -> None:
    stats = _run(range(SEEDS))
    # The runs reach what they claim to exercise.
    assert stats["move"] >= 100 and stats["compacted"] >= 30 and stats["lost-records"] > 0, stats
    assert stats["restored"] > 0 and stats["answered-at-once"] > 0, stats
    assert stats["lost:answer"] > 0 and stats["lost:fetch"] > 0 and stats["lost:ack"] > 0, stats
    assert stats["ack:INVALID_RECORD_STATE"] > 0 and stats["ack:NONE"] > 1000, stats
    assert stats["archived-at-limit"] > 0 and stats["stalled"] > 0, stats
    assert stats["record:SHARE_SNAPSHOT"] > 0 and stats["record:SHARE_UPDATE"] > 0, stats


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_many_more_share_partition_scenarios() -> None:
    _run(range(100_000, 105_000), steps=1500)
