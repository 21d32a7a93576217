"""The contract between the shard runtime and the pure group logic.

A handler is a pure function ``(state, request, now_ms) -> Result``. It must not mutate the
persisted part of ``state``: the runtime applies ``Result.records`` through the state's own
``replay`` (the same function used when loading the shard from the log), appends them to the
log, and releases ``Result.response`` only once the log has committed them. A handler may
update transient, never-persisted bookkeeping (which classic members are waiting in a join
barrier, say); that part is excluded from ``snapshot()`` and starts empty after a load, as in
Kafka, where waiting clients simply retry against the new coordinator. Timers are data too: a handler asks
for them in ``Result.timers`` and the runtime delivers the ``event`` back to the shard's
``on_timer`` when the deadline passes (time always comes from the runtime's injected clock).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from groupcoord.records import CoordinatorRecord

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Fire ``event`` at ``deadline_ms``; a timer with the same key replaces the earlier one."""

    key: str
    deadline_ms: int
    event: Any


@dataclass(frozen=True, slots=True)
class CancelTimer:
    key: str


TimerOp = ScheduleTimer | CancelTimer


@dataclass(frozen=True, slots=True)
class Park:
    """Returned as the response of a request that is answered later (a classic JoinGroup
    waiting for the join barrier, a follower's SyncGroup waiting for the leader). A later
    ``Result.completions`` entry with the same token answers it."""

    token: Hashable


@dataclass(slots=True)
class Result(Generic[T]):
    response: T | Park
    # A list, or a plain commit's records as columns (``OffsetCommitRun``): a handler adding
    # records to another's result makes a new list (``[*result.records, *more]``).
    records: Sequence[CoordinatorRecord] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)
    # Answers to parked requests, released (like ``response``) once ``records`` are committed.
    completions: list[tuple[Hashable, Any]] = field(default_factory=list)
    # Set by a handler whose answer, given with no records, the same request would get again
    # while the state it read is unchanged (a steady heartbeat): at a later ``now_ms``, the timers
    # that repeat sets, or None once its answer no longer stands. Pure, as the handler.
    again: Callable[[int], list[TimerOp] | None] | None = None


class ShardState(Protocol):
    """In-memory state of one shard, rebuilt only through ``replay``."""

    def replay(self, record: CoordinatorRecord) -> None: ...

    def snapshot(self) -> Any:
        """A plain, comparable picture of the whole state (used to check replay determinism)."""
        ...


def replay_all(state: ShardState, records: Sequence[CoordinatorRecord]) -> None:
    """Replay ``records`` in order: through the state's ``replay_all`` where it has one (which
    must do what replaying each does; a commit's hundred records are placed in one loop), else
    one by one."""
    bulk = getattr(state, "replay_all", None)
    if bulk is not None:
        bulk(records)
        return
    for record in records:
        state.replay(record)


def replay_noting(state: ShardState, records: Sequence[CoordinatorRecord]) -> Any:
    """``replay_all``, and what the state noted of it (its ``replay_noting``; None where it has
    none): handed with the same records to ``replay_noted`` of another state that stood where
    this one stood, it spares that state the work (the read-back of the shard's own writes)."""
    noting = getattr(state, "replay_noting", None)
    if noting is not None:
        return noting(records)
    replay_all(state, records)
    return None


def replay_noted(state: ShardState, records: Sequence[CoordinatorRecord], notes: Any) -> None:
    """``replay_all`` of ``records`` into ``state``, given the ``notes`` that replaying them
    into another state gave (``replay_noting``); what comes out must be what ``replay_all``
    gives whatever the notes say (the state uses a note only where it can tell it applies)."""
    noted = getattr(state, "replay_noted", None) if notes is not None else None
    if noted is not None:
        noted(records, notes)
        return
    replay_all(state, records)
