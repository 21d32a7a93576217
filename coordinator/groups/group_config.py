"""Per-group dynamic configs (KIP-848 group configs), as Apache Kafka 4.4's GroupConfig.

An operator sets them with IncrementalAlterConfigs on a GROUP resource; they override the
broker-level ``group.consumer.*`` values for one group. Kafka's consumer-group configs are
``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``,
``consumer.assignment.interval.ms`` and ``consumer.assignor.offload.enable`` (classic groups have
none). The first three are applied; ``consumer.assignor.offload.enable`` is validated, stored
and described as Kafka does, and changes nothing here: this coordinator runs the assignor in the
group's own step, which is what ``false`` means in Kafka. Kafka's share and streams group configs
(``share.*``, ``streams.*``, ``errors.deadletterqueue.*``) belong to groups this coordinator does
not serve; they are refused with INVALID_CONFIG and a message saying so, rather than stored for
groups that can never read them.

Pure: values in, values or ``GroupError(INVALID_CONFIG, ...)`` out. The messages are Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any

from coordinator.errors import ErrorCode, GroupError
from coordinator.groups.config import ConsumerGroupConfig
from records import CoordinatorRecord, RecordType
from records.definitions import GroupConfigEntry, GroupConfigKey, GroupConfigValue

# ConfigResource.Type.GROUP on the wire.
GROUP_RESOURCE_TYPE = 32

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
ASSIGNOR_OFFLOAD = "consumer.assignor.offload.enable"

# DescribeConfigsResponse.ConfigType ids.
CONFIG_TYPE_BOOLEAN = 1
CONFIG_TYPE_INT = 3

# Kafka 4.4's group configs of share and streams groups (GroupConfig), which this coordinator
# does not serve.
NOT_SERVED = frozenset(
    {
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
        "share.renew.acknowledge.enable",
        "share.assignment.interval.ms",
        "share.assignor.offload.enable",
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
        "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms",
        "streams.assignment.interval.ms",
        "streams.assignor.offload.enable",
        "streams.task.offset.interval.ms",
        "streams.num.warmup.replicas",
        "streams.acceptable.recovery.lag",
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.copy.record.enable",
    }
)


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    synonym: str  # the broker-level name
    field: str  # the ConsumerGroupConfig field it overrides
    floor: int  # Kafka's atLeast(...)
    min_field: str  # the ConsumerGroupConfig fields bounding it
    max_field: str
    documentation: str


# In Kafka's listing order.
GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    SESSION_TIMEOUT: GroupConfigDef(
        "group.consumer.session.timeout.ms",
        "session_timeout_ms",
        1,
        "min_session_timeout_ms",
        "max_session_timeout_ms",
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    HEARTBEAT_INTERVAL: GroupConfigDef(
        "group.consumer.heartbeat.interval.ms",
        "heartbeat_interval_ms",
        1,
        "min_heartbeat_interval_ms",
        "max_heartbeat_interval_ms",
        "The heartbeat interval given to the members of a consumer group.",
    ),
    ASSIGNMENT_INTERVAL: GroupConfigDef(
        "group.consumer.assignment.interval.ms",
        "assignment_interval_ms",
        0,
        "min_assignment_interval_ms",
        "max_assignment_interval_ms",
        "The minimum time between two target assignment computations of a consumer group.",
    ),
}


@dataclass(frozen=True, slots=True)
class StoredConfigDef:
    """A BOOLEAN group config kept and described, with no effect on this coordinator."""

    synonym: str  # the broker-level name
    broker_value: str  # what the broker level always is here (Kafka's default)
    documentation: str


STORED_CONFIGS: dict[str, StoredConfigDef] = {
    ASSIGNOR_OFFLOAD: StoredConfigDef(
        "group.consumer.assignor.offload.enable",
        "true",
        "Whether the consumer group assignor runs off the group coordinator's event thread "
        "(this coordinator always runs it in the group's own step).",
    ),
}

# Kafka's built-in defaults, to tell a broker value set by the operator from the default one.
_KAFKA_DEFAULTS = ConsumerGroupConfig()


class ConfigOp(IntEnum):
    """AlterConfigOp.OpType ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSource(IntEnum):
    """DescribeConfigsResponse.ConfigSource ids (the ones a group config can have)."""

    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_CONFIG, message)


