"""The broker-level consumer group settings (``group`` in serve's settings): a bad value is refused
with the Kafka property an operator set and its value (found by an operator probe: "session timeout
outside [min, max]", and "invalid literal for int() with base 10: '30s'" naming no key)."""

import pytest

from groupcoord.coordinator.groups.config import ConsumerGroupConfig


@pytest.mark.parametrize(
    ("props", "said"),
    [
        (
            {"group.consumer.session.timeout.ms": "10"},
            "group.consumer.session.timeout.ms=10 is outside [group.consumer.min.session.timeout.ms=45000, "
            "group.consumer.max.session.timeout.ms=60000]",
        ),
        (
            {"group.consumer.min.session.timeout.ms": "70000"},
            "group.consumer.min.session.timeout.ms=70000 is above group.consumer.max.session.timeout.ms=60000",
        ),
        (
            {"group.consumer.heartbeat.interval.ms": "20000"},
            "group.consumer.heartbeat.interval.ms=20000 is outside [group.consumer.min.heartbeat.interval.ms=5000, "
            "group.consumer.max.heartbeat.interval.ms=15000]",
        ),
        (
            {
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.session.timeout.ms": "2000",
                "group.consumer.min.heartbeat.interval.ms": "1000",
                "group.consumer.heartbeat.interval.ms": "5000",
            },
            "group.consumer.heartbeat.interval.ms=5000 must be below group.consumer.session.timeout.ms=2000",
        ),
        (
            {"group.consumer.session.timeout.ms": "30s"},
            "group.consumer.session.timeout.ms='30s' is not a whole number",
        ),
    ],
)
def test_a_bad_setting_is_named_with_its_value(props: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError) as refused:
        ConsumerGroupConfig.from_properties(props)
    assert said in str(refused.value)
