"""Drives the pure classic-group handlers the way the shard runtime does: records are encoded
and decoded through the real codec before replay, timers are kept by key (a new one replaces
the old) and fire in deadline order, parked requests are answered by later completions."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.groups.classic import (
    ClassicGroup,
    ClassicGroupConfig,
    ClassicGroupsState,
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_on_loaded,
    classic_on_timer,
    classic_sync,
)
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequestMemberIdentity, LeaveGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import CancelTimer, Park, Result, ScheduleTimer
from groupcoord.records import CoordinatorRecord, decode, encode
from tests.messages import client, heartbeat_request, join_protocol, join_request, leave_request, sync_request

GROUP = "grp"
PROTOCOL_TYPE = "consumer"


def protocols(*names: str, metadata: bytes = b"m") -> tuple[JoinGroupRequestProtocol, ...]:
    return tuple(join_protocol(n, metadata) for n in names)


@dataclass
class Coordinator:
    config: ClassicGroupConfig = field(default_factory=ClassicGroupConfig)
    state: ClassicGroupsState = field(default_factory=ClassicGroupsState)
    log: list[CoordinatorRecord] = field(default_factory=list)
    timers: dict[str, ScheduleTimer] = field(default_factory=dict)
    answers: dict[Hashable, Any] = field(default_factory=dict)
    parked: set[Hashable] = field(default_factory=set)
    now: int = 1000
    _tokens: itertools.count[int] = field(default_factory=itertools.count)

    # --- runtime behaviour ----------------------------------------------------------------

    def apply(self, result: Result[Any], token: Hashable | None = None) -> Any:
        for record in result.records:
            key, value = encode(record)
            decoded = decode(key, value)
            self.state.replay(decoded)
            self.log.append(decoded)
        for op in result.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)
        for t, response in result.completions:
            assert t in self.parked, f"completion for a token that is not parked: {t!r}"
            self.parked.discard(t)
            self.answers[t] = response
        if isinstance(result.response, Park):
            assert result.response.token == token
            self.parked.add(token)
        return result.response

    def token(self) -> int:
        return next(self._tokens)

    def advance(self, ms: int) -> None:
        """Move time forward, firing every due timer in deadline order."""
        target = self.now + ms
        while True:
            due = [t for t in self.timers.values() if t.deadline_ms <= target]
            if not due:
                break
            timer = min(due, key=lambda t: (t.deadline_ms, t.key))
            del self.timers[timer.key]
            self.now = max(self.now, timer.deadline_ms)
            self.apply(classic_on_timer(self.state, timer.event, self.now, self.config))
        self.now = target

    def reload(self) -> None:
        """Replace the state by a replay of the log, then run the load hook."""
        fresh = ClassicGroupsState()
        for record in self.log:
            fresh.replay(record)
        self.state = fresh
        self.timers.clear()
        self.parked.clear()
        self.apply(classic_on_loaded(fresh, self.now, self.config))

    def replayed(self) -> ClassicGroupsState:
        fresh = ClassicGroupsState()
        for record in self.log:
            fresh.replay(record)
        return fresh

    def group(self, group_id: str = GROUP) -> ClassicGroup:
        group = self.state.group(group_id)
        assert group is not None
        return group

    # --- requests ---------------------------------------------------------------------------

    def ctx(self, request: RequestContext) -> GroupContext:
        return GroupContext(now_ms=self.now, classic=self.config, request=request)

    def join(
        self,
        member_id: str = "",
        *,
        group_id: str = GROUP,
        protocols_: tuple[JoinGroupRequestProtocol, ...] | None = None,
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 30000,
        instance_id: str | None = None,
        api_version: int = 9,
        client_id: str = "client",
        protocol_type: str = PROTOCOL_TYPE,
    ) -> tuple[int, JoinGroupResponse | Park]:
        token = self.token()
        request = join_request(
            group_id=group_id,
            session_timeout_ms=session_timeout_ms,
            member_id=member_id,
            protocol_type=protocol_type,
            protocols=protocols("range") if protocols_ is None else protocols_,
            rebalance_timeout_ms=rebalance_timeout_ms,
            group_instance_id=instance_id,
        )
        ctx = self.ctx(client(api_version, client_id, "/127.0.0.1"))
        return token, self.apply(classic_join(self.state, request, token, ctx), token)

    def join_new(self, **kw: Any) -> tuple[int, str]:
        """A v4+ dynamic member's two-step join; returns the parked token and its member id."""
        _, first = self.join(**kw)
        assert isinstance(first, JoinGroupResponse) and first.error_code == 79, first
        token, second = self.join(first.member_id, **kw)
        assert isinstance(second, Park), second
        return token, first.member_id

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        protocol_type: str | None = PROTOCOL_TYPE,
        protocol_name: str | None = "range",
        api_version: int = 5,
    ) -> tuple[int, SyncGroupResponse | Park]:
        token = self.token()
        request = sync_request(
            group_id=group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
        )
        return token, self.apply(classic_sync(self.state, request, token, self.ctx(client(api_version))), token)

    def heartbeat(
        self, member_id: str, generation: int, *, group_id: str = GROUP, instance_id: str | None = None
    ) -> HeartbeatResponse:
        request = heartbeat_request(group_id, generation, member_id, instance_id)
        response = self.apply(classic_heartbeat(self.state, request, self.ctx(client(4))))
        assert isinstance(response, HeartbeatResponse)
        return response

    def leave(
        self,
        *members: LeaveGroupRequestMemberIdentity,
        group_id: str = GROUP,
        api_version: int = 5,
        member_id: str = "",
    ) -> LeaveGroupResponse:
        request = leave_request(group_id, member_id=member_id, members=members)
        response = self.apply(classic_leave(self.state, request, self.ctx(client(api_version))))
        assert isinstance(response, LeaveGroupResponse)
        return response

    def answer(self, token: Hashable) -> Any:
        return self.answers[token]

    # --- checks -----------------------------------------------------------------------------

    def assert_replay_matches(self) -> None:
        """Invariant 3 plus: a live Stable/Empty group is exactly what its record says."""
        fresh = self.replayed()
        assert fresh.snapshot() == self.state.snapshot()
        for group_id, group in self.state.groups.items():
            if group.state.value in ("Stable", "Empty"):
                loaded = fresh.group(group_id)
                assert loaded is not None, group_id
                assert loaded.to_record_value() == group.to_record_value(), group_id
                assert loaded.state == group.state


def settle(
    c: Coordinator, *member_ids: str, leader_assignments: dict[str, bytes] | None = None
) -> dict[str, SyncGroupResponse]:
    """Sync every member of the current generation (leader last) and return their answers."""
    group = c.group()
    generation = group.generation_id
    leader = group.leader_id
    assert leader is not None
    tokens = {}
    for member_id in member_ids:
        if member_id != leader:
            tokens[member_id], _ = c.sync(member_id, generation)
    assignments = leader_assignments or {m: f"a-{m}".encode() for m in member_ids}
    token, response = c.sync(leader, generation, assignments)
    out = {m: c.answer(t) for m, t in tokens.items()}
    assert isinstance(response, SyncGroupResponse)
    out[leader] = response
    return out