def _check_name(name: str) -> None:
    if name in NOT_SERVED:
        raise _invalid(
            f"Group config {name} is for share or streams groups, which this coordinator does not serve; "
            "set it on the cluster's own group coordinator."
        )
    if name not in GROUP_CONFIGS and name not in STORED_CONFIGS:
        raise _invalid(f"Unknown group config name: {name}")


def _parse(name: str, value: str | None) -> str:
    """The value as stored: Kafka's parse of the config's type, or its message."""
    if name in STORED_CONFIGS:
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise _invalid(f"Invalid value {value} for configuration {name}: Expected value to be either true or false")
        return text
    return str(_parse_int(name, value))


def _parse_int(name: str, value: str | None) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    if not -(2**31) <= number < 2**31:
        raise _invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT")
    floor = GROUP_CONFIGS[name].floor
    if number < floor:
        raise _invalid(f"Invalid value {number} for configuration {name}: Value must be at least {floor}")
    return number


def validate(overrides: Mapping[str, str], broker: ConsumerGroupConfig) -> None:
    """A group's complete set of overrides against the broker-level bounds (Kafka's GroupConfig.validate)."""
    for name in overrides:
        _check_name(name)
    parsed = {name: _parse_int(name, value) for name, value in overrides.items() if name in GROUP_CONFIGS}
    for name in overrides.keys() - parsed.keys():
        _parse(name, overrides[name])
    for name, value in parsed.items():
        d = GROUP_CONFIGS[name]
        low, high = getattr(broker, d.min_field), getattr(broker, d.max_field)
        if not low <= value <= high:
            raise _invalid(f"{name} must be in the range {low} to {high} inclusive.")
    if SESSION_TIMEOUT in parsed or HEARTBEAT_INTERVAL in parsed:
        session = parsed.get(SESSION_TIMEOUT, broker.session_timeout_ms)
        heartbeat = parsed.get(HEARTBEAT_INTERVAL, broker.heartbeat_interval_ms)
        if session <= heartbeat:
            raise _invalid(f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}")


@dataclass(frozen=True, slots=True)
class ConfigChange:
    name: str
    op: int
    value: str | None


def incremental_alter(
    current: Mapping[str, str], changes: Iterable[ConfigChange], broker: ConsumerGroupConfig
) -> dict[str, str]:
    """The group's overrides after IncrementalAlterConfigs, validated as a whole."""
    out = dict(current)
    for change in changes:
        _check_name(change.name)
        if change.op == ConfigOp.SET:
            if change.value is None:
                raise _invalid(f"Null value not supported for : {change.name}")
            out[change.name] = _parse(change.name, change.value)
        elif change.op == ConfigOp.DELETE:
            out.pop(change.name, None)
        elif change.op in (ConfigOp.APPEND, ConfigOp.SUBTRACT):
            # Group configs are INT or BOOLEAN, and only LIST configs take APPEND/SUBTRACT.
            verb = "append" if change.op == ConfigOp.APPEND else "subtract"
            raise _invalid(f"Config value {verb} is not allowed for config key: {change.name}")
        else:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {change.op} for {change.name}")
    validate(out, broker)
    return out


def replace_all(configs: Iterable[tuple[str, str | None]], broker: ConsumerGroupConfig) -> dict[str, str]:
    """The group's overrides after the legacy AlterConfigs: exactly the given set."""
    out: dict[str, str] = {}
    for name, value in configs:
        _check_name(name)
        if value is None:
            raise _invalid(f"Null value not supported for : {name}")
        out[name] = _parse(name, value)
    validate(out, broker)
    return out


