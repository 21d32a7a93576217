"""``group.consumer.*``, ``group.share.*`` and the classic protocol's ``group.*`` configuration, with Apache Kafka's
names, defaults and bounds (seed 004, configuration reference)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

INT_MAX = 2**31 - 1

# Kafka property name -> field name.
PROPERTY_NAMES: dict[str, str] = {
    "group.consumer.session.timeout.ms": "session_timeout_ms",
    "group.consumer.min.session.timeout.ms": "min_session_timeout_ms",
    "group.consumer.max.session.timeout.ms": "max_session_timeout_ms",
    "group.consumer.heartbeat.interval.ms": "heartbeat_interval_ms",
    "group.consumer.min.heartbeat.interval.ms": "min_heartbeat_interval_ms",
    "group.consumer.max.heartbeat.interval.ms": "max_heartbeat_interval_ms",
    "group.consumer.max.size": "max_size",
    "group.consumer.assignors": "assignors",
    "group.consumer.assignment.interval.ms": "assignment_interval_ms",
    "group.consumer.min.assignment.interval.ms": "min_assignment_interval_ms",
    "group.consumer.max.assignment.interval.ms": "max_assignment_interval_ms",
    "group.consumer.regex.refresh.interval.ms": "regex_refresh_interval_ms",
    "group.consumer.migration.policy": "migration_policy",
}

_PROPERTY_OF = {name: key for key, name in PROPERTY_NAMES.items()}

KNOWN_ASSIGNORS = ("uniform", "range")
# group.consumer.migration.policy (Kafka's ConsumerGroupMigrationPolicy): which online conversions
# of a non-empty group between the classic and the consumer protocol are allowed.
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45000
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    heartbeat_interval_ms: int = 5000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000
    max_size: int = INT_MAX
    # The first assignor is the default when no member asks for one.
    assignors: tuple[str, ...] = ("uniform", "range")
    assignment_interval_ms: int = 1000
    # Bounds of a group's own consumer.assignment.interval.ms (group configs).
    min_assignment_interval_ms: int = 0
    max_assignment_interval_ms: int = 15000
    regex_refresh_interval_ms: int = 600000
    migration_policy: str = "bidirectional"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int) and not isinstance(value, bool):
                floor = 0 if f.name in ("assignment_interval_ms", "min_assignment_interval_ms") else 1
                if not floor <= value <= INT_MAX:
                    raise ValueError(f"{f.name}={value} out of range [{floor}, {INT_MAX}]")
        # The messages name Kafka's properties and their values: what an operator set.
        _require(
            self.min_session_timeout_ms <= self.max_session_timeout_ms,
            f"{self._said('min_session_timeout_ms')} is above {self._said('max_session_timeout_ms')}",
        )
        _require(
            self.min_session_timeout_ms <= self.session_timeout_ms <= self.max_session_timeout_ms,
            f"{self._said('session_timeout_ms')} is outside [{self._said('min_session_timeout_ms')}, "
            f"{self._said('max_session_timeout_ms')}]",
        )
        _require(
            self.min_heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
            f"{self._said('min_heartbeat_interval_ms')} is above {self._said('max_heartbeat_interval_ms')}",
        )
        _require(
            self.min_heartbeat_interval_ms <= self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
            f"{self._said('heartbeat_interval_ms')} is outside [{self._said('min_heartbeat_interval_ms')}, "
            f"{self._said('max_heartbeat_interval_ms')}]",
        )
        _require(
            self.heartbeat_interval_ms < self.session_timeout_ms,
            f"{self._said('heartbeat_interval_ms')} must be below {self._said('session_timeout_ms')}",
        )
        _require(len(self.assignors) > 0, "at least one assignor is required")
        _require(len(set(self.assignors)) == len(self.assignors), "duplicate assignor")
        unknown = [a for a in self.assignors if a not in KNOWN_ASSIGNORS]
        _require(not unknown, f"unknown assignors {unknown}")
        _require(
            self.migration_policy in MIGRATION_POLICIES,
            f"migration_policy={self.migration_policy!r} is not one of {', '.join(MIGRATION_POLICIES)}",
        )

    def _said(self, name: str) -> str:
        """``name`` as an operator sets it: its Kafka property, and its value."""
        return f"{_PROPERTY_OF[name]}={getattr(self, name)}"

    @property
    def upgrade_enabled(self) -> bool:
        """A non-empty classic group may become a consumer group (ConsumerGroupMigrationPolicy)."""
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        """A non-empty consumer group may become a classic group again."""
        return self.migration_policy in ("bidirectional", "downgrade")

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ConsumerGroupConfig:
        """Build from Kafka-style properties (``group.consumer.session.timeout.ms`` = ``45000`` ...)."""
        kwargs: dict[str, Any] = {}
        for key, raw in props.items():
            name = PROPERTY_NAMES.get(key)
            if name is None:
                continue
            if name == "assignors":
                items = raw.split(",") if isinstance(raw, str) else list(raw)
                kwargs[name] = tuple(a.strip() for a in items if a.strip())
            elif name == "migration_policy":
                # Kafka parses the policy case-insensitively.
                kwargs[name] = str(raw).strip().lower()
            else:
                try:
                    kwargs[name] = int(raw)
                except ValueError:
                    raise ValueError(f"{key}={raw!r} is not a whole number (of milliseconds or members)") from None
        return cls(**kwargs)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


# Classic-protocol broker settings (group.*), Kafka property name -> field name.
CLASSIC_PROPERTY_NAMES: dict[str, str] = {
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "group.max.size": "max_size",
}


@dataclass(frozen=True, slots=True)
class ClassicGroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = INT_MAX
    # Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a new member parked in a join
    # cannot heartbeat, so this bounds how long a vanished one can hold the barrier open.
    new_member_join_timeout_ms: int = 300000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            floor = 0 if f.name == "initial_rebalance_delay_ms" else 1
            if not floor <= value <= INT_MAX:
                raise ValueError(f"{f.name}={value} out of range [{floor}, {INT_MAX}]")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ClassicGroupConfig:
        """Build from Kafka-style properties (``group.max.size`` = ``100`` ...); other keys are ignored."""
        kwargs = {CLASSIC_PROPERTY_NAMES[key]: int(raw) for key, raw in props.items() if key in CLASSIC_PROPERTY_NAMES}
        return cls(**kwargs)


# Share-group broker settings (KIP-932: GroupCoordinatorConfig and ShareGroupConfig), Kafka
# property name -> field name.
SHARE_PROPERTY_NAMES: dict[str, str] = {
    "group.share.session.timeout.ms": "session_timeout_ms",
    "group.share.min.session.timeout.ms": "min_session_timeout_ms",
    "group.share.max.session.timeout.ms": "max_session_timeout_ms",
    "group.share.heartbeat.interval.ms": "heartbeat_interval_ms",
    "group.share.min.heartbeat.interval.ms": "min_heartbeat_interval_ms",
    "group.share.max.heartbeat.interval.ms": "max_heartbeat_interval_ms",
    "group.share.max.size": "max_size",
    "group.share.record.lock.duration.ms": "record_lock_duration_ms",
    "group.share.min.record.lock.duration.ms": "min_record_lock_duration_ms",
    "group.share.max.record.lock.duration.ms": "max_record_lock_duration_ms",
    "group.share.delivery.count.limit": "delivery_count_limit",
    "group.share.min.delivery.count.limit": "min_delivery_count_limit",
    "group.share.max.delivery.count.limit": "max_delivery_count_limit",
    "group.share.partition.max.record.locks": "partition_max_record_locks",
    "group.share.min.partition.max.record.locks": "min_partition_max_record_locks",
    "group.share.max.partition.max.record.locks": "max_partition_max_record_locks",
}

# (value, min, max) field triples of ShareGroupConfig, checked alike.
_SHARE_BOUNDED = (
    ("session_timeout_ms", "min_session_timeout_ms", "max_session_timeout_ms"),
    ("heartbeat_interval_ms", "min_heartbeat_interval_ms", "max_heartbeat_interval_ms"),
    ("record_lock_duration_ms", "min_record_lock_duration_ms", "max_record_lock_duration_ms"),
    ("delivery_count_limit", "min_delivery_count_limit", "max_delivery_count_limit"),
    ("partition_max_record_locks", "min_partition_max_record_locks", "max_partition_max_record_locks"),
)


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    """Broker-level share-group settings, Kafka's defaults. The group-level ``share.*`` configs
    (``group_config``) override the first of each bounded triple, within its bounds. Record locks
    and delivery counts are read by the share-partition data path, not by membership."""

    session_timeout_ms: int = 45000
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    heartbeat_interval_ms: int = 5000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000
    max_size: int = 200
    record_lock_duration_ms: int = 30000
    min_record_lock_duration_ms: int = 15000
    max_record_lock_duration_ms: int = 60000
    delivery_count_limit: int = 5
    min_delivery_count_limit: int = 2
    max_delivery_count_limit: int = 10
    partition_max_record_locks: int = 2000
    min_partition_max_record_locks: int = 100
    max_partition_max_record_locks: int = 10000
    # Group-level STRING configs have no broker-level setting in Kafka; their defaults.
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    # share.renew.acknowledge.enable (Kafka 4.3, KIP-1222's RENEW): a group-level BOOLEAN with no
    # broker-level setting either; on by default.
    renew_acknowledge_enable: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is int and not 1 <= value <= INT_MAX:
                raise ValueError(f"{f.name}={value} out of range [1, {INT_MAX}]")
        for value, low, high in _SHARE_BOUNDED:
            _require(
                getattr(self, low) <= getattr(self, value) <= getattr(self, high),
                f"share {value} outside [{low}, {high}]",
            )
        _require(
            self.heartbeat_interval_ms < self.session_timeout_ms,
            "share heartbeat interval must be below share session timeout",
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> ShareGroupConfig:
        """Build from Kafka-style properties (``group.share.session.timeout.ms`` ...); other keys are ignored."""
        kwargs: dict[str, Any] = {
            SHARE_PROPERTY_NAMES[k]: int(raw) for k, raw in props.items() if k in SHARE_PROPERTY_NAMES
        }
        return cls(**kwargs)
