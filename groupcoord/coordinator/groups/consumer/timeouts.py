"""Timer expiries (session timeout, rebalance timeout, throttled assignment, regex resolution) and timers
after a load."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.assignment import can_compute_target, compute_target_assignment
from groupcoord.coordinator.groups.consumer.fencing import fence_members
from groupcoord.coordinator.groups.consumer.member import MemberState
from groupcoord.coordinator.groups.consumer.regex_refresh import resolution_records
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.groups.consumer.timers import (
    AssignmentDue,
    RebalanceTimeout,
    RegexResolutionDue,
    SessionTimeout,
    schedule_assignment,
    schedule_rebalance,
    schedule_session,
)
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.runtime.api import Result, TimerOp

DEFAULT_CONFIG = ConsumerGroupConfig()


def on_timer(
    state: ConsumerGroupsState,
    event: Any,
    now_ms: int,
    metadata: TopicsImage,
    config: ConsumerGroupConfig = DEFAULT_CONFIG,
) -> Result[None]:
    """Handle a fired timer. Every check is repeated against the current state: a timer may
    outlive what it was armed for (the member left, was replaced, or moved to a new epoch)."""
    if isinstance(event, SessionTimeout):
        group = state.group(event.group_id)
        member = group.members.get(event.member_id) if group is not None else None
        if group is None or member is None:
            return Result(None)
        records, timers = fence_members(group, [member.member_id], metadata)
        return Result(None, records, timers)
    if isinstance(event, RebalanceTimeout):
        group = state.group(event.group_id)
        member = group.members.get(event.member_id) if group is not None else None
        if (
            group is None
            or member is None
            or member.member_epoch != event.member_epoch
            or member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            return Result(None)
        records, timers = fence_members(group, [member.member_id], metadata)
        return Result(None, records, timers)
    if isinstance(event, RegexResolutionDue):
        group = state.group(event.group_id)
        return Result(None, resolution_records(group, event, metadata, now_ms) if group is not None else [])
    if isinstance(event, AssignmentDue):
        group = state.group(event.group_id)
        if group is None or not group.members or group.group_epoch <= group.assignment_epoch:
            return Result(None)
        if not can_compute_target(group.assignment_timestamp, now_ms, config):
            deadline = group.assignment_timestamp + config.assignment_interval_ms
            return Result(None, [], [schedule_assignment(group.group_id, deadline)])
        result = compute_target_assignment(
            group.group_id,
            group.group_epoch,
            group.members,
            group.regexes,
            group.target,
            metadata,
            config,
            now_ms,
            group.target_index(),
        )
        return Result(None, result.records)
    return Result(None)


def on_loaded(
    state: ConsumerGroupsState,
    now_ms: int,
    config: ConsumerGroupConfig = DEFAULT_CONFIG,
    group_config: Callable[[str], ConsumerGroupConfig] | None = None,
) -> list[TimerOp]:
    """Timers live in memory only: after a load every member gets a fresh session timeout (the
    group's own ``consumer.session.timeout.ms`` when ``group_config`` gives one), members still
    revoking a fresh rebalance timeout, and lagging groups an assignment timer."""
    timers: list[TimerOp] = []
    for gid in sorted(state.groups):
        group = state.groups[gid]
        own = group_config(gid) if group_config is not None else config
        for mid in sorted(group.members):
            member = group.members[mid]
            session_ms = (
                member.classic_member_metadata.session_timeout_ms
                if member.classic_member_metadata is not None
                else own.session_timeout_ms
            )
            timers.append(schedule_session(gid, mid, now_ms, session_ms))
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                timers.append(schedule_rebalance(gid, mid, member.member_epoch, now_ms, member.rebalance_timeout_ms))
        if group.members and group.group_epoch > group.assignment_epoch:
            timers.append(
                schedule_assignment(gid, max(now_ms, group.assignment_timestamp + own.assignment_interval_ms))
            )
    return timers
