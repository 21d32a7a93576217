"""``PlacementHealth``: when placement counts against readiness (a fake clock)."""

from groupcoord.coordinator.observability.http import Readiness
from groupcoord.coordinator.observability.placement_health import PlacementHealth, settle_bound_s

SESSION_S = 10.0


def test_settle_bound_is_three_sessions_and_ten_seconds() -> None:
    assert settle_bound_s(SESSION_S) == 40.0


def test_shards_ownerless_for_a_rebalance_are_not_a_problem() -> None:
    health = PlacementHealth(settle_s=40.0)
    assert health.look([], 0.5, SESSION_S, now=100.0) is None
    # A peer killed: its shards have no owner for its session and the rebalance.
    assert health.look([2, 3], 0.5, SESSION_S, now=101.0) is None
    assert health.look([2, 3], 0.5, SESSION_S, now=140.0) is None
    assert health.look([], 0.5, SESSION_S, now=141.0) is None
    # The spell ended: a new one counts from its own start.
    assert health.look([3], 0.5, SESSION_S, now=150.0) is None
    assert health.look([3], 0.5, SESSION_S, now=189.0) is None


def test_shards_ownerless_past_the_bound_are_named() -> None:
    health = PlacementHealth(settle_s=40.0)
    assert health.look([1, 2], 0.5, SESSION_S, now=0.0) is None
    problem = health.look([1, 2], 0.5, SESSION_S, now=41.0)
    assert problem is not None and "2 shard(s) without an owner for 41s" in problem and "1, 2" in problem
    assert health.look([], 0.5, SESSION_S, now=42.0) is None


def test_a_long_list_of_shards_is_cut() -> None:
    health = PlacementHealth(settle_s=1.0)
    health.look(list(range(100)), 0.0, SESSION_S, now=0.0)
    problem = health.look(list(range(100)), 0.0, SESSION_S, now=2.0)
    assert problem is not None and problem.endswith("14, 15, ...") and "100 shard(s)" in problem


def test_a_start_that_never_settles_counts_from_the_start() -> None:
    health = PlacementHealth(settle_s=40.0, started=0.0)
    # The first look comes after serve waited the whole bound for its first assignment.
    assert health.look([0, 1], 0.5, SESSION_S, now=40.5) is not None
    settled = PlacementHealth(settle_s=40.0, started=0.0)
    assert settled.look([], 0.5, SESSION_S, now=40.5) is None
    assert settled.look([0], 0.5, SESSION_S, now=41.0) is None


def test_out_of_contact_with_the_placement_group_is_a_problem_at_once() -> None:
    health = PlacementHealth(settle_s=40.0)
    assert health.look([], SESSION_S, SESSION_S, now=0.0) is None
    problem = health.look([], SESSION_S + 1, SESSION_S, now=1.0)
    assert problem is not None and "no answer from the placement group's coordinator for 11s" in problem


def test_readiness_reports_the_placement_problem() -> None:
    readiness = Readiness()
    readiness.set_listening(True)
    readiness.set_shards({0: "active"})
    assert readiness.answer()[0]
    readiness.set_placement_problem("3 shard(s) without an owner for 41s (placement has not settled): 1, 2, 3")
    ready, body = readiness.answer()
    assert not ready and str(body["placement"]).startswith("3 shard(s)")
    readiness.set_placement_problem(None)
    ready, body = readiness.answer()
    assert ready and "placement" not in body
