"""ClassicGroupState: the five states of a classic group and the only legal transitions between them."""

from __future__ import annotations

from enum import Enum


class ClassicGroupState(Enum):
    # No members; lingers until its offsets expire. Answers joins from new members.
    EMPTY = "Empty"
    # Join barrier: parks JoinGroups until every known member rejoined or the timeout passed.
    PREPARING_REBALANCE = "PreparingRebalance"
    # Waiting for the leader's SyncGroup; followers' SyncGroups are parked.
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    # Removed (deleted or unloaded); final.
    DEAD = "Dead"

    @property
    def lower_name(self) -> str:
        """The spelling ListGroups' ``states_filter`` matches against."""
        return self.value.lower()


# state -> the states it may be entered from (ClassicGroupState's static block in Kafka).
VALID_PREVIOUS_STATES: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    ClassicGroupState.EMPTY: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
    ClassicGroupState.PREPARING_REBALANCE: frozenset(
        {ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.EMPTY}
    ),
    ClassicGroupState.COMPLETING_REBALANCE: frozenset({ClassicGroupState.PREPARING_REBALANCE}),
    ClassicGroupState.STABLE: frozenset({ClassicGroupState.COMPLETING_REBALANCE}),
    ClassicGroupState.DEAD: frozenset(ClassicGroupState),
}


class IllegalStateTransition(RuntimeError):
    """A transition the state machine forbids: a bug in the protocol logic, never a client error."""


def check_transition(group_id: str, current: ClassicGroupState, target: ClassicGroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"group {group_id!r}: {current.value} -> {target.value} is not a legal transition")
