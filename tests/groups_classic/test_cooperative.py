"""KIP-429 cooperative clients need nothing special from the coordinator beyond correct
barriers: owned partitions ride in the subscription, the leader's assignor withholds moved
partitions, the revoking member rejoins, and a second rebalance hands them out."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    ClassicGroupState,
    Subscription,
    TopicPartitions,
    decode_subscription,
    encode_subscription,
)
from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park
from tests.groups_classic.harness import Coordinator
from tests.messages import join_protocol
from tests.sim.clients import cooperative_sticky_assign, from_assignment_bytes, to_assignment_bytes

S = ClassicGroupState
TOPICS = {"t": 4}


def coop(owned: set[tuple[str, int]], generation: int) -> tuple[JoinGroupRequestProtocol, ...]:
    parts = tuple(p for _, p in sorted(owned))
    sub = Subscription(
        ("t",), owned_partitions=(TopicPartitions("t", parts),) if parts else (), generation_id=generation
    )
    return (join_protocol("cooperative-sticky", encode_subscription(sub)),)


def leader_assignments(response: JoinGroupResponse) -> dict[str, bytes]:
    subs = {m.member_id: decode_subscription(m.metadata) for m in response.members}
    return {m: to_assignment_bytes(tps) for m, tps in cooperative_sticky_assign(subs, TOPICS).items()}


def test_two_phase_cooperative_rebalance() -> None:
    c = Coordinator()
    t_a, a = c.join_new(client_id="a", protocols_=coop(set(), -1))
    c.advance(3000)
    r = c.answer(t_a)
    _, s = c.sync(a, 1, leader_assignments(r), protocol_name="cooperative-sticky")
    assert isinstance(s, SyncGroupResponse)
    owned_a = from_assignment_bytes(s.assignment)
    assert owned_a == {("t", 0), ("t", 1), ("t", 2), ("t", 3)}

    # b joins; a learns of the rebalance by heartbeat and rejoins keeping what it owns.
    t_b, b = c.join_new(client_id="b", protocols_=coop(set(), -1))
    assert c.heartbeat(a, 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    _, r_a = c.join(a, protocols_=coop(owned_a, 1))
    assert isinstance(r_a, JoinGroupResponse) and r_a.generation_id == 2 and r_a.leader == a
    t_sb, _ = c.sync(b, 2, protocol_name="cooperative-sticky")
    _, s_a = c.sync(a, 2, leader_assignments(r_a), protocol_name="cooperative-sticky")
    assert isinstance(s_a, SyncGroupResponse)
    new_a, new_b = from_assignment_bytes(s_a.assignment), from_assignment_bytes(c.answer(t_sb).assignment)
    # First phase: a revokes two partitions, nobody gets them yet.
    assert new_a == {("t", 0), ("t", 1)} and new_b == set()
    revoked = owned_a - new_a
    owned_a = new_a
    assert revoked and c.group().state is S.STABLE

    # a revoked something, so it rejoins at once; b learns by heartbeat and rejoins too.
    t_a3, r = c.join(a, protocols_=coop(owned_a, 2))
    assert isinstance(r, Park)
    _, r_b = c.join(b, protocols_=coop(new_b, 2))
    r_a = c.answer(t_a3)
    assert r_a.generation_id == 3
    t_sb, _ = c.sync(b, 3, protocol_name="cooperative-sticky")
    _, s_a = c.sync(a, 3, leader_assignments(r_a), protocol_name="cooperative-sticky")
    final_a = from_assignment_bytes(s_a.assignment)  # type: ignore[union-attr]
    final_b = from_assignment_bytes(c.answer(t_sb).assignment)
    # Second phase: the revoked partitions go to b; nothing was ever owned twice.
    assert final_a == owned_a and final_b == revoked
    c.assert_replay_matches()
