"""Timer events of consumer groups; the runtime fires them back into ``on_timer``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from groupcoord.coordinator.runtime.api import CancelTimer, ScheduleTimer


@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """The member sent no heartbeat for a whole session timeout."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The member has not revoked its partitions within its rebalance timeout (fires only on that epoch)."""

    group_id: str
    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class AssignmentDue:
    """group.consumer.assignment.interval.ms has passed: a lagging target assignment may be computed."""

    group_id: str


@dataclass(frozen=True, slots=True)
class RegexResolutionDue:
    """The group's subscription regexes are to be resolved (``regex_refresh``), off the heartbeat
    that asked, as Kafka resolves them on its background pool."""

    group_id: str
    # Which topics the principal of the heartbeat that asked may DESCRIBE (None: no authorizer).
    may_describe_topic: Callable[[str], bool] | None = field(default=None, compare=False)


def session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session\x00{group_id}\x00{member_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance\x00{group_id}\x00{member_id}"


def assignment_key(group_id: str) -> str:
    return f"consumer-assignment\x00{group_id}"


def regex_key(group_id: str) -> str:
    return f"consumer-regex\x00{group_id}"


def schedule_session(group_id: str, member_id: str, now_ms: int, session_timeout_ms: int) -> ScheduleTimer:
    return ScheduleTimer(
        session_key(group_id, member_id), now_ms + session_timeout_ms, SessionTimeout(group_id, member_id)
    )


def schedule_rebalance(group_id: str, member_id: str, epoch: int, now_ms: int, timeout_ms: int) -> ScheduleTimer:
    return ScheduleTimer(
        rebalance_key(group_id, member_id), now_ms + max(timeout_ms, 0), RebalanceTimeout(group_id, member_id, epoch)
    )


def schedule_assignment(group_id: str, deadline_ms: int) -> ScheduleTimer:
    return ScheduleTimer(assignment_key(group_id), deadline_ms, AssignmentDue(group_id))


def schedule_regex_resolution(
    group_id: str, now_ms: int, may_describe_topic: Callable[[str], bool] | None
) -> ScheduleTimer:
    return ScheduleTimer(regex_key(group_id), now_ms, RegexResolutionDue(group_id, may_describe_topic))


def cancel_member_timers(group_id: str, member_id: str) -> list[CancelTimer]:
    return [CancelTimer(session_key(group_id, member_id)), CancelTimer(rebalance_key(group_id, member_id))]
