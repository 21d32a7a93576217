"""ClassicGroupState: only Kafka's legal transitions are allowed."""

from __future__ import annotations

import itertools

import pytest

from groupcoord.coordinator.groups.classic import (
    ClassicGroup,
    ClassicGroupState,
    IllegalStateTransition,
)
from groupcoord.coordinator.groups.classic.group_state import VALID_PREVIOUS_STATES
from groupcoord.coordinator.runtime.api import Result
from tests.groups_classic.harness import Coordinator, protocols, settle
from tests.messages import member_identity

S = ClassicGroupState
LEGAL = {
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.STABLE, S.PREPARING_REBALANCE),
} | {(s, S.DEAD) for s in S}


@pytest.mark.parametrize("source,target", list(itertools.product(S, S)))
def test_transition_table(source: ClassicGroupState, target: ClassicGroupState) -> None:
    group = ClassicGroup("g", state=source)
    if (source, target) in LEGAL:
        group.transition_to(target, 42)
        assert group.state is target
        assert group.previous_state is source
        assert group.current_state_timestamp == 42
    else:
        with pytest.raises(IllegalStateTransition):
            group.transition_to(target, 42)
        assert group.state is source


def test_table_matches_kafka_valid_previous_states() -> None:
    derived = {(p, t) for t, previous in VALID_PREVIOUS_STATES.items() for p in previous}
    assert derived == LEGAL


def test_state_names_are_kafkas() -> None:
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
    assert S.PREPARING_REBALANCE.lower_name == "preparingrebalance"


def test_every_transition_is_reached_through_the_handlers() -> None:
    seen: list[tuple[str, str]] = []
    c = Coordinator()

    def note() -> None:
        group = c.state.group("grp")
        if group is not None and (not seen or seen[-1][1] != group.state.value):
            seen.append((group.previous_state.value, group.state.value))

    _, m1 = c.join_new(client_id="a")
    note()  # Empty -> PreparingRebalance (initial)
    c.advance(3000)
    note()  # -> CompletingRebalance
    t, _ = c.join(m1, protocols_=protocols("range", metadata=b"changed"))
    note()  # CompletingRebalance -> PreparingRebalance -> CompletingRebalance (alone: closes at once)
    settle(c, m1)
    note()  # -> Stable
    c.join(m1)
    note()  # Stable -> PreparingRebalance -> CompletingRebalance
    c.leave(member_identity(m1))
    note()  # CompletingRebalance -> PreparingRebalance -> Empty
    group = c.group()
    c.apply(Result(None, c.state.delete_group_records("grp")))
    assert group.state is S.DEAD and group.previous_state is S.EMPTY
    assert seen == [
        ("Empty", "PreparingRebalance"),
        ("PreparingRebalance", "CompletingRebalance"),
        ("CompletingRebalance", "Stable"),
        ("PreparingRebalance", "CompletingRebalance"),
        ("PreparingRebalance", "Empty"),
    ]
