"""The contract between the shard runtime and the pure group logic.

A handler is a pure function ``(state, request, now_ms) -> Result``. It must not mutate
``state``: the runtime applies ``Result.records`` through the state's own ``replay`` (the same
function used when loading the shard from the log), appends them to the log, and releases
``Result.response`` only once the log has committed them. Timers are data too: a handler asks
for them in ``Result.timers`` and the runtime delivers the ``event`` back to the shard's
``on_timer`` when the deadline passes (time always comes from the runtime's injected clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from records import CoordinatorRecord

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


@dataclass(slots=True)
class Result(Generic[T]):
    response: T
    records: list[CoordinatorRecord] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)


class ShardState(Protocol):
    """In-memory state of one shard, rebuilt only through ``replay``."""

    def replay(self, record: CoordinatorRecord) -> None: ...

    def snapshot(self) -> Any:
        """A plain, comparable picture of the whole state (used to check replay determinism)."""
        ...
