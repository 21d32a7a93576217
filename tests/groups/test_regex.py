"""Regular-expression subscriptions: RE2, resolved against metadata, refreshed, recorded."""

from __future__ import annotations

from coordinator.errors import ErrorCode
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.messages.schema import topic_id_string
from records import RecordType
from tests.groups.harness import GROUP, Coordinator, assigned, image, topic, tps
from tests.messages import cg_request, tid


def join_regex(c: Coordinator, member: str, regex: str) -> object:
    return c.heartbeat(
        cg_request(GROUP, member, 0, rebalance_timeout_ms=30000, subscribed_topic_regex=regex, topic_partitions=[])
    )


def test_regex_resolves_against_metadata() -> None:
    c = Coordinator(image(topic("orders-eu", 2), topic("orders-us", 1), topic("payments", 3)))
    r = join_regex(c, "A", "orders-.*")
    assert r.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    g = c.group()
    assert g.regexes["orders-.*"].topics == frozenset({"orders-eu", "orders-us"})
    assert c.target("A") == {tid("orders-eu"): [0, 1], tid("orders-us"): [0]}
    assert any(rec.type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION for rec in c.log)
    # The whole name must match (Kafka uses matches()).
    join_regex(c, "B", "orders")
    assert c.group().regexes["orders"].topics == frozenset()


def test_new_matching_topic_triggers_assignment() -> None:
    c = Coordinator(image(topic("logs-a", 2)))
    join_regex(c, "A", "logs-.*")
    c.beat("A", 1, tps(tid("logs-a"), 0, 1))
    epoch = c.group().group_epoch
    c.metadata = image(topic("logs-a", 2), topic("logs-b", 2), topic("other", 1), version=2)
    r = c.beat("A", 1, tps(tid("logs-a"), 0, 1))
    assert c.group().regexes["logs-.*"].topics == frozenset({"logs-a", "logs-b"})
    assert c.group().group_epoch == epoch + 1
    assert (r.member_epoch, r.assignment is not None) == (epoch + 1, True)
    assert c.target("A") == {tid("logs-a"): [0, 1], tid("logs-b"): [0, 1]}


def test_refresh_interval_without_metadata_change() -> None:
    c = Coordinator(
        image(topic("x1", 1)), ConsumerGroupConfig(assignment_interval_ms=0, regex_refresh_interval_ms=10_000)
    )
    join_regex(c, "A", "x.*")
    n = len(c.log)
    c.now += 5_000
    c.beat("A", 1, tps(tid("x1"), 0))
    assert len(c.log) == n  # same image, within the interval: nothing re-resolved
    c.now += 6_000
    c.beat("A", 1, tps(tid("x1"), 0))
    assert c.log[-1].type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION
    assert c.group().regexes["x.*"].timestamp == c.now


def test_unused_regex_is_tombstoned_and_switching_to_names() -> None:
    c = Coordinator(image(topic("x1", 2), topic("y", 1)))
    join_regex(c, "A", "x.*")
    r = c.beat("A", 1, tps(tid("x1"), 0, 1), subscribed_topic_regex="", subscribed_topic_names=["y"])
    assert r.error_code == ErrorCode.NONE
    assert "x.*" not in c.group().regexes
    tomb = [rec for rec in c.log if rec.type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION and rec.value is None]
    assert len(tomb) == 1
    # x1 must be revoked before y comes.
    assert assigned(r) == []
    r = c.beat("A", 1, tps(tid("x1")))
    assert assigned(r) == [0]
    assert c.replayed() == c.state.snapshot()


def test_regex_of_a_fenced_member_is_dropped() -> None:
    c = Coordinator(image(topic("x1", 2)))
    join_regex(c, "A", "x.*")
    c.beat("A", -1)
    assert c.group().regexes == {}


def test_deleted_and_recreated_topic_is_a_new_topic() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    c.beat("A", 1, tps(tid("foo"), 0, 1))
    from coordinator.groups.topics import TopicImage

    c.metadata = image(TopicImage("foo", tid("foo-2"), 2), version=2)
    r = c.beat("A", 1, tps(tid("foo"), 0, 1))
    # The old incarnation's partitions are revoked; the new one's come once they are released.
    assert r.assignment is not None and r.assignment.topic_partitions == []
    r = c.beat("A", 1, tps(tid("foo")))
    assert r.assignment is not None
    assert [(topic_id_string(tp.topic_id), tp.partitions) for tp in r.assignment.topic_partitions] == [
        (tid("foo-2"), [0, 1])
    ]
