"""``share.auto.offset.reset`` as Kafka 4.2 reads it: ``earliest``, ``latest`` or
``by_duration:<ISO-8601 duration>`` (Kafka's ``ShareGroupAutoOffsetResetStrategy``).

The names are case-sensitive, as Kafka's validator compares them; the duration is read as Java's
``Duration.parse`` reads it (``PnDTnHnMn.nS``, letters in either case, signs allowed on every part,
negative in total refused). The same reading serves the CLI's ``--by-duration``, which
kafka-share-groups.sh and kafka-consumer-groups.sh also read with ``Duration.parse``.
"""

from __future__ import annotations

import re

EARLIEST, LATEST, BY_DURATION = "earliest", "latest", "by_duration"

# java.time.Duration's pattern: sign, days, and a T part of hours, minutes and seconds with up to
# nine fraction digits.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)
_MAX_SECONDS = 2**63 - 1  # a Duration holds its seconds in a long


def parse_duration_ms(text: str) -> int:
    """The duration in whole milliseconds (rounded down, as ``Duration.toMillis``); ValueError for
    what ``Duration.parse`` refuses (no part, a bare ``T``, out of range)."""
    m = _DURATION.fullmatch(text)
    if m is None or (m.group(3) is not None and len(m.group(3)) == 1):
        raise ValueError(f"cannot parse duration {text!r}")
    sign, days, hours, minutes, seconds, fraction = m.group(1, 2, 4, 5, 6, 7)
    if days is None and hours is None and minutes is None and seconds is None:
        raise ValueError(f"cannot parse duration {text!r}")
    whole = int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60 + int(seconds or 0)
    nanos = int((fraction or "").ljust(9, "0") or 0)
    if seconds is not None and seconds.startswith("-"):
        nanos = -nanos  # "-0.5S" is minus half a second
    total = whole * 1_000_000_000 + nanos
    if sign == "-":
        total = -total
    if abs(total) // 1_000_000_000 > _MAX_SECONDS:
        raise ValueError(f"duration {text!r} is out of range")
    return total // 1_000_000


def parse_reset(value: str) -> str:
    """The value as Kafka stores it (trimmed, as every string config is); ValueError with Kafka's
    message otherwise."""
    text = value.strip()
    if text in (EARLIEST, LATEST):
        return text
    if text.startswith(BY_DURATION + ":"):
        try:
            if parse_duration_ms(text[len(BY_DURATION) + 1 :]) >= 0:
                return text
        except ValueError:
            pass
    raise ValueError(
        f"Invalid value `{text}` for configuration share.auto.offset.reset. The value must be either "
        "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    )


def reset_timestamp(reset: str, now_ms: int) -> int | None:
    """For ``by_duration:``, the timestamp whose first record a new share-partition starts at (the
    caller looks its offset up); None for ``earliest`` and ``latest``. A duration reaching back
    past 1970 starts at the first record (timestamp 0): Kafka accepts such a value (its validator
    refuses only a negative one) and then fails on it at use; a ListOffsets of the negative
    timestamp would ask for something else (-1 and -2 name the latest and the earliest offsets)
    or not be encodable at all, leaving the share-partition unread."""
    if not reset.startswith(BY_DURATION + ":"):
        return None
    return max(0, now_ms - parse_duration_ms(reset[len(BY_DURATION) + 1 :]))
