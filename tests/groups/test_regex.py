"""Regular-expression subscriptions: RE2, resolved against metadata, refreshed, recorded."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.messages.schema import topic_id_string
from groupcoord.records import RecordType
from tests.groups.harness import GROUP, Coordinator, assigned, image, topic, tps
from tests.messages import cg_request, tid


def join_regex(c: Coordinator, member: str, regex: str) -> object:
    return c.heartbeat(
        cg_request(GROUP, member, 0, rebalance_timeout_ms=30000, subscribed_topic_regex=regex, topic_partitions=[])
    )


def test_a_new_regex_is_resolved_off_the_heartbeat() -> None:
    c = Coordinator(image(topic("orders-eu", 2), topic("orders-us", 1), topic("payments", 3)))
    r = join_regex(c, "A", "orders-.*")
    # As Kafka: the heartbeat that brings the regex only asks for its resolution; its answer
    # carries none of the regex's partitions.
    assert r.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    assert assigned(r) == [] and c.group().regexes == {}  # type: ignore[arg-type]
    epoch = c.group().group_epoch
    c.resolve_regexes()
    g = c.group()
    assert g.regexes["orders-.*"].topics == frozenset({"orders-eu", "orders-us"})
    assert g.group_epoch == epoch + 1  # the resolution changed what the group subscribes to
    assert any(rec.type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION for rec in c.log)
    r = c.beat("A", 1, [])
    assert r.member_epoch == epoch + 1 and c.target("A") == {tid("orders-eu"): [0, 1], tid("orders-us"): [0]}
    # A second new regex within 10 s of the group's last resolution waits (Kafka's
    # REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) for a heartbeat after that.
    r = join_regex(c, "B", "orders")
    c.resolve_regexes()
    assert "orders" not in c.group().regexes
    c.now += 10_001
    c.beat("B", r.member_epoch, [])  # type: ignore[attr-defined]
    c.resolve_regexes()
    # The whole name must match (Kafka uses matches()).
    assert c.group().regexes["orders"].topics == frozenset()
    assert c.replayed() == c.state.snapshot()


def test_a_literal_topic_comes_first_and_the_regex_one_heartbeat_later() -> None:
    """librdkafka's 0045_resubscribe_with_regex: subscribe(["^.*topic_regex.*", "topic_a"])."""
    c = Coordinator(image(topic("topic_a", 2), topic("x_topic_regex_1", 2)))
    r = c.heartbeat(
        cg_request(
            GROUP,
            "A",
            0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=["topic_a"],
            subscribed_topic_regex="^.*topic_regex.*",
            topic_partitions=[],
        )
    )
    assert c.target("A") == {tid("topic_a"): [0, 1]} and assigned(r) == [0, 1]
    c.resolve_regexes()
    r = c.beat("A", r.member_epoch, tps(tid("topic_a"), 0, 1))
    assert c.target("A") == {tid("topic_a"): [0, 1], tid("x_topic_regex_1"): [0, 1]}
    assert assigned(r) == [0, 0, 1, 1]


def test_no_resolution_within_ten_seconds_of_the_last() -> None:
    c = Coordinator(image(topic("logs-a", 2)))
    join_regex(c, "A", "logs-.*")
    c.resolve_regexes()
    c.beat("A", 1, [])
    c.beat("A", 2, tps(tid("logs-a"), 0, 1))
    epoch = c.group().group_epoch
    c.metadata = image(topic("logs-a", 2), topic("logs-b", 2), topic("other", 1), version=2)
    # A new topic within 10 s of the last resolution: Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS.
    c.now += 10_000
    c.beat("A", 2, tps(tid("logs-a"), 0, 1))
    assert not any(k.startswith("consumer-regex") for k in c.timers)
    c.now += 1
    c.beat("A", 2, tps(tid("logs-a"), 0, 1))
    c.resolve_regexes()
    assert c.group().regexes["logs-.*"].topics == frozenset({"logs-a", "logs-b"})
    assert c.group().group_epoch == epoch + 1
    r = c.beat("A", 2, tps(tid("logs-a"), 0, 1))
    assert (r.member_epoch, r.assignment is not None) == (epoch + 1, True)
    assert c.target("A") == {tid("logs-a"): [0, 1], tid("logs-b"): [0, 1]}


