"""``share.auto.offset.reset`` read as Kafka 4.2 reads it (ShareGroupAutoOffsetResetStrategy over
Java's Duration.parse), and the timestamp a ``by_duration:`` reset starts from."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.share.auto_offset_reset import parse_duration_ms, parse_reset, reset_timestamp


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H30M", 5_400_000),
        ("pt1h", 3_600_000),  # Duration.parse ignores case
        ("P1D", 86_400_000),
        ("P1DT2H", 93_600_000),
        ("PT0.5S", 500),
        ("PT1,25S", 1_250),
        ("PT-0.5S", -500),  # the fraction takes the seconds' sign
        ("P-1DT25H", 3_600_000),  # each part has its own sign; the total counts
        ("-PT1M", -60_000),
        ("PT0S", 0),
        ("PT0.0009S", 0),  # whole milliseconds, rounded down as Duration.toMillis
    ],
)
def test_durations_as_java_reads_them(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    "text", ["", "P", "PT", "P1DT", "1h", "PT1H ", " PT1H", "P1W", "P1M", "PT1.1234567891S", "P1H"]
)
def test_what_java_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration_ms(text)


def test_reset_values_as_kafka_validates_them() -> None:
    assert parse_reset(" latest ") == "latest"
    assert parse_reset("by_duration:PT1H30M") == "by_duration:PT1H30M"
    assert parse_reset("by_duration:pt0s") == "by_duration:pt0s"
    for bad in (
        "Earliest",
        "LATEST",
        "by_duration",
        "by_duration:",
        "BY_DURATION:PT1H",
        "by_duration: PT1H",
        "by_duration:-PT1S",
        "by_duration:PT-1S",
        "by_duration:1h",
        "none",
    ):
        with pytest.raises(ValueError) as caught:
            parse_reset(bad)
        assert str(caught.value) == (
            f"Invalid value `{bad.strip()}` for configuration share.auto.offset.reset. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
        )


def test_reset_timestamp() -> None:
    assert reset_timestamp("by_duration:PT1M", 1_000_000) == 940_000
    assert reset_timestamp("latest", 1_000_000) is None and reset_timestamp("earliest", 5) is None


@pytest.mark.parametrize("duration", ["P30000D", "PT9223372036854775807S", "P99999999999999D"])
def test_a_duration_reaching_past_1970_starts_at_the_first_record(duration: str) -> None:
    # Accepted (as Kafka accepts it), then looked up as timestamp 0: a negative one is not a time
    # to ListOffsets (-1/-2 mean latest/earliest) and one past 64 bits is not encodable at all.
    assert parse_reset(f"by_duration:{duration}") == f"by_duration:{duration}"
    assert reset_timestamp(f"by_duration:{duration}", 1_764_000_000_000) == 0
