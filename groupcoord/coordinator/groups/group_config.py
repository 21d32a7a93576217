"""Per-group dynamic configs (KIP-848 group configs), as Apache Kafka 4.4's GroupConfig.

An operator sets them with IncrementalAlterConfigs on a GROUP resource; they override the
broker-level ``group.consumer.*`` values for one group. Kafka's consumer-group configs are
``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``,
``consumer.assignment.interval.ms`` and ``consumer.assignor.offload.enable`` (classic groups have
none). The first three are applied; ``consumer.assignor.offload.enable`` is validated, stored
and described as Kafka does, and changes nothing here: this coordinator runs the assignor in the
group's own step, which is what ``false`` means in Kafka.

Share groups (KIP-932) have Kafka 4.2's ``share.*`` configs: ``share.session.timeout.ms`` and
``share.heartbeat.interval.ms`` (applied by membership), ``share.record.lock.duration.ms``,
``share.auto.offset.reset`` and ``share.isolation.level``, and KIP-1240's (Kafka 4.3)
``share.delivery.count.limit`` and ``share.partition.max.record.locks`` (validated and stored, for
the share-partition data path, which reads them at each use: ``GroupCoordinatorShard.share_partition_config``), each
bounded by its ``group.share.*`` broker setting (``ShareGroupConfig``), and Kafka 4.3's
``share.renew.acknowledge.enable`` (a BOOLEAN, default true: false refuses RENEW acknowledgements
with INVALID_RECORD_STATE, as Kafka's SharePartition does). Configs for features this coordinator
does not have (``share.assignment.interval.ms``, ``share.assignor.offload.enable``) and streams groups'
(``streams.*``, ``errors.deadletterqueue.*``) are refused with INVALID_CONFIG and a message saying
so, rather than stored for groups that can never read them.

Pure: values in, values or ``GroupError(INVALID_CONFIG, ...)`` out. The messages are Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.config import ConsumerGroupConfig, ShareGroupConfig
from groupcoord.coordinator.share.auto_offset_reset import parse_reset
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import GroupConfigEntry, GroupConfigKey, GroupConfigValue

# ConfigResource.Type.GROUP on the wire.
GROUP_RESOURCE_TYPE = 32

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
ASSIGNOR_OFFLOAD = "consumer.assignor.offload.enable"

SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
SHARE_RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"

# DescribeConfigsResponse.ConfigType ids.
CONFIG_TYPE_BOOLEAN = 1
CONFIG_TYPE_STRING = 2
CONFIG_TYPE_INT = 3

# Kafka 4.4's group configs (GroupConfig) of streams groups and of share-group features this
# coordinator does not serve.
NOT_SERVED = frozenset(
    {
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
    # The field and its bounds are ShareGroupConfig's (a share.* config), not ConsumerGroupConfig's.
    share: bool = False


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
    SHARE_SESSION_TIMEOUT: GroupConfigDef(
        "group.share.session.timeout.ms",
        "session_timeout_ms",
        1,
        "min_session_timeout_ms",
        "max_session_timeout_ms",
        "The timeout to detect client failures when using the share group protocol.",
        share=True,
    ),
    SHARE_HEARTBEAT_INTERVAL: GroupConfigDef(
        "group.share.heartbeat.interval.ms",
        "heartbeat_interval_ms",
        1,
        "min_heartbeat_interval_ms",
        "max_heartbeat_interval_ms",
        "The heartbeat interval given to the members of a share group.",
        share=True,
    ),
    SHARE_RECORD_LOCK_DURATION: GroupConfigDef(
        "group.share.record.lock.duration.ms",
        "record_lock_duration_ms",
        1000,
        "min_record_lock_duration_ms",
        "max_record_lock_duration_ms",
        "How long a record acquired by a share group member stays locked to it.",
        share=True,
    ),
    SHARE_DELIVERY_COUNT_LIMIT: GroupConfigDef(
        "group.share.delivery.count.limit",
        "delivery_count_limit",
        2,
        "min_delivery_count_limit",
        "max_delivery_count_limit",
        "How many times a record of a share group is delivered before it is archived.",
        share=True,
    ),
    SHARE_PARTITION_MAX_RECORD_LOCKS: GroupConfigDef(
        "group.share.partition.max.record.locks",
        "partition_max_record_locks",
        100,
        "min_partition_max_record_locks",
        "max_partition_max_record_locks",
        "The most records of one share-partition acquired at once.",
        share=True,
    ),
}


@dataclass(frozen=True, slots=True)
class StringConfigDef:
    """A STRING group config: Kafka has no broker-level synonym for these, only a default."""

    field: str  # the ShareGroupConfig field holding its default
    documentation: str


STRING_CONFIGS: dict[str, StringConfigDef] = {
    SHARE_AUTO_OFFSET_RESET: StringConfigDef(
        "auto_offset_reset",
        "Where a share-partition starts: earliest, latest, or by_duration:<ISO-8601 duration> before now.",
    ),
    SHARE_ISOLATION_LEVEL: StringConfigDef(
        "isolation_level",
        "read_committed: only records of committed transactions are delivered; read_uncommitted: all records.",
    ),
}


# BOOLEAN share-group configs applied to the data path: like the STRING ones, no broker-level
# synonym in Kafka; the ShareGroupConfig field holds the default.
SHARE_BOOLEAN_CONFIGS: dict[str, StringConfigDef] = {
    SHARE_RENEW_ACKNOWLEDGE_ENABLE: StringConfigDef(
        "renew_acknowledge_enable",
        "Whether members of the share group may renew their record locks with the RENEW acknowledgement type.",
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
_KAFKA_SHARE_DEFAULTS = ShareGroupConfig()


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


def _known(name: str) -> bool:
    return name in GROUP_CONFIGS or name in STORED_CONFIGS or name in STRING_CONFIGS | SHARE_BOOLEAN_CONFIGS


def _check_name(name: str) -> None:
    if name in NOT_SERVED:
        raise _invalid(
            f"Group config {name} is for streams groups or a share-group feature, which this coordinator "
            "does not serve; set it on the cluster's own group coordinator."
        )
    if not _known(name):
        raise _invalid(f"Unknown group config name: {name}")


def _parse(name: str, value: str | None) -> str:
    """The value as stored: Kafka's parse of the config's type, or its message."""
    if name in STORED_CONFIGS or name in SHARE_BOOLEAN_CONFIGS:
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise _invalid(f"Invalid value {value} for configuration {name}: Expected value to be either true or false")
        return text
    if name in STRING_CONFIGS:
        return _parse_string(name, value)
    return str(_parse_int(name, value))


def _parse_string(name: str, value: str | None) -> str:
    # Kafka trims a string config and then compares it case-sensitively (ConfigDef.ValidString,
    # ShareGroupAutoOffsetResetStrategy): "EARLIEST" is refused there, so here too.
    text = str(value).strip()
    if name == SHARE_ISOLATION_LEVEL:
        if text not in ("read_committed", "read_uncommitted"):
            raise _invalid(
                f"Invalid value {text} for configuration {name}: String must be one of: read_committed, read_uncommitted"
            )
        return text
    try:
        return parse_reset(text)
    except ValueError as exc:
        raise _invalid(f"Invalid value {text} for configuration {name}: {exc}") from None


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


DEFAULT_SHARE = ShareGroupConfig()


def _broker_of(d: GroupConfigDef, broker: ConsumerGroupConfig, share: ShareGroupConfig) -> Any:
    return share if d.share else broker


def validate(
    overrides: Mapping[str, str], broker: ConsumerGroupConfig, share: ShareGroupConfig = DEFAULT_SHARE
) -> None:
    """A group's complete set of overrides against the broker-level bounds (Kafka's GroupConfig.validate).

    The names being set were checked by the caller (``_check_name``). A stored name this release
    does not know was written by a newer one (a rolling upgrade, or a rollback after it): it is
    kept as it is and not validated, as Kafka's ConfigDef ignores undefined keys, so it cannot
    make every later change of the group's configs fail."""
    parsed = {name: _parse_int(name, value) for name, value in overrides.items() if name in GROUP_CONFIGS}
    for name in overrides.keys() - parsed.keys():
        if _known(name):
            _parse(name, overrides[name])
    for name, value in parsed.items():
        d = GROUP_CONFIGS[name]
        source = _broker_of(d, broker, share)
        low, high = getattr(source, d.min_field), getattr(source, d.max_field)
        if not low <= value <= high:
            raise _invalid(f"{name} must be in the range {low} to {high} inclusive.")
    for session_name, heartbeat_name, source in (
        (SESSION_TIMEOUT, HEARTBEAT_INTERVAL, broker),
        (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL, share),
    ):
        if session_name in parsed or heartbeat_name in parsed:
            session = parsed.get(session_name, source.session_timeout_ms)
            heartbeat = parsed.get(heartbeat_name, source.heartbeat_interval_ms)
            if session <= heartbeat:
                raise _invalid(f"{session_name} must be greater than {heartbeat_name}")


