"""Kafka 4.2's share.* group configs: validated against the group.share.* bounds, stored in the
log with the group, described, and applied to the group's membership (session, heartbeat)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups import group_config as gc
from groupcoord.coordinator.groups.config import ConsumerGroupConfig, ShareGroupConfig
from groupcoord.coordinator.runtime.api import ScheduleTimer
from tests.groups_share.harness import GROUP, Coordinator, image, topic

CONSUMER = ConsumerGroupConfig()
SHARE = ShareGroupConfig()


def _alter(*changes: tuple[str, str | None]) -> dict[str, str]:
    return gc.incremental_alter({}, [gc.ConfigChange(n, gc.ConfigOp.SET, v) for n, v in changes], CONSUMER, SHARE)


def _refused(*changes: tuple[str, str | None]) -> str:
    with pytest.raises(GroupError) as caught:
        _alter(*changes)
    assert caught.value.error == ErrorCode.INVALID_CONFIG
    return str(caught.value.message)


def test_share_configs_are_validated_as_kafka_does() -> None:
    assert _alter(
        (gc.SHARE_RECORD_LOCK_DURATION, "20000"),
        (gc.SHARE_DELIVERY_COUNT_LIMIT, "3"),
        (gc.SHARE_AUTO_OFFSET_RESET, " earliest"),
        (gc.SHARE_ISOLATION_LEVEL, "read_committed "),
    ) == {
        gc.SHARE_RECORD_LOCK_DURATION: "20000",
        gc.SHARE_DELIVERY_COUNT_LIMIT: "3",
        gc.SHARE_AUTO_OFFSET_RESET: "earliest",
        gc.SHARE_ISOLATION_LEVEL: "read_committed",
    }
    assert _alter((gc.SHARE_AUTO_OFFSET_RESET, "by_duration:PT1H30M"))[gc.SHARE_AUTO_OFFSET_RESET] == (
        "by_duration:PT1H30M"
    )
    assert _refused((gc.SHARE_RECORD_LOCK_DURATION, "100")) == (
        "Invalid value 100 for configuration share.record.lock.duration.ms: Value must be at least 1000"
    )
    assert _refused((gc.SHARE_RECORD_LOCK_DURATION, "90000")) == (
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
    )
    assert _refused((gc.SHARE_DELIVERY_COUNT_LIMIT, "11")) == (
        "share.delivery.count.limit must be in the range 2 to 10 inclusive."
    )
    # Kafka compares the names case-sensitively (ShareGroupAutoOffsetResetStrategy, ValidString).
    assert _refused((gc.SHARE_AUTO_OFFSET_RESET, "by_duration:PT-1S")) == (
        "Invalid value by_duration:PT-1S for configuration share.auto.offset.reset: Invalid value `by_duration:PT-1S`"
        " for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format"
        " 'by_duration:<PnDTnHnMn.nS.>'."
    )
    for bad in ("Earliest", "by_duration:-PT1S", "by_duration:1h", "by_duration", "BY_DURATION:PT1H"):
        assert "The value must be either 'earliest', 'latest'" in _refused((gc.SHARE_AUTO_OFFSET_RESET, bad))
    assert "read_committed, read_uncommitted" in _refused((gc.SHARE_ISOLATION_LEVEL, "READ_COMMITTED"))
    assert "read_committed, read_uncommitted" in _refused((gc.SHARE_ISOLATION_LEVEL, "serializable"))


def test_renew_acknowledge_enable_is_a_boolean_applied_to_the_data_path() -> None:
    """Kafka 4.3's share.renew.acknowledge.enable: BOOLEAN (true/false, any case, trimmed), default
    true, no broker-level synonym; the share-partitions of the group run with it."""
    assert _alter((gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE, " FALSE ")) == {gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE: "false"}
    assert _refused((gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE, "1")) == (
        "Invalid value 1 for configuration share.renew.acknowledge.enable: Expected value to be either true or false"
    )
    assert gc.effective_share(SHARE, None).renew_acknowledge_enable is True
    assert gc.effective_share(SHARE, {gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE: "false"}).renew_acknowledge_enable is False
    default = {d.name: d for d in gc.describe({}, CONSUMER, share=SHARE)}[gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE]
    assert (default.value, default.source, default.config_type) == (
        "true",
        gc.ConfigSource.DEFAULT_CONFIG,
        gc.CONFIG_TYPE_BOOLEAN,
    )
    assert [s.name for s in default.synonyms] == [gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE]
    own = gc.describe(
        {gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE: "false"}, CONSUMER, [gc.SHARE_RENEW_ACKNOWLEDGE_ENABLE], SHARE
    )
    assert [(d.value, d.source) for d in own] == [("false", gc.ConfigSource.GROUP_CONFIG)]


def test_session_must_exceed_heartbeat_for_share_groups_too() -> None:
    broker = ShareGroupConfig(min_session_timeout_ms=1000, min_heartbeat_interval_ms=1000)
    with pytest.raises(GroupError) as caught:
        gc.incremental_alter(
            {},
            [
                gc.ConfigChange(gc.SHARE_SESSION_TIMEOUT, gc.ConfigOp.SET, "5000"),
                gc.ConfigChange(gc.SHARE_HEARTBEAT_INTERVAL, gc.ConfigOp.SET, "5000"),
            ],
            CONSUMER,
            broker,
        )
    assert caught.value.message == "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"


def test_described_with_their_broker_synonyms_and_types() -> None:
    described = {d.name: d for d in gc.describe({gc.SHARE_ISOLATION_LEVEL: "read_committed"}, CONSUMER, share=SHARE)}
    lock = described[gc.SHARE_RECORD_LOCK_DURATION]
    assert (lock.value, lock.source, lock.config_type) == ("30000", gc.ConfigSource.DEFAULT_CONFIG, gc.CONFIG_TYPE_INT)
    assert [s.name for s in lock.synonyms] == ["group.share.record.lock.duration.ms"]
    level = described[gc.SHARE_ISOLATION_LEVEL]
    assert (level.value, level.source, level.config_type) == (
        "read_committed",
        gc.ConfigSource.GROUP_CONFIG,
        gc.CONFIG_TYPE_STRING,
    )
    reset = described[gc.SHARE_AUTO_OFFSET_RESET]
    assert (reset.value, reset.source) == ("latest", gc.ConfigSource.DEFAULT_CONFIG)


def test_the_groups_session_timeout_and_heartbeat_interval_are_applied() -> None:
    broker = ShareGroupConfig(min_session_timeout_ms=1000, min_heartbeat_interval_ms=500)
    c = Coordinator(image(topic("t", 1)), broker)
    result = c.shard.alter_group_config(
        c.state,
        GROUP,
        [
            gc.ConfigChange(gc.SHARE_SESSION_TIMEOUT, gc.ConfigOp.SET, "3000"),
            gc.ConfigChange(gc.SHARE_HEARTBEAT_INTERVAL, gc.ConfigOp.SET, "700"),
        ],
        None,
        False,
    )
    assert c.apply(result) == (0, None)
    r = c.join("m-a", ["t"])
    assert r.heartbeat_interval_ms == 700
    assert c.timers[f"share-session\x00{GROUP}\x00m-a"].deadline_ms == c.now + 3000
    # Another group runs with the broker's values.
    assert c.join("m-a", ["t"], group="other").heartbeat_interval_ms == broker.heartbeat_interval_ms
    loaded = c.shard.on_loaded(c.replayed(), 10_000)
    deadlines = {
        op.key: op.deadline_ms
        for op in loaded.timers
        if isinstance(op, ScheduleTimer) and op.key.startswith("share-session")
    }
    assert deadlines[f"share-session\x00{GROUP}\x00m-a"] == 13_000
