"""How message classes describe their wire layout.

Every message and nested struct is a dataclass carrying a ``SCHEMA`` tuple of ``Field`` entries
in wire order. The layout facts (types, version ranges, nullability, tags) come from the published
Kafka message schemas; ``codec`` turns a schema plus a version into an encoder and a decoder.
"""

from __future__ import annotations

import base64
import functools
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

ANY_VERSION = 0x7FFF
ZERO_UUID = uuid.UUID(int=0)


def topic_id_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: url-safe base64 without padding, the form the log and the
    group logic keep topic ids in (the wire carries the 16 bytes)."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


# Memoized: an answer names the same few topic ids again and again, and a UUID costs ~2 us to
# make (describing a 5,000-member group of 10,000 partitions made 20,000 of them, a loop stall
# of ~50 ms; UUIDs are immutable, so one object serves every answer). Bounded, so ids from
# clients cannot grow it without limit.
@functools.lru_cache(maxsize=16384)
def topic_id_uuid(value: str) -> uuid.UUID:
    """The inverse of ``topic_id_string``."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))


def known_topic_id(value: uuid.UUID) -> str | None:
    """A wire topic id in the log's string form; ``None`` for the zero id (no id given)."""
    return None if value == ZERO_UUID else topic_id_string(value)


# Primitive kinds understood by the codec; anything else in ``Field.kind`` is "struct" or "array".
PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "float64", "string", "bytes", "uuid", "records"}
)


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``none()`` is empty."""

    low: int
    high: int = ANY_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @staticmethod
    def none() -> Versions:
        return Versions(1, 0)


NEVER = Versions.none()


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct.

    ``kind`` is a primitive name, ``"struct"`` (then ``struct`` names the class) or ``"array"``
    (then ``item`` is a primitive name or ``struct`` names the element class).
    """

    name: str
    kind: str
    versions: Versions
    nullable: Versions = NEVER
    tagged: Versions = NEVER
    tag: int = -1
    item: str = ""
    struct: type[Struct] | None = None
    default: Any = None


@dataclass(kw_only=True, slots=True)
class Struct:
    """Base of every generated message and nested struct.

    ``unknown_tagged_fields`` keeps tagged fields this codec does not know (tag -> raw bytes) so
    a decode/encode round trip never drops what a newer peer sent.
    """

    SCHEMA: ClassVar[tuple[Field, ...]] = ()
    unknown_tagged_fields: dict[int, bytes] = field(default_factory=dict, repr=False)


@dataclass(kw_only=True, slots=True)
class Message(Struct):
    """A top-level request or response body."""

    API_KEY: ClassVar[int] = -1
    VALID: ClassVar[Versions] = NEVER
    FLEXIBLE: ClassVar[Versions] = NEVER
