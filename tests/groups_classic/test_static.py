"""Static membership (KIP-345)."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park
from tests.groups_classic.harness import Coordinator, protocols, settle

S = ClassicGroupState


def static_group(c: Coordinator, n: int, api_version: int = 9) -> list[str]:
    for i in range(n):
        _, r = c.join(instance_id=f"i{i}", client_id=f"c{i}", api_version=api_version)
        assert isinstance(r, Park)  # static members get no MEMBER_ID_REQUIRED round trip
    c.advance(3000 * (n + 1))
    ids = [c.group().static_member_id(f"i{i}") or "" for i in range(n)]
    settle(c, *ids)
    assert c.group().state is S.STABLE
    return ids


def test_restarted_static_follower_keeps_its_assignment_without_rebalance() -> None:
    c = Coordinator()
    m0, m1 = static_group(c, 2)
    records_before = len(c.log)
    _, r = c.join(instance_id="i1", client_id="c1")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.NONE
    new_id = r.member_id
    assert new_id != m1 and r.generation_id == 1 and r.leader == m0 and not r.skip_assignment
    group = c.group()
    assert group.state is S.STABLE and group.generation_id == 1
    # The replacement is persisted at once (the new member id with the old assignment).
    assert len(c.log) == records_before + 1
    record = c.log[-1].value
    assert record is not None and [m.member_id for m in record.members] == [m0, new_id]
    _, s = c.sync(new_id, 1, instance_id="i1")
    assert isinstance(s, SyncGroupResponse) and s.assignment == f"a-{m1}".encode()
    # The old incarnation is fenced everywhere.
    assert c.heartbeat(m1, 1, instance_id="i1").error_code == ErrorCode.FENCED_INSTANCE_ID
    _, s = c.sync(m1, 1, instance_id="i1")
    assert isinstance(s, SyncGroupResponse) and s.error_code == ErrorCode.FENCED_INSTANCE_ID
    _, j = c.join(m1, instance_id="i1")
    assert isinstance(j, JoinGroupResponse) and j.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert c.state.validate_offset_commit("grp", m1, "i1", 1) == ErrorCode.FENCED_INSTANCE_ID
    assert c.state.validate_offset_commit("grp", new_id, "i1", 1) == ErrorCode.NONE
    c.assert_replay_matches()


def test_restarted_static_leader_skips_assignment_on_v9() -> None:
    c = Coordinator()
    m0, m1 = static_group(c, 2)
    _, r = c.join(instance_id="i0", client_id="c0")
    assert isinstance(r, JoinGroupResponse) and r.skip_assignment and r.leader == r.member_id
    assert {m.member_id for m in r.members} == {r.member_id, m1}
    assert c.group().state is S.STABLE


def test_restarted_static_leader_on_old_versions_is_not_told_it_leads() -> None:
    c = Coordinator()
    m0, m1 = static_group(c, 2, api_version=5)
    _, r = c.join(instance_id="i0", client_id="c0", api_version=5)
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.NONE
    assert r.leader == m0 != r.member_id and r.members == []
    assert c.group().leader_id == r.member_id


def test_static_restart_that_changes_the_protocol_rebalances() -> None:
    c = Coordinator()
    m0, m1 = static_group(c, 2)
    _, r = c.join(instance_id="i1", protocols_=protocols("roundrobin", "range"))
    # "range" is still the only common protocol, so the choice does not change: no rebalance.
    assert isinstance(r, JoinGroupResponse) and c.group().state is S.STABLE
    c2 = Coordinator()
    static_group(c2, 1)
    _, r = c2.join(instance_id="i0", protocols_=protocols("roundrobin", "range"))
    # The only member now prefers another protocol: a rebalance, which its own join completes.
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 2 and r.protocol_name == "roundrobin"
    assert c2.group().state is S.COMPLETING_REBALANCE


def test_static_restart_during_completing_rebalance_rebalances_and_fences_parked_requests() -> None:
    c = Coordinator()
    for i in range(2):
        c.join(instance_id=f"i{i}", client_id=f"c{i}")
    c.advance(9000)
    assert c.group().state is S.COMPLETING_REBALANCE
    old = c.group().static_member_id("i1") or ""
    t_sync, _ = c.sync(old, 1, instance_id="i1")
    t_new, r = c.join(instance_id="i1")
    assert isinstance(r, Park) and c.group().state is S.PREPARING_REBALANCE
    assert c.answer(t_sync).error_code == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_that_does_not_rejoin_stays_through_the_barrier() -> None:
    c = Coordinator()
    m0, m1 = static_group(c, 2)
    t0, _ = c.join(m0, instance_id="i0")  # leader rejoins: rebalance
    for _ in range(6):
        c.advance(5000)
        c.heartbeat(m1, 1, instance_id="i1")
    group = c.group()
    # Static members are not dropped at the join deadline (only dynamic ones are).
    assert group.state is S.COMPLETING_REBALANCE and m1 in group.members
    assert c.answer(t0).generation_id == 2


def test_static_members_only_none_rejoined_waits_for_sessions() -> None:
    c = Coordinator()
    (m0,) = static_group(c, 1)
    c.join(m0, instance_id="i0", protocols_=protocols("range", metadata=b"x"))
    group = c.group()
    group.members[m0].awaiting_join = None  # as if its parked join was lost with the connection
    c.advance(30000)
    # The session (10 s) expired meanwhile: the group emptied rather than waiting forever.
    assert group.state is S.EMPTY