def test_refresh_interval_without_metadata_change() -> None:
    c = Coordinator(
        image(topic("x1", 1)), ConsumerGroupConfig(assignment_interval_ms=0, regex_refresh_interval_ms=20_000)
    )
    join_regex(c, "A", "x.*")
    c.resolve_regexes()
    epoch = c.beat("A", 1, []).member_epoch
    n = len(c.log)
    c.now += 15_000
    c.beat("A", epoch, tps(tid("x1"), 0))
    c.resolve_regexes()
    assert len(c.log) == n  # same image, within the interval: nothing re-resolved
    c.now += 6_000
    c.beat("A", epoch, tps(tid("x1"), 0))
    c.resolve_regexes()
    # Resolved again, to the same topics: a record, no new group epoch.
    assert c.log[-1].type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION
    assert c.group().regexes["x.*"].timestamp == c.now


def test_a_resolution_for_a_regex_nobody_uses_any_more_writes_nothing() -> None:
    c = Coordinator(image(topic("x1", 2), topic("y", 1)))
    join_regex(c, "A", "x.*")
    c.beat("A", 1, [], subscribed_topic_regex="", subscribed_topic_names=["y"])
    n = len(c.log)
    c.resolve_regexes()
    assert len(c.log) == n and c.group().regexes == {}


def test_unused_regex_is_tombstoned_and_switching_to_names() -> None:
    c = Coordinator(image(topic("x1", 2), topic("y", 1)))
    join_regex(c, "A", "x.*")
    c.resolve_regexes()
    r = c.beat("A", 1, [])
    assert assigned(r) == [0, 1]
    epoch = r.member_epoch
    r = c.beat("A", epoch, tps(tid("x1"), 0, 1), subscribed_topic_regex="", subscribed_topic_names=["y"])
    assert r.error_code == ErrorCode.NONE
    assert "x.*" not in c.group().regexes
    tomb = [rec for rec in c.log if rec.type == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION and rec.value is None]
    assert len(tomb) == 1
    # x1 must be revoked before y comes.
    assert assigned(r) == []
    r = c.beat("A", r.member_epoch, tps(tid("x1")))
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
    from groupcoord.coordinator.groups.topics import TopicImage

    c.metadata = image(TopicImage("foo", tid("foo-2"), 2), version=2)
    r = c.beat("A", 1, tps(tid("foo"), 0, 1))
    # The old incarnation's partitions are revoked; the new one's come once they are released.
    assert r.assignment is not None and r.assignment.topic_partitions == []
    r = c.beat("A", 1, tps(tid("foo")))
    assert r.assignment is not None
    assert [(topic_id_string(tp.topic_id), tp.partitions) for tp in r.assignment.topic_partitions] == [
        (tid("foo-2"), [0, 1])
    ]


def test_compiled_patterns_are_bounded_by_their_length_as_well_as_their_number() -> None:
    """A client may send 32 KB patterns, each ~1.3 MB compiled: 4,096 of them (the count bound
    alone) would hold gigabytes. The longest are dropped first by length, the shortest stay."""
    from groupcoord.coordinator.groups.consumer.regex import _Compiled

    compiled = _Compiled(entries=4096, chars=1 << 20)
    short = compiled("orders-.*")
    for i in range(100):
        compiled(f"(t{i}|" + "|".join(f"x{j}" for j in range(6000)) + ")")
        assert compiled._chars <= 1 << 20 or len(compiled._kept) == 1
        assert compiled("orders-.*") is short  # used between the long ones: kept, not compiled again
    assert len(compiled._kept) < 40
    few = _Compiled(entries=3, chars=1 << 20)
    for regex in ("a.*", "b.*", "c.*", "d.*"):
        few(regex)
    assert list(few._kept) == ["b.*", "c.*", "d.*"]
