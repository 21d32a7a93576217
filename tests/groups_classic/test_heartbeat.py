"""Heartbeat and session expiry."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    ClassicGroupState,
    classic_on_timer,
)
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from tests.groups_classic.harness import Coordinator, settle

S = ClassicGroupState


def test_heartbeat_answers_by_state() -> None:
    c = Coordinator()
    t, m1 = c.join_new()
    assert c.heartbeat(m1, 0).error_code == ErrorCode.REBALANCE_IN_PROGRESS  # PreparingRebalance
    c.advance(3000)
    # CompletingRebalance: a member may heartbeat before it syncs; Kafka treats it as normal.
    assert c.heartbeat(m1, 1).error_code == ErrorCode.NONE
    settle(c, m1)
    assert c.heartbeat(m1, 1).error_code == ErrorCode.NONE
    assert c.heartbeat(m1, 0).error_code == ErrorCode.ILLEGAL_GENERATION
    assert c.heartbeat("ghost", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat(m1, 1, group_id="nope").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat(m1, 1, group_id="").error_code == ErrorCode.INVALID_GROUP_ID
    assert c.heartbeat(m1, 1, instance_id="i").error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeats_keep_a_member_alive_and_silence_removes_it() -> None:
    c = Coordinator()
    _, m1 = c.join_new(client_id="a")
    _, m2 = c.join_new(client_id="b")
    c.advance(6000)
    settle(c, m1, m2)
    for _ in range(10):
        c.advance(9000)
        assert c.heartbeat(m1, 1).error_code == ErrorCode.NONE
        if len(c.group().members) == 2:
            assert c.heartbeat(m2, 1).error_code == ErrorCode.NONE
    assert c.group().state is S.STABLE
    c.advance(9000)
    c.heartbeat(m1, 1)
    c.advance(1000)  # m2 silent for 10 s: removed, rebalance
    group = c.group()
    assert m2 not in group.members and group.state is S.PREPARING_REBALANCE
    _, r = c.join(m1)
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 2
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2


def test_last_member_expiring_empties_the_group_and_writes_it() -> None:
    c = Coordinator()
    _, m1 = c.join_new()
    c.advance(3000)
    settle(c, m1)
    c.advance(10000)
    group = c.group()
    assert group.state is S.EMPTY and group.generation_id == 2 and not group.members
    record = c.log[-1].value
    assert record is not None and record.generation == 2 and record.members == [] and record.protocol is None
    assert record.protocol_type == "consumer"
    assert c.heartbeat(m1, 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    c.assert_replay_matches()


def test_stale_timer_events_are_ignored() -> None:
    c = Coordinator()
    _, m1 = c.join_new()
    c.advance(3000)
    settle(c, m1)
    stale = next(t for t in c.timers.values() if "heartbeat" in t.key)
    c.heartbeat(m1, 1)  # reschedules: the earlier event is no longer current
    result = classic_on_timer(c.state, stale.event, stale.deadline_ms, c.config)
    assert not result.records and not result.timers and m1 in c.group().members
