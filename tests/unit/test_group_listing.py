"""ListGroups over many groups: listed in slices so that other work runs meanwhile (#26 item 3),
and answered the same as a listing taken at once."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.coordinator.group_shard import group_listing
from groupcoord.coordinator.service import answer_budget
from groupcoord.coordinator.service.answer_budget import take_in_slices
from tests.unit.test_group_shard import GroupCoordinatorState, apply, commit, commit_at

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
    turns = 0

    async def other_client() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async def run() -> list[str]:
        ticking = asyncio.create_task(other_client())
        await asyncio.sleep(0)
        listed = await take_in_slices(group_listing(state, (), ()))
        ticking.cancel()
        return [g.group_id for g in listed]

    ids = asyncio.run(run())
    assert sorted(ids) == [f"g{i:05d}" for i in range(GROUPS)]
    assert turns >= GROUPS // 256


def test_a_group_created_while_the_listing_is_taken_does_not_break_it(state: GroupCoordinatorState) -> None:
    listing = group_listing(state, (), ("classic",))
    first = next(listing)
    # The tables change under the listing (a commit adds a group): the rest is still listed.
    apply(state, commit_at(state, commit("late", {0: 1}), 0))
    rest = list(listing)
    assert first.group_id not in {g.group_id for g in rest}
    assert len(rest) == GROUPS - 1