@dataclass(frozen=True, slots=True)
class ConfigChange:
    name: str
    op: int
    value: str | None


def incremental_alter(
    current: Mapping[str, str],
    changes: Iterable[ConfigChange],
    broker: ConsumerGroupConfig,
    share: ShareGroupConfig = DEFAULT_SHARE,
) -> dict[str, str]:
    """The group's overrides after IncrementalAlterConfigs, validated as a whole."""
    out = dict(current)
    for change in changes:
        if not (change.op == ConfigOp.DELETE and change.name in current):  # a stored one may go, known or not
            _check_name(change.name)
        if change.op == ConfigOp.SET:
            if change.value is None:
                raise _invalid(f"Null value not supported for : {change.name}")
            out[change.name] = _parse(change.name, change.value)
        elif change.op == ConfigOp.DELETE:
            out.pop(change.name, None)
        elif change.op in (ConfigOp.APPEND, ConfigOp.SUBTRACT):
            # Group configs are INT, STRING or BOOLEAN, and only LIST configs take APPEND/SUBTRACT.
            verb = "append" if change.op == ConfigOp.APPEND else "subtract"
            raise _invalid(f"Config value {verb} is not allowed for config key: {change.name}")
        else:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {change.op} for {change.name}")
    validate(out, broker, share)
    return out


