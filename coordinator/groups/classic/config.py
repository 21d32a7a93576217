"""Classic-protocol broker settings with Apache Kafka's names and defaults (seed 004, configuration reference)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

INT_MAX = 2**31 - 1

# Kafka property name -> field name.
PROPERTY_NAMES: dict[str, str] = {
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
        kwargs = {PROPERTY_NAMES[key]: int(raw) for key, raw in props.items() if key in PROPERTY_NAMES}
        return cls(**kwargs)
