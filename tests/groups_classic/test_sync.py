"""SyncGroup: the leader's assignment completes everyone; followers wait for it."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park
from tests.groups_classic.harness import Coordinator, protocols, settle

S = ClassicGroupState


def completing(c: Coordinator, n: int) -> list[str]:
    ids = [c.join_new(client_id=f"c{i}")[1] for i in range(n)]
    c.advance(3000 * (n + 1))
    assert c.group().state is S.COMPLETING_REBALANCE
    return ids


def test_followers_are_parked_until_the_leader_syncs() -> None:
    c = Coordinator()
    m1, m2, m3 = completing(c, 3)
    t2, r2 = c.sync(m2, 1)
    t3, r3 = c.sync(m3, 1)
    assert isinstance(r2, Park) and isinstance(r3, Park)
    assert not c.log[1:], "nothing is written before the leader's assignment"
    t1, r1 = c.sync(m1, 1, {m1: b"A1", m2: b"A2"})  # m3 missing: it gets an empty assignment
    assert isinstance(r1, SyncGroupResponse) and r1.assignment == b"A1" and r1.protocol_name == "range"
    assert c.answer(t2).assignment == b"A2" and c.answer(t3).assignment == b""
    assert c.answer(t3).error_code == ErrorCode.NONE and c.answer(t3).protocol_type == "consumer"
    group = c.group()
    assert group.state is S.STABLE
    record = c.log[-1].value
    assert record is not None and record.generation == 1 and record.leader == m1
    assert [(m.member_id, m.assignment) for m in record.members] == [(m1, b"A1"), (m2, b"A2"), (m3, b"")]
    c.assert_replay_matches()
    # A late follower in Stable just gets its assignment.
    _, late = c.sync(m2, 1)
    assert isinstance(late, SyncGroupResponse) and late.assignment == b"A2"


def test_sync_errors() -> None:
    c = Coordinator()
    m1, m2 = completing(c, 2)
    _, r = c.sync("ghost", 1)
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    _, r = c.sync(m1, 0)
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.ILLEGAL_GENERATION
    _, r = c.sync(m1, 1, protocol_name="roundrobin")
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, r = c.sync(m1, 1, protocol_type="connect")
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # v5+ must name both; older versions need not.
    _, r = c.sync(m1, 1, protocol_name=None)
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, r = c.sync(m2, 1, protocol_name=None, protocol_type=None, api_version=4)
    assert isinstance(r, Park)
    _, r = c.sync(m1, 1, group_id="")
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.INVALID_GROUP_ID
    _, r = c.sync(m1, 1, group_id="other")
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    _, r = c.sync(m1, 1, instance_id="not-mine")
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_on_empty_group_is_unknown_member() -> None:
    c = Coordinator()
    _, r = c.join(client_id="x")
    _, s = c.sync("x", 0)
    assert isinstance(s, SyncGroupResponse) and s.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_during_preparing_rebalance() -> None:
    c = Coordinator()
    m1, m2 = completing(c, 2)
    settle(c, m1, m2)
    c.join(m1)  # leader rejoin: PreparingRebalance
    _, r = c.sync(m2, 1)
    assert isinstance(r, SyncGroupResponse) and r.error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_new_rebalance_releases_parked_followers_with_rebalance_in_progress() -> None:
    c = Coordinator()
    m1, m2 = completing(c, 2)
    t2, _ = c.sync(m2, 1)
    c.join(m2, protocols_=protocols("range", metadata=b"changed"))
    assert c.answer(t2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert c.answer(t2).protocol_name is None
    assert c.group().state is S.PREPARING_REBALANCE


def test_sync_timeout_removes_members_that_never_synced() -> None:
    c = Coordinator()
    m1, m2, m3 = completing(c, 3)
    t1, _ = c.sync(m1, 1, {m1: b"1", m2: b"2", m3: b"3"})
    t2, _ = c.sync(m2, 1)
    # m3 never syncs. Keep m1/m2 alive through the rebalance timeout (30 s).
    for _ in range(6):
        c.advance(5000)
        c.heartbeat(m1, 1)
        c.heartbeat(m2, 1)
    group = c.group()
    assert m3 not in group.members
    assert group.state is S.PREPARING_REBALANCE
    assert c.heartbeat(m1, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_sync_timeout_in_completing_rebalance_when_the_leader_never_syncs() -> None:
    c = Coordinator()
    m1, m2 = completing(c, 2)
    t2, _ = c.sync(m2, 1)
    c.advance(30000)
    # The leader is gone; the parked follower is told to rejoin and the group starts over.
    assert c.answer(t2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert m1 not in c.group().members


def test_superseded_parked_sync_is_answered() -> None:
    c = Coordinator()
    m1, m2 = completing(c, 2)
    t_old, _ = c.sync(m2, 1)
    t_new, _ = c.sync(m2, 1)
    assert c.answer(t_old).error_code == ErrorCode.REBALANCE_IN_PROGRESS and t_new in c.parked
