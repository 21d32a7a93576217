"""ShareGroupHeartbeat as Kafka 4.2's group coordinator answers it (KIP-932): member epochs,
joins and leaves, the simple assignment handed over in one step, and every refusal writing nothing."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ShareGroupConfig
from groupcoord.coordinator.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from tests.groups_share.harness import GROUP, Coordinator, image, partitions, topic
from tests.messages import tid

T = tid("t")


def test_a_join_gets_epoch_one_every_partition_and_a_session_timer() -> None:
    c = Coordinator(image(topic("t", 3)))
    r = c.join("m-a", ["t"])
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m-a", 1, 5000)
    assert partitions(r) == [0, 1, 2]
    assert c.group().group_epoch == c.group().assignment_epoch == 1
    timer = c.timers[f"share-session\x00{GROUP}\x00m-a"]
    assert timer.deadline_ms == c.now + 45000
    # A plain heartbeat at the same epoch changes nothing and carries no assignment.
    before = len(c.log)
    r = c.beat("m-a", 1)
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 1, None)
    assert len(c.log) == before


def test_members_share_out_the_partitions_and_move_in_one_step() -> None:
    c = Coordinator(image(topic("t", 3)))
    c.join("m-a", ["t"])
    r = c.join("m-b", ["t"])
    # Balance over three partitions and two members: 2 and 1, each partition held once.
    assert (r.member_epoch, partitions(r)) == (2, [2])
    r = c.beat("m-a", 1)
    # No revocation step: m-a drops partition 2 and moves to epoch 2 at once.
    assert (r.member_epoch, partitions(r)) == (2, [0, 1])
    assert c.group().members["m-a"].previous_member_epoch == 1


def test_more_members_than_partitions_all_get_the_partition() -> None:
    c = Coordinator(image(topic("t", 1)))
    for mid in ("m-a", "m-b", "m-c"):
        c.join(mid, ["t"])
    for mid in ("m-a", "m-b"):
        c.beat(mid, c.group().members[mid].member_epoch)
    assert all(c.assigned(mid) == [(T, 0)] for mid in ("m-a", "m-b", "m-c"))


def test_five_members_on_two_partitions_each_partition_shared_three_ways() -> None:
    c = Coordinator(image(topic("t", 2)))
    members = [f"m-{i}" for i in range(5)]
    for mid in members:
        c.join(mid, ["t"])
    target = c.group().target
    holders = {p: sum(p in target[m].get(T, ()) for m in members) for p in (0, 1)}
    assert holders == {0: 3, 1: 3}
    assert all(target[m].get(T) for m in members)


def test_leave_fences_the_member_and_the_rest_take_its_partitions() -> None:
    c = Coordinator(image(topic("t", 2)))
    c.join("m-a", ["t"])
    c.join("m-b", ["t"])
    assert partitions(c.beat("m-a", 1)) == [0]
    r = c.beat("m-b", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m-b", -1)
    assert set(c.group().members) == {"m-a"}
    assert f"share-session\x00{GROUP}\x00m-b" not in c.timers
    assert c.group().group_epoch == 3
    r = c.beat("m-a", 2)
    assert (r.member_epoch, partitions(r)) == (3, [0, 1])


def test_session_timeout_removes_the_member_and_empties_the_group() -> None:
    c = Coordinator(image(topic("t", 2)))
    c.join("m-a", ["t"])
    c.fire("share-session")
    assert c.group().members == {}
    assert c.group().listed().group_state == "Empty"


@pytest.mark.parametrize(
    ("epoch", "previous_ok"),
    [(5, False), (1, True)],
)
def test_member_epochs_are_fenced_as_kafka_does(epoch: int, previous_ok: bool) -> None:
    c = Coordinator(image(topic("t", 2)))
    c.join("m-a", ["t"])
    c.join("m-b", ["t"])
    c.beat("m-a", 1)  # now at epoch 2, previous 1
    before = len(c.log)
    r = c.beat("m-a", epoch)
    if previous_ok:
        # The answer that moved it to epoch 2 was lost: the previous epoch is accepted.
        assert (r.error_code, r.member_epoch) == (0, 2)
    else:
        assert r.error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert len(c.log) == before


def _member_a_at_epoch_3() -> Coordinator:
    c = Coordinator(image(topic("t", 2)))
    c.join("m-a", ["t"])
    c.join("m-b", ["t"])
    c.beat("m-a", 1)
    c.join("m-c", ["t"])
    c.beat("m-a", 2)  # epoch 3, previous 2
    return c


def test_an_epoch_older_than_the_previous_one_is_fenced() -> None:
    c = _member_a_at_epoch_3()
    before = len(c.log)
    assert c.beat("m-a", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert len(c.log) == before


def test_a_fenced_member_rejoins_with_epoch_zero_under_its_own_id() -> None:
    """KIP-848's rejoin, which Kafka's share groups allow since KAFKA-19233 (before it, such a
    member was fenced again until its session expired): the member's current epoch and its
    assignment, nothing written when nothing changed."""
    c = _member_a_at_epoch_3()
    assert c.beat("m-a", 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    before = len(c.log)
    rejoined = c.join("m-a", ["t"])
    assert (rejoined.error_code, rejoined.member_epoch) == (0, 3)
    assert partitions(rejoined) == [0, 1]
    assert len(c.log) == before


def test_unknown_members_and_groups() -> None:
    c = Coordinator(image(topic("t", 2)))
    assert c.beat("m-a", 1).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert c.beat("m-a", -1).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    c.join("m-a", ["t"])
    before = len(c.log)
    assert c.beat("m-x", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.beat("m-x", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(c.log) == before


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"member_id": "", "member_epoch": 0, "subscribed_topic_names": ["t"]}, "MemberId can't be empty."),
        ({"group_id": " ", "member_epoch": 0, "subscribed_topic_names": ["t"]}, "GroupId can't be empty."),
        ({"rack_id": "", "member_epoch": 0, "subscribed_topic_names": ["t"]}, "RackId can't be empty."),
        ({"member_epoch": 0}, "SubscribedTopicNames must be set in first request."),
        ({"member_epoch": 0, "subscribed_topic_names": []}, "SubscribedTopicNames must be set in first request."),
        ({"member_epoch": -2}, "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(fields: dict[str, object], message: str) -> None:
    c = Coordinator(image(topic("t", 2)))
    request = ShareGroupHeartbeatRequest(**{"group_id": GROUP, "member_id": "m-a", **fields})  # type: ignore[arg-type]
    r = c.heartbeat(request)
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert c.log == []


def test_a_full_group_refuses_new_members() -> None:
    c = Coordinator(image(topic("t", 2)), ShareGroupConfig(max_size=1))
    c.join("m-a", ["t"])
    before = len(c.log)
    r = c.join("m-b", ["t"])
    assert r.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert len(c.log) == before
    assert c.beat("m-a", 1).error_code == ErrorCode.NONE


def test_a_new_subscription_bumps_the_epoch_and_keeps_only_subscribed_topics() -> None:
    c = Coordinator(image(topic("t", 2), topic("u", 1)))
    c.join("m-a", ["t"])
    r = c.beat("m-a", 1, subscribed_topic_names=["u"])
    assert r.member_epoch == 2
    assert c.assigned("m-a") == [(tid("u"), 0)]
    # Subscribing to a topic the cluster lacks assigns nothing of it.
    r = c.beat("m-a", 2, subscribed_topic_names=["u", "missing"])
    assert c.assigned("m-a") == [(tid("u"), 0)]


def test_partitions_added_to_a_topic_are_assigned_on_the_next_heartbeat() -> None:
    c = Coordinator(image(topic("t", 1)))
    c.join("m-a", ["t"])
    c.metadata = image(topic("t", 3), version=2)
    r = c.beat("m-a", 1)
    assert (r.member_epoch, partitions(r)) == (2, [0, 1, 2])


def test_rack_and_client_are_kept_and_a_rejoin_after_a_lost_join_answer_is_accepted() -> None:
    c = Coordinator(image(topic("t", 1)))
    c.join("m-a", ["t"], rack_id="r1")
    # The join's answer was lost: the member retries epoch 0, which is its previous epoch.
    r = c.join("m-a", ["t"])
    assert (r.error_code, r.member_epoch, partitions(r)) == (0, 1, [0])
    m = c.group().members["m-a"]
    assert (m.rack_id, m.client_id, m.client_host) == ("r1", "client", "/127.0.0.1")
