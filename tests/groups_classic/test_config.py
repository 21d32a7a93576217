"""ClassicGroupConfig: Kafka's names and defaults."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.groups.classic import ClassicGroupConfig


def test_defaults_are_kafkas() -> None:
    c = ClassicGroupConfig()
    assert (c.min_session_timeout_ms, c.max_session_timeout_ms) == (6000, 1800000)
    assert c.initial_rebalance_delay_ms == 3000 and c.max_size == 2**31 - 1


def test_from_properties() -> None:
    c = ClassicGroupConfig.from_properties(
        {"group.max.size": "5", "group.initial.rebalance.delay.ms": 0, "group.consumer.max.size": 1}
    )
    assert c.max_size == 5 and c.initial_rebalance_delay_ms == 0


@pytest.mark.parametrize(
    "kwargs",
    [{"max_size": 0}, {"min_session_timeout_ms": 10, "max_session_timeout_ms": 5}, {"initial_rebalance_delay_ms": -1}],
)
def test_invalid(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ClassicGroupConfig(**kwargs)
