"""KIP-848 consumer groups: seeded random scenarios on the real shard over a simulated log, through
the production composition: 400 in the default suite, 1000 (and 10,000 more) with --run-slow. A
failure names the seed;
``python -m tests.sim.replay kip848 SEED`` replays it with a trace."""

from __future__ import annotations

import pytest

from tests.sim.kernel import InvariantViolation
from tests.sim.scenarios.kip848 import Scenario, Simulation, run_many, run_seed

CHUNKS = 10
PER_CHUNK = 100
# The CI slice: seeds 0-399. Each chunk reaches every path its assertions name on its own, so
# chunks 4-9 (600 scenarios, ~60% of this file's time) add seeds, not paths: they run with --run-slow.
CI_CHUNKS = 4


@pytest.mark.parametrize(
    "chunk", [c if c < CI_CHUNKS else pytest.param(c, marks=pytest.mark.slow) for c in range(CHUNKS)]
)
def test_random_scenarios(chunk: int) -> None:
    stats = run_many(range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK))
    # The runs reach what they claim to exercise.
    assert stats["hb:NONE"] > 1000 and stats["commit:NONE"] > 1000, stats
    assert stats["crash"] > 0 and stats["reload"] > 0 and stats["metadata"] > 0 and stats["pause"] > 0, stats
    assert stats["hb:FENCED_MEMBER_EPOCH"] + stats["hb:UNKNOWN_MEMBER_ID"] > 0, stats
    assert stats["commit:STALE_MEMBER_EPOCH"] + stats["commit:UNKNOWN_MEMBER_ID"] > 0, stats


def test_large_groups() -> None:
    """The upper end of the default sizes: 50 members, 200 partitions, with every fault."""
    for seed in range(5):
        base = Scenario.random(10_000 + seed)
        sc = Scenario(
            **{**base.__dict__, "members": 50, "partitions": 200, "topics": 4, "fault_rate": 0.05, "reloads": True}
        )
        Simulation(sc).run()


def test_same_seed_same_committed_offsets() -> None:
    # The trace and the log are compared for every scenario in test_determinism.py.
    a, b = run_seed(424242), run_seed(424242)
    assert a.shard.committed.snapshot() == b.shard.committed.snapshot()


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_many_more_scenarios() -> None:
    run_many(range(100_000, 110_000))


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_long_chaos() -> None:
    run_many(range(200_000, 200_300), chaos_ms=60_000)


def test_the_harness_catches_a_coordinator_that_assigns_before_revocation(monkeypatch: pytest.MonkeyPatch) -> None:
    from groupcoord.coordinator.groups.consumer.current_assignment import CurrentAssignmentBuilder

    monkeypatch.setattr(CurrentAssignmentBuilder, "_owns_any", lambda self, partitions: False)
    with pytest.raises(InvariantViolation, match="seed="):
        run_many(range(20))


def test_the_harness_catches_commits_accepted_without_partition_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    from groupcoord.coordinator.errors import ErrorCode
    from groupcoord.coordinator.groups.consumer.group import ConsumerGroup

    def member_only(
        group: ConsumerGroup,
        member_id: str,
        epoch: int,
        parts: object = (),
        api_version: int = 9,
    ) -> ErrorCode:
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        # Newer epochs are still refused, so the only thing missing is the partition-epoch check
        # (a member that left with -2 must not trip the harness's other commit check first).
        if epoch > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # The production composition (ConsumerGroup.validate_offset_commit) validates commits through this method.
    monkeypatch.setattr(ConsumerGroup, "offset_commit_error", member_only)
    with pytest.raises(InvariantViolation, match="accepted but it was not assigned at that epoch"):
        run_many(range(60))
