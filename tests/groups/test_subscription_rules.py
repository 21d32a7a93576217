"""Subscription and describe rules of Kafka 4.4 (issue 9, items 11 and 12)."""

from __future__ import annotations

from groupcoord.coordinator.groups.consumer import (
    consumer_group_describe,
)
from groupcoord.coordinator.groups.consumer.regex import resolve_regex
from groupcoord.coordinator.messages.schema import topic_id_string
from tests.groups.harness import GROUP, Coordinator, assigned, image, topic
from tests.messages import cg_request, tid


def test_subscribed_topic_names_and_a_regex_together_subscribe_to_their_union() -> None:
    c = Coordinator(image(topic("foo", 2), topic("bar-1", 1), topic("baz", 1)))
    response = c.heartbeat(
        cg_request(
            GROUP,
            "m",
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["foo"],
            subscribed_topic_regex="bar-.*",
            topic_partitions=[],
        )
    )
    assert response.error_code == 0
    # The regex's topics come once its resolution (off the heartbeat) has landed.
    c.resolve_regexes()
    response = c.beat("m", response.member_epoch, [])
    owned = {topic_id_string(tp.topic_id): sorted(tp.partitions) for tp in response.assignment.topic_partitions}  # type: ignore[union-attr]
    assert owned == {tid("foo"): [0, 1], tid("bar-1"): [0]}
    assert assigned(response) == [0, 0, 1]


def test_a_regex_never_matches_internal_topics() -> None:
    metadata = image(topic("__consumer_offsets", 50), topic("__transaction_state", 50), topic("orders", 1))
    assert resolve_regex(".*", metadata) == frozenset({"orders"})


def test_describe_leaves_out_deleted_topics_and_answers_kafkas_defaults() -> None:
    c = Coordinator(image(topic("foo", 1), topic("gone", 1)))
    c.join("A", ["foo", "gone"])
    c.metadata = image(topic("foo", 1), version=2)  # "gone" was deleted
    (described,) = consumer_group_describe(c.state, [GROUP], c.metadata).groups
    (member,) = described.members
    assert [tp.topic_name for tp in member.assignment.topic_partitions] == ["foo"]
    assert [tp.topic_name for tp in member.target_assignment.topic_partitions] == ["foo"]
    assert member.subscribed_topic_regex == ""  # a member without a regex
    (unknown,) = consumer_group_describe(c.state, ["nope"], c.metadata).groups
    assert unknown.error_code == 69 and unknown.group_state == ""
