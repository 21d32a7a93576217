"""Transactional offsets on the real shard over a simulated log: markers, aborts (the client's and
the cluster's own), plain commits, moves and reloads (tests/sim/scenarios/transactions.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.sim.scenarios.transactions import run_seed

SEEDS = 80


def _run(seeds: range) -> Counter[str]:
    stats: Counter[str] = Counter()
    for seed in seeds:
        stats.update(run_seed(seed).stats)
    return stats


def test_transactional_offsets_keep_invariant_7_and_apply_exactly_once() -> None:
    stats = _run(range(SEEDS))
    # The runs reach what they claim to exercise.
    assert stats["commit"] > 300 and stats["abort"] > 150 and stats["timeout-abort"] > 50, stats
    assert stats["move"] > 30 and stats["reload"] > 15 and stats["plain"] > 80, stats
    assert stats["stage:ok"] > 500 and stats["resolved"] > 500, stats


def test_a_plain_commit_overtaking_a_staged_offset_survives_compaction_and_a_reload() -> None:
    """Seed 101163 of the slow run: a plain commit overtakes producer 1's staged offset, producer
    2's next committed transaction shadows that plain commit, and a reload (which replays what
    compaction would leave) must still know producer 1's offset was overtaken."""
    stats = run_seed(101163).stats
    assert stats["plain"] and stats["reload"], stats


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_many_more_transactional_scenarios() -> None:
    _run(range(100_000, 105_000))
