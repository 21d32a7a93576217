"""The sidecar's own topics (its log and directory topics) are its alone: clients through the gateway
cannot touch them.

Which forwarded requests name a protected topic (by name or by topic id) is decided on the request
as the broker reads it, decoded (``named_topics`` says which fields name topics in each API; Produce
is parsed to its topic names, its record data skipped). Never on raw bytes: one name has more than
one encoding, and a request the gateway cannot decode is refused rather than forwarded unread. Such
a request gets TOPIC_AUTHORIZATION_FAILED in the topic's slots and the rest is served
(``topic_split``), or, for APIs not split there, the connection is closed. Metadata answers are
rewritten instead: the topic is left out of an all-topics answer and refused with
TOPIC_AUTHORIZATION_FAILED when named, as Kafka answers a caller without DESCRIBE.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from groupcoord.coordinator.gateway import named_topics
from groupcoord.coordinator.gateway.apis import APIS
from groupcoord.coordinator.gateway.codec import (
    CodecError,
    check_array_count,
    decode_struct,
    read_tag_count,
    read_uvarint,
)
from groupcoord.coordinator.gateway.framing import decode_request_header
from groupcoord.coordinator.gateway.scan import scan
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseTopic
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message

TOPIC_AUTHORIZATION_FAILED = 29
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
T = TypeVar("T")


_METADATA = named_topics.Decoded(MetadataRequest, (("topics", "name"), ("topics", "topic_id")))


class NotForwardable(Exception):
    """A request the gateway will not forward: an API it does not offer, or one it cannot read."""


class ProtectedTopics:
    def __init__(self, names: Iterable[str] = (), groups: Iterable[str] = ()) -> None:
        self.names: set[str] = set(names)
        self.ids: set[uuid.UUID] = set()
        # Groups of the sidecar's own (placement): out of reach through ACL requests too.
        self.groups: set[str] = set(groups)

    def add_id(self, topic_id: uuid.UUID) -> None:
        if topic_id.int != 0:
            self.ids.add(topic_id)

    def __bool__(self) -> bool:
        return bool(self.names)

    def is_protected(self, name: str, topic_id: uuid.UUID) -> bool:
        return name in self.names or (topic_id.int != 0 and topic_id in self.ids)

    def _named(self, item: object) -> bool:
        return item in self.names if isinstance(item, str) else item in self.ids

    def in_request(self, payload: bytes | bytearray, key: int, version: int) -> bool:
        """Whether a forwarded request (not Produce, Metadata or a group API) names a protected
        topic; ``NotForwardable`` when it is no API the gateway forwards, or does not decode."""
        if key in named_topics.NAMES_NO_TOPIC:
            return False
        if key in named_topics.CONFIGS:
            request = _decode(APIS[key].request, payload, key, version)
            return any(
                r.resource_type == named_topics.TOPIC_RESOURCE and r.resource_name in self.names
                for r in request.resources  # type: ignore[attr-defined]
            )
        acl = named_topics.ACLS.get(key)
        if acl is not None:
            return named_topics.acl_reaches(_decode(acl, payload, key, version), self.names, self.groups)
        spec = named_topics.DECODED.get(key)
        if spec is None:
            raise NotForwardable(f"API {key} is not forwarded by the gateway")
        return any(self._named(item) for item in _scan(spec, payload, key, version))

    def in_metadata(self, payload: bytes | bytearray, version: int) -> frozenset[str | uuid.UUID]:
        """The protected topics a Metadata request names, by name or id (its answer is then a
        refusal for each)."""
        return frozenset(item for item in _scan(_METADATA, payload, 3, version) if self._named(item))

    def in_produce(self, payload: bytes | bytearray, version: int) -> bool:
        try:
            names, ids = produce_topics(payload, version)
        except (CodecError, struct.error, IndexError) as exc:
            raise CodecError(f"malformed Produce v{version}: {exc}") from exc
        return any(n in self.names for n in names) or any(i in self.ids for i in ids)

    def filter_metadata(self, named: frozenset[str | uuid.UUID], response: MetadataResponse, version: int) -> None:
        """``named``: the protected topics the request listed (``in_metadata``). Each is refused
        as Kafka refuses a topic the caller may not DESCRIBE: asked by name, without its id;
        asked by id, without its name (so neither links the other); any other is left out."""
        kept: list[MetadataResponseTopic] = []
        for topic in response.topics:
            if topic.name in self.names or topic.topic_id in self.ids:
                self.add_id(topic.topic_id)
                if topic.topic_id in named:
                    kept.append(_refused(None if version >= _NULL_NAMES else topic.name, topic.topic_id))
                elif topic.name in named:
                    kept.append(_refused(topic.name, ZERO_UUID))
                continue
            kept.append(topic)
        response.topics = kept


# Metadata answers name a topic null from v12 (the first version looking topics up by id).
_NULL_NAMES = 12


def _refused(name: str | None, topic_id: uuid.UUID) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=topic_id)


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


def _read(cls: type[Message], payload: bytes | bytearray, key: int, version: int, read: Callable[..., T]) -> T:
    """``read(body, flexible)`` on a request's body, as a broker reads it (bytes after the message
    are ignored); ``NotForwardable`` when the version is not one read here or it does not decode."""
    if version not in cls.VALID:
        raise NotForwardable(f"API {key} v{version} is beyond what the gateway can read")
    flexible = version in cls.FLEXIBLE
    buf = memoryview(payload)
    try:
        _, pos = decode_request_header(buf, 2 if flexible else 1)
        return read(buf[pos:], flexible)
    except (CodecError, ValueError, IndexError, struct.error) as exc:
        raise NotForwardable(f"malformed API {key} v{version}: {exc}") from exc


def _decode(cls: type[Message], payload: bytes | bytearray, key: int, version: int) -> Message:
    return _read(cls, payload, key, version, lambda body, flexible: decode_struct(cls, body, version, flexible, False))


def _scan(spec: named_topics.Decoded, payload: bytes | bytearray, key: int, version: int) -> list[Any]:
    """The topic names and ids of a request, read without decoding the rest of it."""
    return _read(
        spec.request,
        payload,
        key,
        version,
        lambda body, flexible: scan(spec.request, body, version, flexible, spec.paths),
    )


def _array_len(buf: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        n = max(n - 1, 0)
    else:
        n = max(int(_I32.unpack_from(buf, pos)[0]), 0)
        pos += 4
    check_array_count(n, len(buf) - pos)
    return n, pos


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
    count, pos = read_tag_count(buf, pos)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    return pos
