"""Timers of classic members living inside a consumer group (Kafka's consumer-group join and
sync timeouts for classic-protocol members)."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.coordinator.runtime.api import CancelTimer, ScheduleTimer, TimerOp


@dataclass(frozen=True, slots=True)
class ClassicMemberJoinTimeout:
    """A classic member told to rejoin (REBALANCE_IN_PROGRESS) did not send JoinGroup in time."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ClassicMemberSyncTimeout:
    """A classic member answered by JoinGroup did not send SyncGroup within its rebalance timeout."""

    group_id: str
    member_id: str


MigrationTimer = ClassicMemberJoinTimeout | ClassicMemberSyncTimeout


def join_timeout_key(group_id: str, member_id: str) -> str:
    return f"migration-join\x00{group_id}\x00{member_id}"


def sync_timeout_key(group_id: str, member_id: str) -> str:
    return f"migration-sync\x00{group_id}\x00{member_id}"


def schedule_join_timeout(group_id: str, member_id: str, deadline_ms: int) -> ScheduleTimer:
    return ScheduleTimer(
        join_timeout_key(group_id, member_id), deadline_ms, ClassicMemberJoinTimeout(group_id, member_id)
    )


def schedule_sync_timeout(group_id: str, member_id: str, now_ms: int, timeout_ms: int) -> ScheduleTimer:
    return ScheduleTimer(
        sync_timeout_key(group_id, member_id),
        now_ms + max(timeout_ms, 0),
        ClassicMemberSyncTimeout(group_id, member_id),
    )


def cancel_classic_member_timers(group_id: str, member_id: str) -> list[TimerOp]:
    return [CancelTimer(join_timeout_key(group_id, member_id)), CancelTimer(sync_timeout_key(group_id, member_id))]
