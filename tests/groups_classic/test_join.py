"""JoinGroup: member ids, the join barrier, leader election and the protocol vote."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    ClassicGroupConfig,
    ClassicGroupState,
)
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.runtime.api import Park
from tests.groups_classic.harness import GROUP, Coordinator, protocols, settle

S = ClassicGroupState


def stable_group(c: Coordinator, n: int) -> list[str]:
    ids = [c.join_new(client_id=f"c{i}")[1] for i in range(n)]
    c.advance(c.config.initial_rebalance_delay_ms * (n + 1))
    assert c.group().state is S.COMPLETING_REBALANCE
    settle(c, *ids)
    assert c.group().state is S.STABLE
    return ids


def test_new_dynamic_member_gets_member_id_required_on_v4_plus() -> None:
    c = Coordinator()
    _, response = c.join(client_id="app")
    assert isinstance(response, JoinGroupResponse)
    assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert response.member_id.startswith("app-")
    group = c.group()
    assert group.state is S.EMPTY and group.is_pending_member(response.member_id)
    # The new group is in the log at once (Kafka's empty GroupMetadata record).
    assert len(c.log) == 1 and c.log[0].value is not None and c.log[0].value.generation == 0
    c.assert_replay_matches()


def test_old_versions_join_without_member_id_round_trip() -> None:
    c = Coordinator()
    token, response = c.join(api_version=3)
    assert isinstance(response, Park)
    assert c.group().state is S.PREPARING_REBALANCE and len(c.group().members) == 1


def test_member_ids_are_deterministic_and_unique() -> None:
    a, b = Coordinator(), Coordinator()
    ids_a = [a.join(client_id="x")[1] for _ in range(3)]
    ids_b = [b.join(client_id="x")[1] for _ in range(3)]
    assert ids_a == ids_b
    assert len({r.member_id for r in ids_a if isinstance(r, JoinGroupResponse)}) == 3


def test_invalid_requests() -> None:
    c = Coordinator()
    _, r = c.join(group_id="")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INVALID_GROUP_ID
    _, r = c.join(session_timeout_ms=5999)
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    _, r = c.join(session_timeout_ms=1800001)
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    _, r = c.join("someone")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.state.group(GROUP) is None and not c.log
    _, r = c.join(protocol_type="")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, r = c.join(protocols_=())
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_initial_rebalance_waits_for_the_delay_and_extends_it_for_newcomers() -> None:
    c = Coordinator()
    t1, m1 = c.join_new(client_id="a")
    c.advance(2000)
    t2, m2 = c.join_new(client_id="b")
    c.advance(1000)  # first delay (3000) passed, but b arrived: wait another delay
    assert c.group().state is S.PREPARING_REBALANCE and t1 in c.parked
    c.advance(2999)
    assert c.group().state is S.PREPARING_REBALANCE
    c.advance(1)
    group = c.group()
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1
    r1, r2 = c.answer(t1), c.answer(t2)
    assert r1.leader == m1 == r2.leader
    assert [m.member_id for m in r1.members] == [m1, m2] and r2.members == []
    assert r1.generation_id == r2.generation_id == 1 and r1.protocol_name == "range"


def test_initial_delay_is_capped_by_the_rebalance_timeout() -> None:
    c = Coordinator(config=ClassicGroupConfig(initial_rebalance_delay_ms=3000))
    t, _ = c.join_new(rebalance_timeout_ms=7000)
    for i in range(10):
        c.advance(1000)
        if c.group().state is S.PREPARING_REBALANCE:
            c.join_new(client_id=f"n{i}", rebalance_timeout_ms=7000)
    assert c.group().state is S.COMPLETING_REBALANCE
    assert c.now - 1000 <= 1000 + 7000 + 3000


def test_zero_initial_delay_completes_on_the_next_timer() -> None:
    c = Coordinator(config=ClassicGroupConfig(initial_rebalance_delay_ms=0))
    t, _ = c.join_new()
    c.advance(0)
    assert c.group().state is S.COMPLETING_REBALANCE and t in c.answers


def test_barrier_closes_when_every_known_member_rejoins() -> None:
    c = Coordinator()
    m1, m2 = stable_group(c, 2)
    t3, m3 = c.join_new(client_id="c3")
    group = c.group()
    assert group.state is S.PREPARING_REBALANCE
    assert c.heartbeat(m1, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    t1, r = c.join(m1)
    assert isinstance(r, Park)
    t2, r = c.join(m2)
    # The last rejoin closes the barrier and is answered directly; the others by completions.
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.NONE and r.generation_id == 2
    assert c.answer(t1).members and c.answer(t3).members == []
    assert group.state is S.COMPLETING_REBALANCE


def test_rebalance_timeout_drops_members_that_did_not_rejoin_and_reelects_the_leader() -> None:
    c = Coordinator()
    m1, m2, m3 = stable_group(c, 3)
    assert c.group().leader_id == m1
    t2, _ = c.join(m2, rebalance_timeout_ms=30000)  # a follower triggers nothing in Stable...
    assert c.group().state is S.STABLE  # ...when its metadata is unchanged
    t2, _ = c.join(m2, protocols_=protocols("range", metadata=b"new"))
    assert c.group().state is S.PREPARING_REBALANCE and t2 in c.parked
    t3, _ = c.join(m3)
    for _ in range(5):  # m1 stays alive (heartbeats) but never rejoins
        c.advance(5000)
        assert c.heartbeat(m1, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    c.advance(4999)
    assert c.group().state is S.PREPARING_REBALANCE
    c.advance(1)
    group = c.group()
    assert group.state is S.COMPLETING_REBALANCE and list(group.members) == [m2, m3]
    assert group.leader_id == m2 and c.answer(t2).leader == m2 and len(c.answer(t2).members) == 2
    assert c.heartbeat(m1, 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_leader_rejoin_in_stable_forces_a_rebalance() -> None:
    c = Coordinator()
    m1, m2 = stable_group(c, 2)
    t, r = c.join(m1)
    assert isinstance(r, Park) and c.group().state is S.PREPARING_REBALANCE


def test_follower_rejoin_with_same_metadata_gets_current_generation() -> None:
    c = Coordinator()
    m1, m2 = stable_group(c, 2)
    _, r = c.join(m2)
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 1 and r.leader == m1 and r.members == []


def test_rejoin_in_completing_rebalance() -> None:
    c = Coordinator()
    t1, m1 = c.join_new()
    c.advance(3000)
    assert c.group().state is S.COMPLETING_REBALANCE
    # Same metadata: a lost JoinGroup response is simply resent (with members: m1 leads).
    _, r = c.join(m1)
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 1 and len(r.members) == 1
    # Changed metadata: a new rebalance.
    _, r = c.join(m1, protocols_=protocols("range", metadata=b"other"))
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 2
    assert c.group().state is S.COMPLETING_REBALANCE


def test_protocol_vote_picks_the_plurality_of_common_protocols() -> None:
    c = Coordinator()
    ids = []
    ids.append(c.join_new(client_id="a", protocols_=protocols("roundrobin", "range"))[1])
    ids.append(c.join_new(client_id="b", protocols_=protocols("range", "roundrobin"))[1])
    ids.append(c.join_new(client_id="c", protocols_=protocols("range", "roundrobin", "sticky"))[1])
    c.advance(12000)
    assert c.group().protocol_name == "range"
    # A newcomer must share a protocol with everyone.
    _, r = c.join(client_id="d", protocols_=protocols("sticky"))
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, r = c.join(client_id="d", protocol_type="connect", protocols_=protocols("range"))
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_vote_tie_is_decided_by_member_order() -> None:
    c = Coordinator()
    c.join_new(client_id="a", protocols_=protocols("x", "y"))
    c.join_new(client_id="b", protocols_=protocols("y", "x"))
    c.advance(9000)
    assert c.group().protocol_name == "x"


def test_group_max_size() -> None:
    c = Coordinator(config=ClassicGroupConfig(max_size=2))
    m1, m2 = stable_group(c, 2)
    _, r = c.join(client_id="late")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    # Existing members are still welcome.
    _, r = c.join(m2)
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.NONE


def test_group_max_size_during_rebalance_counts_parked_members() -> None:
    c = Coordinator(config=ClassicGroupConfig(max_size=2))
    m1, m2 = stable_group(c, 2)
    c.join(m1, protocols_=protocols("range", metadata=b"x"))  # rebalance, m1 parked
    t, r = c.join_new(client_id="new")  # a pending member fills the second slot
    _, r2 = c.join(m2)  # m2 comes too late: kicked
    assert isinstance(r2, JoinGroupResponse) and r2.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert m2 not in c.group().members


def test_unknown_member_in_stable_group() -> None:
    c = Coordinator()
    stable_group(c, 1)
    _, r = c.join("ghost")
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_pending_member_id_expires_after_a_session() -> None:
    c = Coordinator()
    _, r = c.join(session_timeout_ms=6000)
    assert isinstance(r, JoinGroupResponse)
    c.advance(6000)
    assert not c.group().is_pending_member(r.member_id)
    _, r2 = c.join(r.member_id)
    assert isinstance(r2, JoinGroupResponse) and r2.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_new_member_parked_in_a_long_rebalance_times_out() -> None:
    c = Coordinator(config=ClassicGroupConfig(new_member_join_timeout_ms=10000))
    m1, m2 = stable_group(c, 2)
    t, new = c.join_new(client_id="n", rebalance_timeout_ms=60000)
    c.join(m1)  # m2 heartbeats but never rejoins; the barrier waits up to 60 s
    for _ in range(2):
        c.heartbeat(m2, 1)
        c.advance(5000)
    assert c.answer(t).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert new not in c.group().members
    c.assert_replay_matches()


def test_superseded_parked_join_is_answered() -> None:
    c = Coordinator()
    m1, m2 = stable_group(c, 2)
    t_old, _ = c.join(m1)
    t_new, _ = c.join(m1)
    assert c.answer(t_old).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert t_new in c.parked
