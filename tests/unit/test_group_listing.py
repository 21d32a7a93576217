"""ListGroups over many groups: listed, filtered and sorted in slices so that other work runs
meanwhile (#26 item 3), and answered the same as a listing taken at once."""

from __future__ import annotations

import asyncio
import gc
import operator
import random
from collections.abc import Callable
from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, group_listing
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.runtime import collector
from groupcoord.coordinator.service import answer_budget
from groupcoord.coordinator.service.answer_budget import (
    SORTED_AT_ONCE,
    kept_in_slices,
    sorted_in_slices,
    take_in_slices,
)
from groupcoord.coordinator.service.service import GroupCoordinatorService, list_groups_answer
from tests.loop_turns import turns_while
from tests.unit.test_group_shard import GroupCoordinatorState, apply, commit, commit_at, join_consumer

GROUPS = 3000


@pytest.fixture
def state() -> GroupCoordinatorState:
    state = GroupCoordinatorState()
    for i in range(GROUPS):
        apply(state, commit_at(state, commit(f"g{i:05d}", {0: i}), 0))
    return state


def test_a_listing_lets_the_event_loop_run_while_it_is_taken(
    state: GroupCoordinatorState, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no time allowance, the listing yields after every 256 groups: count the other task's turns.
    monkeypatch.setattr(answer_budget, "YIELD_EVERY_SECONDS", 0.0)
    listed, turns = turns_while(lambda: take_in_slices(group_listing(state, (), ())))
    assert sorted(g.group_id for g in listed) == [f"g{i:05d}" for i in range(GROUPS)]
    assert turns >= GROUPS // 256


def test_a_group_created_while_the_listing_is_taken_does_not_break_it(state: GroupCoordinatorState) -> None:
    listing = group_listing(state, (), ("classic",))
    first = next(listing)
    assert first is not None
    # The tables change under the listing (a commit adds a group): the rest is still listed.
    apply(state, commit_at(state, commit("late", {0: 1}), 0))
    rest = [g for g in listing if g is not None]
    assert first.group_id not in {g.group_id for g in rest}
    assert len(rest) == GROUPS - 1


def test_a_filter_that_lists_nothing_still_lets_the_loop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_budget, "YIELD_EVERY_SECONDS", 0.0)
    state = GroupCoordinatorState()
    for i in range(600):
        join_consumer(state, f"c{i:04d}")
    # Only classic groups asked for: every consumer group is looked at and left out.
    listed, during = turns_while(lambda: take_in_slices(group_listing(state, (), ("classic",))))
    assert listed == []
    assert during >= 2


@pytest.mark.parametrize("count", [0, 5, SORTED_AT_ONCE, SORTED_AT_ONCE + 1, 5 * SORTED_AT_ONCE + 17])
@pytest.mark.parametrize("distinct", [3, 10**9])
def test_a_sort_in_slices_is_the_stable_sort(count: int, distinct: int) -> None:
    rng = random.Random(count * 7 + distinct)
    # (key, place in the input): equal keys must keep their order, as ``sorted`` keeps it.
    items = [(f"g{rng.randrange(distinct)}", i) for i in range(count)]
    key = operator.itemgetter(0)
    assert asyncio.run(sorted_in_slices(items, key)) == sorted(items, key=key)
    ascending = sorted(items)
    assert asyncio.run(sorted_in_slices(ascending, key)) == ascending
    assert asyncio.run(sorted_in_slices(ascending[::-1], key)) == sorted(ascending[::-1], key=key)


def test_the_listing_answer_is_sorted_while_the_loop_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_budget, "YIELD_EVERY_SECONDS", 0.0)
    rng = random.Random(5)
    groups = [GroupSummary(f"g{rng.randrange(10**9):09d}", "", "Empty", "classic") for _ in range(3 * SORTED_AT_ONCE)]
    half = len(groups) // 2
    answer, during = turns_while(lambda: list_groups_answer([groups[:half], ErrorCode.NOT_COORDINATOR, groups[half:]]))
    assert answer == (0, sorted(groups, key=lambda g: g.group_id))
    assert during > 0


def test_a_filter_in_slices_keeps_what_it_keeps_and_lets_the_loop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_budget, "YIELD_EVERY_SECONDS", 0.0)
    kept, during = turns_while(lambda: kept_in_slices(range(3000), lambda i: i % 1000 == 0))
    assert kept == [0, 1000, 2000]
    # Every item looked at counts, not only those kept.
    assert during >= 3000 // 256 - 1


class _Shard:
    def __init__(self, state: GroupCoordinatorState) -> None:
        self.state = state

    def read_live(self, fn: Callable[[GroupCoordinatorState], Any]) -> Any:
        return fn(self.state)


class _Runtime:
    def __init__(self, state: GroupCoordinatorState) -> None:
        self.shards = {0: _Shard(state)}


def test_the_rows_of_a_listing_are_frozen_and_never_walked_by_a_young_collection(
    state: GroupCoordinatorState, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A listing this long is frozen (``FREEZE_ANSWER_MIN_ROWS``, 10,000 in serve: smaller ones
    # are left to young collections, which walk them in well under a millisecond).
    monkeypatch.setattr(collector, "FREEZE_ANSWER_MIN_ROWS", GROUPS)
    service = GroupCoordinatorService(_Runtime(state), GroupCoordinatorShard())  # type: ignore[arg-type]
    collections: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    collector.SHARED.install()
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    # Young collections every 100 new objects: the listing's 3,000 rows would set off dozens.
    gc.set_threshold(100, *thresholds[1:])
    gc.callbacks.append(seen)
    try:

        async def listed() -> tuple[int, list[GroupSummary], list[int]]:
            collections.clear()
            code, rows = await service.list_groups()
            return code, rows, list(collections)

        code, rows, during = asyncio.run(listed())
        assert code == 0 and len(rows) == GROUPS
        assert during == []
        # Frozen as made: the collections after the listing do not walk them either.
        assert gc.get_freeze_count() >= frozen + GROUPS
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*thresholds)
        collector.SHARED.uninstall()


def test_a_state_filter_is_trimmed_and_case_blind_as_in_kafka() -> None:
    """GroupMetadataManager.listGroups lower-cases and trims each state filter."""
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("simple", {0: 1}), 0))
    listed = [g for g in group_listing(state, [" Empty "], []) if g is not None]
    assert [g.group_id for g in listed] == ["simple"]
