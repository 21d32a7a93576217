"""The coordinator's log topic is the sidecar's alone: clients through the gateway cannot touch it.

Which forwarded requests name a protected topic (by name or by topic id) is found cheaply:
Produce is parsed to its topic names (its record data could contain anything); every other
forwarded request carries only names, ids and numbers, so the encoded forms of the protected
names (classic and compact strings) and ids are searched for in its bytes. Such a request gets
TOPIC_AUTHORIZATION_FAILED in the topic's slots and the rest is served (``topic_split``), or,
for APIs not split there, the connection is closed. Metadata answers are rewritten instead: the
topic is left out of an all-topics answer and refused with TOPIC_AUTHORIZATION_FAILED when named,
as Kafka answers a caller without DESCRIBE.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable

from coordinator.gateway.codec import CodecError, read_uvarint, write_uvarint
from coordinator.gateway.framing import decode_request_header
from coordinator.messages.metadata import MetadataResponse, MetadataResponseTopic

TOPIC_AUTHORIZATION_FAILED = 29
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class ProtectedTopics:
    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: set[str] = set(names)
        self.ids: set[uuid.UUID] = set()
        self._needles: list[bytes] = []
        self._rebuild()

    def add_id(self, topic_id: uuid.UUID) -> None:
        if topic_id.int != 0 and topic_id not in self.ids:
            self.ids.add(topic_id)
            self._rebuild()

    def _rebuild(self) -> None:
        needles = []
        for name in self.names:
            raw = name.encode("utf-8")
            needles.append(_I16.pack(len(raw)) + raw)
            compact = bytearray()
            write_uvarint(compact, len(raw) + 1)
            needles.append(bytes(compact) + raw)
        needles.extend(t.bytes for t in self.ids)
        self._needles = needles

    def __bool__(self) -> bool:
        return bool(self.names)

    def is_protected(self, name: str, topic_id: uuid.UUID) -> bool:
        return name in self.names or (topic_id.int != 0 and topic_id in self.ids)

    def mentioned_in(self, payload: bytes | bytearray) -> bool:
        """Whether a forwarded request (not Produce) names a protected topic anywhere."""
        return any(needle in payload for needle in self._needles)

    def in_produce(self, payload: bytes | bytearray, version: int) -> bool:
        try:
            names, ids = produce_topics(payload, version)
        except (CodecError, struct.error, IndexError) as exc:
            raise CodecError(f"malformed Produce v{version}: {exc}") from exc
        return any(n in self.names for n in names) or any(i in self.ids for i in ids)

    def filter_metadata(self, named: bool, response: MetadataResponse) -> None:
        """``named``: the request listed topics (rather than asking for all of them)."""
        kept: list[MetadataResponseTopic] = []
        for topic in response.topics:
            if topic.name in self.names or topic.topic_id in self.ids:
                self.add_id(topic.topic_id)
                if named:
                    kept.append(
                        MetadataResponseTopic(
                            error_code=TOPIC_AUTHORIZATION_FAILED, name=topic.name, topic_id=topic.topic_id
                        )
                    )
                continue
            kept.append(topic)
        response.topics = kept


def produce_topics(payload: bytes | bytearray, version: int) -> tuple[list[str], list[uuid.UUID]]:
    """Topic names (and, from v13, topic ids) a Produce request writes to; record data is skipped."""
    buf = memoryview(payload)
    flexible = version >= 9
    _, pos = decode_request_header(buf, 2 if flexible else 1)
    if version >= 3:
        _, pos = _skip_string(buf, pos, flexible)
    pos += 2 + 4  # acks, timeout
    count, pos = _array_len(buf, pos, flexible)
    names: list[str] = []
    ids: list[uuid.UUID] = []
    for _ in range(count):
        if version >= 13:
            ids.append(uuid.UUID(bytes=bytes(buf[pos : pos + 16])))
            pos += 16
        else:
            name, pos = _skip_string(buf, pos, flexible)
            names.append(name)
        partitions, pos = _array_len(buf, pos, flexible)
        for _ in range(partitions):
            pos += 4  # partition index
            pos = _skip_bytes(buf, pos, flexible)
            if flexible:
                pos = _skip_tags(buf, pos)
        if flexible:
            pos = _skip_tags(buf, pos)
    return names, ids


def _array_len(buf: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return max(n - 1, 0), pos
    return max(int(_I32.unpack_from(buf, pos)[0]), 0), pos + 4


def _skip_string(buf: memoryview, pos: int, flexible: bool) -> tuple[str, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        n = int(_I16.unpack_from(buf, pos)[0])
        pos += 2
    if n < 0:
        return "", pos
    if pos + n > len(buf):
        raise CodecError("truncated string")
    return bytes(buf[pos : pos + n]).decode("utf-8", "replace"), pos + n


def _skip_bytes(buf: memoryview, pos: int, flexible: bool) -> int:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        n = int(_I32.unpack_from(buf, pos)[0])
        pos += 4
    if n > 0:
        if pos + n > len(buf):
            raise CodecError("truncated records")
        pos += n
    return pos


def _skip_tags(buf: memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    return pos
