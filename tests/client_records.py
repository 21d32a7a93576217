"""Records through confluent-kafka, typed. A consumed ``Message`` has an optional value, offset,
partition and delivery count (an error event has none of them), while a record a test consumed
without error, from a producer that gave every record a value, has them all: asserted here. And
``produce`` takes headers as a list invariant in the header value, which ``make_headers`` is not."""

from __future__ import annotations

from typing import Any, TypeVar

from confluent_kafka import Message

from groupcoord.coordinator.runtime.headers import make_headers

T = TypeVar("T")


def log_headers(epoch: int, index: int, count: int) -> list[tuple[str, str | bytes | None]]:
    """``make_headers``, as ``Producer.produce`` takes headers."""
    return list(make_headers(epoch, index, count))


def value_of(message: Message[Any, Any]) -> bytes:
    return _present(message.value(), "value", message)


def offset_of(message: Message[Any, Any]) -> int:
    return _present(message.offset(), "offset", message)


def partition_of(message: Message[Any, Any]) -> int:
    return _present(message.partition(), "partition", message)


def delivery_count_of(message: Message[Any, Any]) -> int:
    """A share consumer's record: how many times it was delivered."""
    return _present(message.delivery_count(), "delivery count", message)


def _present(part: T | None, what: str, message: Message[Any, Any]) -> T:
    where = f"{message.topic()}[{message.partition()}]@{message.offset()}"
    assert part is not None, f"no {what}: {where}, error {message.error()}"
    return part
