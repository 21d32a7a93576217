"""The consumer protocol's embedded Subscription and Assignment (ConsumerProtocolSubscription /
ConsumerProtocolAssignment, versions 0-3): the opaque bytes classic consumers put in JoinGroup
metadata and SyncGroup assignments.

The coordinator itself only needs the subscribed topics (for offset retention), but tests and
tools build and read both. Encoding is Kafka's non-flexible format: a big-endian int16 version,
then the fields; a newer version than we know is read with the newest format we know, which is
how Kafka keeps older brokers compatible (new versions only append fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

CONSUMER_PROTOCOL_TYPE = "consumer"
LATEST_SUBSCRIPTION_VERSION = 3
LATEST_ASSIGNMENT_VERSION = 3


class ConsumerProtocolError(ValueError):
    """The bytes are not a consumer-protocol message."""


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True)
class Assignment:
    assigned_partitions: tuple[TopicPartitions, ...] = field(default_factory=tuple)
    user_data: bytes | None = None


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def string(self, s: str | None) -> None:
        if s is None:
            self.int16(-1)
            return
        data = s.encode()
        self.int16(len(data))
        self.parts.append(data)

    def bytes_(self, b: bytes | None) -> None:
        if b is None:
            self.int32(-1)
            return
        self.int32(len(b))
        self.parts.append(b)

    def topic_partitions(self, items: tuple[TopicPartitions, ...]) -> None:
        self.int32(len(items))
        for tp in items:
            self.string(tp.topic)
            self.int32(len(tp.partitions))
            for p in tp.partitions:
                self.int32(p)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ConsumerProtocolError("truncated consumer protocol message")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError("string is not UTF-8") from exc

    def required_string(self) -> str:
        s = self.string()
        if s is None:
            raise ConsumerProtocolError("null where a string is required")
        return s

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n == -1 else self._take(n)

    def array_len(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data):
            raise ConsumerProtocolError(f"bad array length {n}")
        return n

    def topic_partitions(self) -> tuple[TopicPartitions, ...]:
        out = []
        for _ in range(self.array_len()):
            topic = self.required_string()
            partitions = tuple(self.int32() for _ in range(self.array_len()))
            out.append(TopicPartitions(topic, partitions))
        return tuple(out)


def encode_subscription(sub: Subscription, version: int = LATEST_SUBSCRIPTION_VERSION) -> bytes:
    w = _Writer()
    w.int16(version)
    w.int32(len(sub.topics))
    for t in sub.topics:
        w.string(t)
    w.bytes_(sub.user_data)
    if version >= 1:
        w.topic_partitions(sub.owned_partitions)
    if version >= 2:
        w.int32(sub.generation_id)
    if version >= 3:
        w.string(sub.rack_id)
    return w.getvalue()


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ConsumerProtocolError(f"bad subscription version {version}")
    topics = tuple(r.required_string() for _ in range(r.array_len()))
    user_data = r.bytes_()
    owned = r.topic_partitions() if version >= 1 else ()
    generation_id = r.int32() if version >= 2 else -1
    rack_id = r.string() if version >= 3 else None
    return Subscription(topics, user_data, owned, generation_id, rack_id)


def subscribed_topics(data: bytes) -> tuple[str, ...]:
    """Only the topics: version 0 is a prefix of every version, so this reads any of them."""
    r = _Reader(data)
    if r.int16() < 0:
        raise ConsumerProtocolError("bad subscription version")
    return tuple(r.required_string() for _ in range(r.array_len()))


def encode_assignment(assignment: Assignment, version: int = LATEST_ASSIGNMENT_VERSION) -> bytes:
    w = _Writer()
    w.int16(version)
    w.topic_partitions(assignment.assigned_partitions)
    w.bytes_(assignment.user_data)
    return w.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data)
    if r.int16() < 0:
        raise ConsumerProtocolError("bad assignment version")
    partitions = r.topic_partitions()
    return Assignment(partitions, r.bytes_())
