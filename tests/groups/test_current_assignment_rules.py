"""CurrentAssignmentBuilder rules of Kafka 4.4 that show in epochs (issue 9, item 11)."""

from __future__ import annotations

from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    MemberState,
)
from tests.groups.harness import Coordinator, image, topic, tps
from tests.messages import tid

FOO = tid("foo")


def test_while_revoking_the_member_epoch_stays_put() -> None:
    c = Coordinator(image(topic("foo", 4)))
    c.join("A", ["foo"])  # A gets 0..3 at epoch 1
    c.join("B", ["foo"])  # target: A keeps two, B gets two
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3))  # A must revoke two: UNREVOKED at epoch 1
    assert c.group().members["A"].state == MemberState.UNREVOKED_PARTITIONS
    keeps = c.member("A")[1]
    c.join("C", ["foo"])
    c.join("D", ["foo"])  # the target shrinks again before A acknowledged
    response = c.beat("A", 1, tps(FOO, *keeps))
    # Kafka's computeNextAssignment(memberEpoch): more to revoke, so the epoch does not move.
    assert response.member_epoch == 1
    assert c.group().members["A"].state == MemberState.UNREVOKED_PARTITIONS


def test_a_partition_given_back_from_the_members_own_revocation_gets_the_target_epoch() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])  # A: 0, 1 at epoch 1
    c.join("B", ["foo"])  # epoch 2: A must give one up
    c.beat("A", 1, tps(FOO, 0, 1))
    pending = c.group().members["A"].pending_revocation[FOO]
    (given_up,) = pending
    c.beat("B", -1)  # B leaves: the target gives A everything again
    c.beat("A", 1, tps(FOO, *(p for p in (0, 1) if p != given_up)))  # A acknowledges the revocation
    member = c.group().members["A"]
    target_epoch = c.group().assignment_epoch
    assert member.state == MemberState.STABLE
    assert member.assignment_epoch_of(FOO, given_up) == target_epoch


def test_the_previous_epoch_updates_when_a_subscription_change_only_shrinks_the_assignment() -> None:
    c = Coordinator(image(topic("foo", 2), topic("bar", 2)))
    c.join("A", ["foo", "bar"])
    c.beat("A", 1, tps(FOO, 0, 1) + tps(tid("bar"), 0, 1))
    c.config = ConsumerGroupConfig(assignment_interval_ms=10**9)
    # Only the subscription changes, no new target is computed yet (assignment interval).
    c.beat("A", 1, tps(FOO, 0, 1) + tps(tid("bar"), 0, 1), subscribed_topic_names=["foo"])
    member = c.group().members["A"]
    assert member.previous_member_epoch == member.member_epoch == 1