def effective(broker: ConsumerGroupConfig, overrides: Mapping[str, str] | None) -> ConsumerGroupConfig:
    """The consumer-group config one group runs with: the broker's, with the group's overrides.

    Overrides were validated when set; if the broker bounds have narrowed since, a value is
    capped to the new bounds, as Kafka's GroupConfig.evaluate does. Should capping leave the
    session timeout not above the heartbeat interval (overlapping broker bounds), the broker's
    own values are used."""
    if not overrides:
        return broker
    values: dict[str, Any] = {}
    for name, d in GROUP_CONFIGS.items():
        if name in overrides:
            low, high = getattr(broker, d.min_field), getattr(broker, d.max_field)
            values[d.field] = min(max(int(overrides[name]), low), high)
    try:
        return replace(broker, **values)
    except ValueError:
        return broker


def config_record(group_id: str, overrides: Mapping[str, str]) -> CoordinatorRecord:
    """The record holding all of the group's overrides; a tombstone once none is left."""
    value = GroupConfigValue([GroupConfigEntry(n, overrides[n]) for n in sorted(overrides)]) if overrides else None
    return CoordinatorRecord(RecordType.GROUP_CONFIG, GroupConfigKey(group_id), value)


class GroupConfigsState:
    """The overrides of every group of one shard, rebuilt from GROUP_CONFIG records."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}

    def replay(self, record: CoordinatorRecord) -> None:
        group = record.key.group
        if record.value is None or not record.value.configs:
            self.configs.pop(group, None)
        else:
            self.configs[group] = {e.name: e.value for e in record.value.configs}

    def of(self, group_id: str) -> dict[str, str]:
        return dict(self.configs.get(group_id, {}))

    def snapshot(self) -> dict[str, dict[str, str]]:
        return {g: dict(c) for g, c in sorted(self.configs.items())}


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str
    source: int


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    name: str
    value: str
    source: int
    synonyms: tuple[Synonym, ...]
    documentation: str
    config_type: int = CONFIG_TYPE_INT

    @property
    def is_default(self) -> bool:
        return self.source != ConfigSource.GROUP_CONFIG


def _broker_side(name: str, broker: ConsumerGroupConfig) -> tuple[Synonym, str, int]:
    """The broker-level synonym of a group config (its value in force and where that comes from),
    the config's documentation and its type."""
    if name in STORED_CONFIGS:
        stored = STORED_CONFIGS[name]
        synonym = Synonym(stored.synonym, stored.broker_value, ConfigSource.DEFAULT_CONFIG)
        return synonym, stored.documentation, CONFIG_TYPE_BOOLEAN
    d = GROUP_CONFIGS[name]
    value = getattr(broker, d.field)
    source = (
        ConfigSource.DEFAULT_CONFIG if value == getattr(_KAFKA_DEFAULTS, d.field) else ConfigSource.STATIC_BROKER_CONFIG
    )
    return Synonym(d.synonym, str(value), source), d.documentation, CONFIG_TYPE_INT


def describe(
    overrides: Mapping[str, str], broker: ConsumerGroupConfig, keys: Iterable[str] | None = None
) -> list[DescribedConfig]:
    """Every group config (or the named ones; unknown names are left out, as Kafka does) with its
    value and where it comes from; synonyms: the group's own value first, then the broker's."""
    wanted = None if keys is None else set(keys)
    out = []
    for name in [*GROUP_CONFIGS, *STORED_CONFIGS]:
        if wanted is not None and name not in wanted:
            continue
        in_force, documentation, config_type = _broker_side(name, broker)
        if name in overrides:
            own = Synonym(name, overrides[name], ConfigSource.GROUP_CONFIG)
            out.append(DescribedConfig(name, own.value, own.source, (own, in_force), documentation, config_type))
        else:
            # A group config never set shows the value in force, the broker's, as a default.
            out.append(
                DescribedConfig(
                    name, in_force.value, ConfigSource.DEFAULT_CONFIG, (in_force,), documentation, config_type
                )
            )
    return out
