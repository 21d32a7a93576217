"""The classic protocol's timers (session, join, initial delay, sync) and their bookkeeping.

Every timer the runtime fires comes back wrapped in a ``ClassicTimer`` carrying the sequence
number it was scheduled with. A timer that was rescheduled or cancelled after it fired but
before its event ran is stale; ``TimerBook.claim`` rejects it, as Kafka's coordinator timer
drops a task that is no longer the one registered under its key.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.runtime.api import CancelTimer, ScheduleTimer


@dataclass(frozen=True, slots=True)
class HeartbeatExpiry:
    """A member (or a pending member) did not heartbeat within its session timeout."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class InitialRebalanceDelay:
    """``group.initial.rebalance.delay.ms`` passed in a new group's first rebalance."""

    group_id: str
    delay_ms: int
    remaining_ms: int


@dataclass(frozen=True, slots=True)
class JoinDeadline:
    """The rebalance timeout passed: close the join barrier with whoever rejoined."""

    group_id: str


@dataclass(frozen=True, slots=True)
class SyncDeadline:
    """The rebalance timeout passed after the join: members that never synced are removed."""

    group_id: str
    generation_id: int


TimerAction = HeartbeatExpiry | InitialRebalanceDelay | JoinDeadline | SyncDeadline


@dataclass(frozen=True, slots=True)
class ClassicTimer:
    """The event the runtime hands back to ``on_timer``; route it to ``classic_on_timer``."""

    key: str
    seq: int
    action: TimerAction


def heartbeat_key(group_id: str, member_id: str) -> str:
    # The group id's length keeps "a:b"+"c" and "a"+"b:c" apart.
    return f"classic-heartbeat:{len(group_id)}:{group_id}:{member_id}"


def join_key(group_id: str) -> str:
    return f"classic-join:{group_id}"


def sync_key(group_id: str) -> str:
    return f"classic-sync:{group_id}"


class TimerBook:
    """Which timer is current under each key (soft state: a reload reschedules in ``on_loaded``)."""

    def __init__(self) -> None:
        self._seq = 0
        self._current: dict[str, int] = {}

    def schedule(self, key: str, deadline_ms: int, action: TimerAction) -> ScheduleTimer:
        self._seq += 1
        self._current[key] = self._seq
        return ScheduleTimer(key, deadline_ms, ClassicTimer(key, self._seq, action))

    def cancel(self, key: str) -> CancelTimer:
        self._current.pop(key, None)
        return CancelTimer(key)

    def claim(self, timer: ClassicTimer) -> bool:
        """True (once) if ``timer`` is still the one registered under its key."""
        if self._current.get(timer.key) != timer.seq:
            return False
        del self._current[timer.key]
        return True

    def is_scheduled(self, key: str) -> bool:
        return key in self._current