def replace_all(
    configs: Iterable[tuple[str, str | None]], broker: ConsumerGroupConfig, share: ShareGroupConfig = DEFAULT_SHARE
) -> dict[str, str]:
    """The group's overrides after the legacy AlterConfigs: exactly the given set."""
    out: dict[str, str] = {}
    for name, value in configs:
        _check_name(name)
        if value is None:
            raise _invalid(f"Null value not supported for : {name}")
        out[name] = _parse(name, value)
    validate(out, broker, share)
    return out


def effective(broker: ConsumerGroupConfig, overrides: Mapping[str, str] | None) -> ConsumerGroupConfig:
    """The consumer-group config one group runs with: the broker's, with the group's overrides.

    Overrides were validated when set; if the broker bounds have narrowed since, a value is
    capped to the new bounds, as Kafka's GroupConfig.evaluate does. Should capping leave the
    session timeout not above the heartbeat interval (overlapping broker bounds), the broker's
    own values are used."""
    return _effective(broker, overrides, share=False)


def effective_share(broker: ShareGroupConfig, overrides: Mapping[str, str] | None) -> ShareGroupConfig:
    """The share-group config one group runs with, by the rules of ``effective``."""
    return _effective(broker, overrides, share=True)


def _effective(broker: Any, overrides: Mapping[str, str] | None, share: bool) -> Any:
    if not overrides:
        return broker
    values: dict[str, Any] = {}
    for name, d in GROUP_CONFIGS.items():
        if d.share == share and name in overrides:
            low, high = getattr(broker, d.min_field), getattr(broker, d.max_field)
            values[d.field] = min(max(int(overrides[name]), low), high)
    if share:
        for name, sd in STRING_CONFIGS.items():
            if name in overrides:
                values[sd.field] = overrides[name]
        for name, sd in SHARE_BOOLEAN_CONFIGS.items():
            if name in overrides:
                values[sd.field] = overrides[name] == "true"
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


def _broker_side(name: str, broker: ConsumerGroupConfig, share: ShareGroupConfig) -> tuple[Synonym, str, int]:
    """The broker-level synonym of a group config (its value in force and where that comes from),
    the config's documentation and its type. A STRING config has no broker-level synonym: the
    value in force is its default, named by the config's own name."""
    if name in STORED_CONFIGS:
        stored = STORED_CONFIGS[name]
        synonym = Synonym(stored.synonym, stored.broker_value, ConfigSource.DEFAULT_CONFIG)
        return synonym, stored.documentation, CONFIG_TYPE_BOOLEAN
    if name in STRING_CONFIGS:
        sd = STRING_CONFIGS[name]
        return (
            Synonym(name, getattr(share, sd.field), ConfigSource.DEFAULT_CONFIG),
            sd.documentation,
            CONFIG_TYPE_STRING,
        )
    if name in SHARE_BOOLEAN_CONFIGS:
        sd = SHARE_BOOLEAN_CONFIGS[name]
        default = "true" if getattr(share, sd.field) else "false"
        return Synonym(name, default, ConfigSource.DEFAULT_CONFIG), sd.documentation, CONFIG_TYPE_BOOLEAN
    d = GROUP_CONFIGS[name]
    value = getattr(_broker_of(d, broker, share), d.field)
    defaults = _KAFKA_SHARE_DEFAULTS if d.share else _KAFKA_DEFAULTS
    source = ConfigSource.DEFAULT_CONFIG if value == getattr(defaults, d.field) else ConfigSource.STATIC_BROKER_CONFIG
    return Synonym(d.synonym, str(value), source), d.documentation, CONFIG_TYPE_INT


def describe(
    overrides: Mapping[str, str],
    broker: ConsumerGroupConfig,
    keys: Iterable[str] | None = None,
    share: ShareGroupConfig = DEFAULT_SHARE,
) -> list[DescribedConfig]:
    """Every group config (or the named ones; unknown names are left out, as Kafka does) with its
    value and where it comes from; synonyms: the group's own value first, then the broker's."""
    wanted = None if keys is None else set(keys)
    out = []
    for name in [*GROUP_CONFIGS, *STORED_CONFIGS, *STRING_CONFIGS, *SHARE_BOOLEAN_CONFIGS]:
        if wanted is not None and name not in wanted:
            continue
        in_force, documentation, config_type = _broker_side(name, broker, share)
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
