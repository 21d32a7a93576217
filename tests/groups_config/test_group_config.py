"""Per-group dynamic configs (KIP-848 group configs), pure: validation with Kafka's messages,
persistence through the group's shard, and the group running with its own values."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups import group_config as gc
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.timers import AssignmentDue, SessionTimeout, session_key
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.runtime.api import Result, ScheduleTimer
from groupcoord.records import RecordType, decode, encode
from tests.answers import answered
from tests.messages import cg_request, tid

BROKER = ConsumerGroupConfig(
    session_timeout_ms=45000,
    min_session_timeout_ms=10000,
    max_session_timeout_ms=60000,
    heartbeat_interval_ms=5000,
    min_heartbeat_interval_ms=1000,
    max_heartbeat_interval_ms=15000,
    assignment_interval_ms=0,
)
IMAGE = TopicsImage.of([TopicImage("t", tid("t"), 2)], 1)
HANDLERS = GroupCoordinatorShard(consumer_config=BROKER, metadata=lambda: IMAGE)
SET, DELETE, APPEND = gc.ConfigOp.SET, gc.ConfigOp.DELETE, gc.ConfigOp.APPEND


def apply(state: GroupCoordinatorState, result: Result[Any]) -> Any:
    for record in result.records:
        state.replay(decode(*encode(record)))
    return result.response


def change(name: str, value: str | None, op: int = SET) -> gc.ConfigChange:
    return gc.ConfigChange(name, op, value)


def alter(state: GroupCoordinatorState, group: str, *changes: gc.ConfigChange, validate_only: bool = False) -> Any:
    return apply(state, HANDLERS.alter_group_config(state, group, list(changes), None, validate_only))


def refused(*changes: gc.ConfigChange) -> str:
    with pytest.raises(GroupError) as caught:
        gc.incremental_alter({}, changes, BROKER)
    assert caught.value.error == ErrorCode.INVALID_CONFIG
    assert caught.value.message is not None
    return caught.value.message


# --- validation, as Kafka's GroupConfig.validate -----------------------------------------------


def test_unknown_group_config_name_is_invalid_config() -> None:
    assert refused(change("consumer.no.such.config", "10")) == "Unknown group config name: consumer.no.such.config"
    # Kafka's streams group configs and share-group features not served here: refused, saying why.
    for name in ("share.assignor.offload.enable", "streams.num.standby.replicas", "errors.deadletterqueue.topic.name"):
        assert refused(change(name, "1")) == (
            f"Group config {name} is for streams groups or a share-group feature, which this coordinator "
            "does not serve; set it on the cluster's own group coordinator."
        )
    assert refused(change("share.no.such.config", "1")) == "Unknown group config name: share.no.such.config"


def test_a_stored_config_this_release_does_not_know_blocks_no_change() -> None:
    """A newer release stored a config this one does not know (a rollback, or both running during
    a rolling upgrade): it is kept and left out of describe, and changes of the group's other
    configs, or its deletion, still work (they all failed with INVALID_CONFIG before)."""
    stored = {"share.from.a.later.release": "7", "streams.num.standby.replicas": "1", gc.SESSION_TIMEOUT: "30000"}
    assert gc.incremental_alter(stored, [change(gc.HEARTBEAT_INTERVAL, "2000")], BROKER) == {
        **stored,
        gc.HEARTBEAT_INTERVAL: "2000",
    }
    assert gc.incremental_alter(stored, [change("share.from.a.later.release", None, DELETE)], BROKER) == {
        "streams.num.standby.replicas": "1",
        gc.SESSION_TIMEOUT: "30000",
    }
    # Setting such a name is still refused.
    assert refused(change("share.from.a.later.release", "8")) == "Unknown group config name: share.from.a.later.release"
    assert "share.from.a.later.release" not in {d.name for d in gc.describe(stored, BROKER)}


def test_assignor_offload_is_accepted_stored_and_described_as_kafka_does() -> None:
    """Kafka 4.4 accepts consumer.assignor.offload.enable (a BOOLEAN); tools copying a group's
    configs from Kafka must not fail. It changes nothing here (the assignor runs in the step)."""
    assert gc.incremental_alter({}, [change(gc.ASSIGNOR_OFFLOAD, " FALSE ")], BROKER) == {gc.ASSIGNOR_OFFLOAD: "false"}
    assert refused(change(gc.ASSIGNOR_OFFLOAD, "yes")) == (
        "Invalid value yes for configuration consumer.assignor.offload.enable: "
        "Expected value to be either true or false"
    )
    assert refused(change(gc.ASSIGNOR_OFFLOAD, "true", APPEND)) == (
        "Config value append is not allowed for config key: consumer.assignor.offload.enable"
    )
    assert gc.replace_all([(gc.ASSIGNOR_OFFLOAD, "true")], BROKER) == {gc.ASSIGNOR_OFFLOAD: "true"}
    assert gc.effective(BROKER, {gc.ASSIGNOR_OFFLOAD: "false"}) == BROKER
    (default,) = gc.describe({}, BROKER, [gc.ASSIGNOR_OFFLOAD])
    assert (default.value, default.source, default.config_type) == ("true", gc.ConfigSource.DEFAULT_CONFIG, 1)
    assert [(s.name, s.value) for s in default.synonyms] == [("group.consumer.assignor.offload.enable", "true")]
    (own,) = gc.describe({gc.ASSIGNOR_OFFLOAD: "false"}, BROKER, [gc.ASSIGNOR_OFFLOAD])
    assert (own.value, own.source) == ("false", gc.ConfigSource.GROUP_CONFIG)
    consumer_configs = [d.name for d in gc.describe({}, BROKER) if d.name.startswith("consumer.")]
    assert consumer_configs == [gc.SESSION_TIMEOUT, gc.HEARTBEAT_INTERVAL, gc.ASSIGNMENT_INTERVAL, gc.ASSIGNOR_OFFLOAD]


def test_values_outside_the_broker_bounds_are_invalid_config_with_kafkas_message() -> None:
    assert refused(change(gc.SESSION_TIMEOUT, "9999")) == (
        "consumer.session.timeout.ms must be in the range 10000 to 60000 inclusive."
    )
    assert refused(change(gc.SESSION_TIMEOUT, "60001")) == (
        "consumer.session.timeout.ms must be in the range 10000 to 60000 inclusive."
    )
    assert refused(change(gc.HEARTBEAT_INTERVAL, "999")) == (
        "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive."
    )
    assert refused(change(gc.ASSIGNMENT_INTERVAL, "15001")) == (
        "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."
    )
    assert gc.incremental_alter({}, [change(gc.ASSIGNMENT_INTERVAL, "0")], BROKER) == {gc.ASSIGNMENT_INTERVAL: "0"}


def test_session_timeout_must_exceed_heartbeat_interval() -> None:
    message = refused(change(gc.SESSION_TIMEOUT, "12000"), change(gc.HEARTBEAT_INTERVAL, "12000"))
    assert message == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"


def test_values_must_be_positive_ints() -> None:
    assert refused(change(gc.SESSION_TIMEOUT, "abc")) == (
        "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"
    )
    assert refused(change(gc.SESSION_TIMEOUT, "0")) == (
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    )
    assert refused(change(gc.ASSIGNMENT_INTERVAL, "-1")) == (
        "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0"
    )


def test_append_and_subtract_are_refused_for_int_configs() -> None:
    assert refused(change(gc.SESSION_TIMEOUT, "20000", APPEND)) == (
        "Config value append is not allowed for config key: consumer.session.timeout.ms"
    )


def test_delete_returns_to_the_broker_value() -> None:
    current = {gc.SESSION_TIMEOUT: "20000", gc.HEARTBEAT_INTERVAL: "2000"}
    assert gc.incremental_alter(current, [change(gc.SESSION_TIMEOUT, None, DELETE)], BROKER) == {
        gc.HEARTBEAT_INTERVAL: "2000"
    }


# --- persisted through the group's shard ----------------------------------------------------------


def test_alter_writes_one_record_replayed_into_the_state() -> None:
    state = GroupCoordinatorState()
    result = HANDLERS.alter_group_config(state, "g", [change(gc.SESSION_TIMEOUT, "20000")], None, False)
    assert result.response == (ErrorCode.NONE, None)
    assert [r.type for r in result.records] == [RecordType.GROUP_CONFIG]
    apply(state, result)
    assert state.group_configs.of("g") == {gc.SESSION_TIMEOUT: "20000"}
    assert state.snapshot()["group_configs"] == {"g": {gc.SESSION_TIMEOUT: "20000"}}


def test_validate_only_and_refusals_write_nothing() -> None:
    state = GroupCoordinatorState()
    result = HANDLERS.alter_group_config(state, "g", [change(gc.SESSION_TIMEOUT, "20000")], None, True)
    assert result.response == (ErrorCode.NONE, None) and result.records == []
    result = HANDLERS.alter_group_config(state, "g", [change(gc.SESSION_TIMEOUT, "1")], None, False)
    assert answered(result.response)[0] == ErrorCode.INVALID_CONFIG and result.records == []


def test_removing_the_last_override_writes_a_tombstone() -> None:
    state = GroupCoordinatorState()
    alter(state, "g", change(gc.SESSION_TIMEOUT, "20000"))
    result = HANDLERS.alter_group_config(state, "g", [change(gc.SESSION_TIMEOUT, None, DELETE)], None, False)
    assert [r.value for r in result.records] == [None]
    apply(state, result)
    assert state.group_configs.of("g") == {}


def test_legacy_alter_configs_replaces_the_whole_set() -> None:
    state = GroupCoordinatorState()
    alter(state, "g", change(gc.SESSION_TIMEOUT, "20000"))
    apply(state, HANDLERS.alter_group_config(state, "g", None, [(gc.HEARTBEAT_INTERVAL, "2000")], False))
    assert state.group_configs.of("g") == {gc.HEARTBEAT_INTERVAL: "2000"}


def test_delete_groups_deletes_the_groups_configs() -> None:
    state = GroupCoordinatorState()
    join(state, "g", "m1")
    alter(state, "g", change(gc.SESSION_TIMEOUT, "20000"))
    apply(state, HANDLERS.consumer_group_heartbeat(state, leave("g", "m1"), 10, RequestContext(api_version=1)))
    answers = apply(state, HANDLERS.delete_groups(state, ["g"], 20))
    assert answers == [("g", ErrorCode.NONE)]
    assert state.group_configs.of("g") == {}


# --- describe -------------------------------------------------------------------------------------


def test_describe_lists_every_group_config_with_its_source() -> None:
    described = {d.name: d for d in gc.describe({gc.SESSION_TIMEOUT: "20000"}, BROKER)}
    assert list(described) == [
        gc.SESSION_TIMEOUT,
        gc.HEARTBEAT_INTERVAL,
        gc.ASSIGNMENT_INTERVAL,
        gc.SHARE_SESSION_TIMEOUT,
        gc.SHARE_HEARTBEAT_INTERVAL,
        gc.SHARE_RECORD_LOCK_DURATION,
        gc.SHARE_DELIVERY_COUNT_LIMIT,
        gc.SHARE_PARTITION_MAX_RECORD_LOCKS,
        gc.ASSIGNOR_OFFLOAD,
        gc.SHARE_AUTO_OFFSET_RESET,
        gc.SHARE_ISOLATION_LEVEL,
        gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE,
    ]
    # The broker's assignment interval was configured (0, Kafka's default is 1000).
    assert [(s.name, s.value, s.source) for s in described[gc.ASSIGNMENT_INTERVAL].synonyms] == [
        ("group.consumer.assignment.interval.ms", "0", gc.ConfigSource.STATIC_BROKER_CONFIG)
    ]
    session, heartbeat = described[gc.SESSION_TIMEOUT], described[gc.HEARTBEAT_INTERVAL]
    assert (session.value, session.source) == ("20000", gc.ConfigSource.GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        (gc.SESSION_TIMEOUT, "20000", gc.ConfigSource.GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", gc.ConfigSource.DEFAULT_CONFIG),
    ]
    # Not set on the group: the broker's value, as a default; the broker's own value was
    # configured (Kafka's default is 5000 too, so this one is a default as well).
    assert (heartbeat.value, heartbeat.source) == ("5000", gc.ConfigSource.DEFAULT_CONFIG)
    only = gc.describe({}, BROKER, [gc.HEARTBEAT_INTERVAL, "no.such.config"])
    assert [d.name for d in only] == [gc.HEARTBEAT_INTERVAL]


# --- applied: the group runs with its own values ---------------------------------------------------


def join_request(group: str, member: str) -> ConsumerGroupHeartbeatRequest:
    return cg_request(
        group,
        member_id=member,
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )


def leave(group: str, member: str) -> ConsumerGroupHeartbeatRequest:
    return cg_request(group, member_id=member, member_epoch=-1)


def join(state: GroupCoordinatorState, group: str, member: str, now: int = 0) -> Result[Any]:
    result = HANDLERS.consumer_group_heartbeat(state, join_request(group, member), now, RequestContext(api_version=1))
    apply(state, result)
    return result


def session_deadline(result: Result[Any], group: str, member: str) -> int:
    (timer,) = [t for t in result.timers if isinstance(t, ScheduleTimer) and t.key == session_key(group, member)]
    return timer.deadline_ms


def test_heartbeat_answers_carry_the_groups_heartbeat_interval() -> None:
    state = GroupCoordinatorState()
    assert answered(join(state, "g", "m1").response).heartbeat_interval_ms == 5000
    alter(state, "g", change(gc.HEARTBEAT_INTERVAL, "2000"))
    assert answered(join(state, "g", "m2").response).heartbeat_interval_ms == 2000
    # Other groups keep the broker's value.
    assert answered(join(state, "h", "m1").response).heartbeat_interval_ms == 5000


def test_session_expiry_uses_the_groups_session_timeout() -> None:
    state = GroupCoordinatorState()
    assert session_deadline(join(state, "g", "m1", now=100), "g", "m1") == 100 + 45000
    alter(state, "g", change(gc.SESSION_TIMEOUT, "12000"))
    assert session_deadline(join(state, "g", "m2", now=200), "g", "m2") == 200 + 12000
    # After a reload every member's session timer is re-armed with the group's value.
    replayed = GroupCoordinatorState()
    for record in join_records(state):
        replayed.replay(record)
    timers = HANDLERS.on_loaded(replayed, 1000).timers
    sessions = {
        t.key: t.deadline_ms for t in timers if isinstance(t, ScheduleTimer) and isinstance(t.event, SessionTimeout)
    }
    assert sessions == {session_key("g", "m1"): 1000 + 12000}


def join_records(state: GroupCoordinatorState) -> list[Any]:
    """Records rebuilding a group "g" of one member, m1, with ``state``'s configs of "g"."""
    fresh = GroupCoordinatorState()
    request = join_request("g", "m1")
    records = list(HANDLERS.consumer_group_heartbeat(fresh, request, 0, RequestContext(api_version=1)).records)
    records.append(gc.config_record("g", state.group_configs.of("g")))
    return [decode(*encode(r)) for r in records]


def test_target_assignment_waits_for_the_groups_assignment_interval() -> None:
    state = GroupCoordinatorState()
    alter(state, "g", change(gc.ASSIGNMENT_INTERVAL, "5000"))
    join(state, "g", "m1", now=100_000)
    second = join(state, "g", "m2", now=101_000)
    due = [t for t in second.timers if isinstance(t, ScheduleTimer) and isinstance(t.event, AssignmentDue)]
    assert [t.deadline_ms for t in due] == [100_000 + 5000]
    # The broker's interval (0 here) computes it at once for a group without the override.
    join(state, "h", "m1", now=100_000)
    other = join(state, "h", "m2", now=101_000)
    assert not [t for t in other.timers if isinstance(t, ScheduleTimer) and isinstance(t.event, AssignmentDue)]


def test_overrides_outside_narrower_broker_bounds_are_capped_to_them() -> None:
    narrower = ConsumerGroupConfig(min_session_timeout_ms=30000, session_timeout_ms=45000)
    assert gc.effective(narrower, {gc.SESSION_TIMEOUT: "12000"}).session_timeout_ms == 30000
