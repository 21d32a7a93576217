"""The share-group session timer (Kafka's scheduleShareGroupSessionTimeout): the runtime fires
``ShareSessionTimeout`` back into ``on_timer``; a load re-arms it for every member."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.coordinator.groups.config import ShareGroupConfig
from groupcoord.coordinator.runtime.api import CancelTimer, ScheduleTimer, TimerOp


@dataclass(frozen=True, slots=True)
class ShareSessionTimeout:
    """The member sent no heartbeat for a whole ``share.session.timeout.ms``."""

    group_id: str
    member_id: str


def session_key(group_id: str, member_id: str) -> str:
    return f"share-session\x00{group_id}\x00{member_id}"


def schedule_session(group_id: str, member_id: str, now_ms: int, session_timeout_ms: int) -> ScheduleTimer:
    return ScheduleTimer(
        session_key(group_id, member_id), now_ms + session_timeout_ms, ShareSessionTimeout(group_id, member_id)
    )


def cancel_session(group_id: str, member_id: str) -> CancelTimer:
    return CancelTimer(session_key(group_id, member_id))


def on_loaded_timers(
    members: dict[str, list[str]], now_ms: int, group_config: Callable[[str], ShareGroupConfig]
) -> list[TimerOp]:
    """Timers live in memory only: after a load every member (group id -> member ids) gets a
    fresh session timeout, its group's own ``share.session.timeout.ms``."""
    return [
        schedule_session(gid, mid, now_ms, group_config(gid).session_timeout_ms)
        for gid in sorted(members)
        for mid in sorted(members[gid])
    ]
