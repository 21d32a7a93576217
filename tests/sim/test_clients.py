"""The client models react as the Java consumer does (AbstractCoordinator, ConsumerCoordinator,
the KIP-848 heartbeat request manager). Every workload uses these models, so a scripted answer
gets the same reaction everywhere; these tests pin the reactions the models used to disagree on."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import Subscription, TopicPartitions
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.schema import topic_id_uuid
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from tests.messages import tid
from tests.sim.clients import (
    ClassicClient,
    ConsumerClient,
    cooperative_sticky_assign,
    range_assign,
    to_assignment_bytes,
)

T_ID = tid("t")


def _stable_classic(assignors: tuple[str, ...] = ("cooperative-sticky",), instance: str | None = None) -> ClassicClient:
    c = ClassicClient("c0", "g", {"t": 4}, assignors, instance_id=instance)
    c.on_join(JoinGroupResponse(generation_id=3, protocol_name=assignors[0], leader="other", member_id="m0"))
    c.on_sync(SyncGroupResponse(assignment=to_assignment_bytes({("t", 0), ("t", 1)})))
    assert c.status == "stable" and c.owned == {("t", 0), ("t", 1)}
    return c


def test_illegal_generation_resets_the_generation_and_loses_the_partitions_but_keeps_the_member_id() -> None:
    for answer in ("sync", "heartbeat"):
        c = _stable_classic()
        if answer == "sync":
            c.sync("token")
            action = c.on_sync(SyncGroupResponse(error_code=ErrorCode.ILLEGAL_GENERATION))
        else:
            action = c.on_heartbeat(c.heartbeat(), HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION))
        assert action == "join"
        assert (c.generation, c.owned, c.member_id) == (-1, set(), "m0")


def test_unknown_member_id_also_forgets_the_member_id() -> None:
    c = _stable_classic()
    assert c.on_heartbeat(c.heartbeat(), HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)) == "join"
    assert (c.generation, c.owned, c.member_id) == (-1, set(), "")


def test_an_error_about_a_generation_already_left_is_ignored() -> None:
    c = _stable_classic()
    old = c.heartbeat()
    c.generation = 4  # rejoined meanwhile
    assert c.on_heartbeat(old, HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION)) == "ok"
    assert c.owned == {("t", 0), ("t", 1)}


def test_fatal_and_unexpected_answers_stop_the_classic_client() -> None:
    c = _stable_classic(instance="i0")
    assert c.on_heartbeat(c.heartbeat(), HeartbeatResponse(error_code=ErrorCode.FENCED_INSTANCE_ID)) == "fatal"
    assert not c.alive and c.owned == set()
    c = _stable_classic()
    c.join("t")
    assert c.on_join(JoinGroupResponse(error_code=ErrorCode.ILLEGAL_GENERATION)) == "unexpected"


def test_eager_revokes_everything_before_a_rejoin_and_cooperative_keeps_its_partitions() -> None:
    eager, cooperative = _stable_classic(("range",)), _stable_classic()
    eager.join("t")
    cooperative.join("t")
    assert eager.owned == set() and cooperative.owned == {("t", 0), ("t", 1)}


def test_coordinator_errors_do_not_make_a_classic_client_rejoin_from_a_heartbeat() -> None:
    c = _stable_classic()
    for error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
        assert c.on_heartbeat(c.heartbeat(), HeartbeatResponse(error_code=error)) == "ok"
    assert c.owned == {("t", 0), ("t", 1)} and c.generation == 3


def test_only_dynamic_members_send_leave_group() -> None:
    assert _stable_classic().leave() is not None
    assert _stable_classic(instance="i0").leave() is None


def _joined_consumer() -> ConsumerClient:
    c = ConsumerClient(0, "g", ["t"])
    c.start()
    c.heartbeat()
    assignment = ConsumerGroupHeartbeatResponseAssignment(
        topic_partitions=[
            ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=topic_id_uuid(T_ID), partitions=[0, 1])
        ]
    )
    assert (
        c.on_response(ConsumerGroupHeartbeatResponse(member_id=c.member_id, member_epoch=2, assignment=assignment))
        == "ack"
    )
    return c


def test_a_fenced_kip848_member_loses_its_partitions_and_rejoins_with_the_same_member_id() -> None:
    for error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
        c = _joined_consumer()
        member_id = c.member_id
        assert c.on_response(ConsumerGroupHeartbeatResponse(error_code=error)) == "fenced"
        assert (c.epoch, c.owned, c.member_id, c.alive) == (0, set(), member_id, True)
        assert c.heartbeat().member_epoch == 0


def test_kip848_retriable_and_fatal_errors() -> None:
    c = _joined_consumer()
    assert c.on_response(ConsumerGroupHeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)) == "retry"
    assert c.rediscover and c.owned == {(T_ID, 0), (T_ID, 1)}
    for error in (ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.GROUP_ID_NOT_FOUND):
        c = _joined_consumer()
        assert c.on_response(ConsumerGroupHeartbeatResponse(error_code=error)) == "fatal"
        assert not c.alive and c.error is error


def test_kip848_revokes_before_it_takes_new_partitions() -> None:
    c = _joined_consumer()
    move = ConsumerGroupHeartbeatResponseAssignment(
        topic_partitions=[
            ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=topic_id_uuid(T_ID), partitions=[1, 2])
        ]
    )
    assert (
        c.on_response(ConsumerGroupHeartbeatResponse(member_id=c.member_id, member_epoch=3, assignment=move))
        == "revoke"
    )
    assert c.owned == {(T_ID, 0), (T_ID, 1)} and c.revoking == {(T_ID, 0)}
    assert c.revoked() == "ack"
    assert c.owned == {(T_ID, 1), (T_ID, 2)}


def test_cooperative_assignor_revokes_before_it_reassigns() -> None:
    topics = {"t": 4}
    owned = Subscription(("t",), owned_partitions=(TopicPartitions("t", (0, 1, 2, 3)),), generation_id=1)
    fresh = Subscription(("t",), generation_id=-1)
    first = cooperative_sticky_assign({"a": owned, "b": fresh}, topics)
    # Two partitions must move from a to b: in the first round they go to nobody.
    assert first == {"a": {("t", 0), ("t", 1)}, "b": set()}
    kept = Subscription(("t",), owned_partitions=(TopicPartitions("t", (0, 1)),), generation_id=2)
    second = cooperative_sticky_assign({"a": kept, "b": fresh}, topics)
    assert second == {"a": {("t", 0), ("t", 1)}, "b": {("t", 2), ("t", 3)}}


def test_range_assignor() -> None:
    assert range_assign(["b", "a"], {"t": 3}) == {"a": {("t", 0), ("t", 1)}, "b": {("t", 2)}}
