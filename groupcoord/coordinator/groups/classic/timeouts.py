"""The classic protocol's timer handlers (session expiry, join barrier deadline, initial
rebalance delay, sync deadline) and what a freshly loaded shard must arm."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.groups.classic.effects import Effects
from groupcoord.coordinator.groups.classic.group import (
    COMPLETING_REBALANCE,
    DEAD,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
)
from groupcoord.coordinator.groups.classic.rebalance import (
    complete_join_phase,
    prepare_rebalance,
    remove_member,
    remove_member_and_update_group,
    schedule_heartbeat,
)
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.classic.timers import (
    ClassicTimer,
    HeartbeatExpiry,
    InitialRebalanceDelay,
    JoinDeadline,
    SyncDeadline,
    join_key,
)
from groupcoord.coordinator.groups.config import ClassicGroupConfig
from groupcoord.coordinator.runtime.api import Result


def classic_on_timer(
    state: ClassicGroupsState, event: ClassicTimer, now_ms: int, config: ClassicGroupConfig
) -> Result[None]:
    fx = Effects(state.timers)
    if state.timers.claim(event):
        action = event.action
        group = state.groups.get(action.group_id)
        if group is not None and group.state is not DEAD:
            if isinstance(action, HeartbeatExpiry):
                _expire_heartbeat(fx, group, action.member_id, now_ms, config)
            elif isinstance(action, InitialRebalanceDelay):
                _initial_rebalance_delay(fx, group, action, now_ms, config)
            elif isinstance(action, JoinDeadline):
                if group.state is PREPARING_REBALANCE:
                    complete_join_phase(fx, group, now_ms, config)
            elif isinstance(action, SyncDeadline):
                _expire_pending_sync(fx, group, action.generation_id, now_ms, config)
    return fx.result(None)


def classic_on_loaded(state: ClassicGroupsState, now_ms: int, config: ClassicGroupConfig) -> Result[None]:
    """Arm every loaded member's session; rebalance a group now over ``group.max.size``, or one
    whose rebalance a failover interrupted (a downgraded group: ``ClassicGroup.rebalance_on_load``)."""
    fx = Effects(state.timers)
    for group in state.groups.values():
        for member in group.members.values():
            schedule_heartbeat(fx, group, member, now_ms)
        if len(group.members) > config.max_size or group.rebalance_on_load:
            group.rebalance_on_load = False
            prepare_rebalance(fx, group, now_ms, config)
    return fx.result(None)


def is_classic_timer(event: Any) -> bool:
    return isinstance(event, ClassicTimer)


def _expire_heartbeat(
    fx: Effects, group: ClassicGroup, member_id: str, now_ms: int, config: ClassicGroupConfig
) -> None:
    if group.is_pending_member(member_id):
        group.remove(member_id)
        if group.state is PREPARING_REBALANCE and group.has_all_members_joined():
            complete_join_phase(fx, group, now_ms, config)
        return
    member = group.members.get(member_id)
    if member is not None and not member.has_satisfied_heartbeat():
        remove_member_and_update_group(fx, group, member, now_ms, config)


def _initial_rebalance_delay(
    fx: Effects, group: ClassicGroup, action: InitialRebalanceDelay, now_ms: int, config: ClassicGroupConfig
) -> None:
    if group.state is not PREPARING_REBALANCE:
        return
    if group.new_member_added and action.remaining_ms != 0:
        # Members are still arriving: wait another delay, never beyond the rebalance timeout.
        group.new_member_added = False
        delay = min(config.initial_rebalance_delay_ms, action.remaining_ms)
        remaining = max(action.remaining_ms - action.delay_ms, 0)
        fx.schedule(join_key(group.group_id), now_ms + delay, InitialRebalanceDelay(group.group_id, delay, remaining))
        return
    complete_join_phase(fx, group, now_ms, config)


def _expire_pending_sync(
    fx: Effects, group: ClassicGroup, generation_id: int, now_ms: int, config: ClassicGroupConfig
) -> None:
    if generation_id != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
        return
    if not group.pending_sync_members:
        return
    for member_id in list(group.pending_sync_members):
        remove_member(fx, group, member_id)
    prepare_rebalance(fx, group, now_ms, config)
