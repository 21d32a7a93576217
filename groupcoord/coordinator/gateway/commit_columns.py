"""OffsetCommit requests decoded, and their answers encoded, with the partitions as columns.

The generic codec reads a partition field by field through a closure each and makes a dataclass
per partition: 2.3-3.2 us a partition of a 100-partition commit, the largest single cost of a
commit through the gateway (profiled, issue #26). A partition whose metadata is empty or null and
that carries no tagged fields has a fixed size at every version, so the partitions of such a topic
are read here with one ``struct.iter_unpack`` over their bytes and kept as columns
(``messages/offset_commit_columns``); every other field is read by the codec's own readers. Any
partition that is not of that shape, or anything else unusual (tagged fields anywhere, trailing
bytes, a codec error), and the request is left to the generic codec, which decodes it (or refuses
it, with its own error) as before: this decoder never accepts what the codec refuses, never reads
a value differently, and never raises (``tests/gateway/test_commit_columns.py`` compares the two).

An answer whose topics hold columns is encoded here: each partition is its index and error code
(and an empty tagged-field section from v8), laid out with strided copies of the packed columns.
"""

from __future__ import annotations

import struct
from typing import Any

from groupcoord.coordinator.gateway.codec import (
    CodecError,
    check_array_count,
    field_reader,
    field_writer,
    read_tag_count,
    read_uvarint,
    write_uvarint,
)
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.messages.offset_commit_columns import (
    CommitColumns,
    OffsetCommitColumnsTopic,
    answer_columns,
)
from groupcoord.coordinator.messages.schema import Message

_I32 = struct.Struct(">i")
# v8+: index, offset, leader epoch, the metadata's compact length (0 null, 1 empty), the
# partition's tagged-field count (0). v6-v7: index, offset, leader epoch, metadata length (-1
# null, 0 empty). v2-v5: index, offset, metadata length.
_FLEXIBLE_PARTITION = struct.Struct(">iqiBB")
_EPOCH_PARTITION = struct.Struct(">iqih")
_PLAIN_PARTITION = struct.Struct(">iqh")
_FLEXIBLE_FROM = 8
_EPOCH_FROM = 6
# The metadata a length stands for: compact (0 null, 1 empty), classic (-1 null, 0 empty).
_COMPACT_METADATA: tuple[str | None, ...] = (None, "")
_CLASSIC_METADATA: tuple[str | None, ...] = ("", None)

_TOPIC_FIELDS = {f.name: f for f in OffsetCommitRequest.SCHEMA[-1].struct.SCHEMA}  # type: ignore[union-attr]


class _Readers:
    """The codec's readers of the fields around the partitions, at one version."""

    def __init__(self, version: int) -> None:
        flexible = version >= _FLEXIBLE_FROM
        self.top = [
            (f.name, field_reader(f, version, flexible))
            for f in OffsetCommitRequest.SCHEMA
            if version in f.versions and f.name != "topics"
        ]
        topic_id = version not in _TOPIC_FIELDS["name"].versions
        key = "topic_id" if topic_id else "name"
        self.topic_key = key
        self.topic_reader = field_reader(_TOPIC_FIELDS[key], version, flexible)
        self.flexible = flexible
        if flexible:
            self.partition = _FLEXIBLE_PARTITION
        else:
            self.partition = _EPOCH_PARTITION if version >= _EPOCH_FROM else _PLAIN_PARTITION


_READERS: dict[int, _Readers] = {}


def _readers(version: int) -> _Readers:
    found = _READERS.get(version)
    if found is None:
        found = _READERS[version] = _Readers(version)
    return found


def decode_offset_commit(body: memoryview, version: int) -> OffsetCommitRequest | None:
    """``body`` (an OffsetCommit request at ``version``, after its header) with its topics as
    columns; None where the generic codec is to decode it."""
    if version not in OffsetCommitRequest.VALID:
        return None
    try:
        return _decode(body, _readers(version))
    except (CodecError, struct.error, IndexError, ValueError):
        return None


def _count(buf: memoryview, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's element count, refused as the codec refuses it (None arrays included)."""
    if flexible:
        n, pos = read_uvarint(buf, pos)
        n -= 1
    else:
        if pos + 4 > len(buf):
            raise CodecError("truncated length")
        n = _I32.unpack_from(buf, pos)[0]
        pos += 4
    if n < 0:
        raise CodecError("null array")
    check_array_count(n, len(buf) - pos)
    return n, pos


def _decode(buf: memoryview, readers: _Readers) -> OffsetCommitRequest | None:
    request = OffsetCommitRequest()
    pos = 0
    for name, read in readers.top:
        value, pos = read(buf, pos)
        setattr(request, name, value)
    flexible = readers.flexible
    layout = readers.partition
    size = layout.size
    topics = []
    count, pos = _count(buf, pos, flexible)
    for _ in range(count):
        key, pos = readers.topic_reader(buf, pos)
        n, pos = _count(buf, pos, flexible)
        end = pos + n * size
        if end > len(buf):
            return None
        rows = list(zip(*layout.iter_unpack(buf[pos:end]), strict=True)) if n else []
        pos = end
        if flexible:
            indexes, offsets, epochs, lengths, tags = rows or ((), (), (), (), ())
            if n and (max(lengths) > 1 or any(tags)):
                return None
            metadata = list(map(_COMPACT_METADATA.__getitem__, lengths))
            count_tags, pos = read_tag_count(buf, pos)
            if count_tags:
                return None
        elif layout is _EPOCH_PARTITION:
            indexes, offsets, epochs, lengths = rows or ((), (), (), ())
            if n and (min(lengths) < -1 or max(lengths) > 0):
                return None
            metadata = list(map(_CLASSIC_METADATA.__getitem__, lengths))
        else:
            indexes, offsets, lengths = rows or ((), (), ())
            if n and (min(lengths) < -1 or max(lengths) > 0):
                return None
            metadata = list(map(_CLASSIC_METADATA.__getitem__, lengths))
            epochs = (-1,) * n
        columns = CommitColumns(list(indexes), list(offsets), list(epochs), metadata)
        topic = OffsetCommitColumnsTopic(columns=columns)
        setattr(topic, readers.topic_key, key)
        topics.append(topic)
    request.topics = topics  # type: ignore[assignment]  # the columns topics are request topics
    if flexible:
        count_tags, pos = read_tag_count(buf, pos)
        if count_tags:
            return None
    if pos != len(buf):
        return None
    return request


# --- answers ---------------------------------------------------------------------------------

_ANSWER_TOPIC_FIELDS = {f.name: f for f in OffsetCommitResponse.SCHEMA[-1].struct.SCHEMA}  # type: ignore[union-attr]
_WRITERS: dict[int, tuple[str, Any]] = {}


def _topic_writer(version: int) -> tuple[str, Any]:
    found = _WRITERS.get(version)
    if found is None:
        key = "name" if version in _ANSWER_TOPIC_FIELDS["name"].versions else "topic_id"
        found = _WRITERS[version] = (key, field_writer(_ANSWER_TOPIC_FIELDS[key], version, version >= _FLEXIBLE_FROM))
    return found


def encode_offset_commit_answer(body: Message, version: int, out: bytearray) -> bool:
    """Append ``body`` (an OffsetCommit answer) at ``version`` to ``out`` if all of its topics
    hold their partitions as columns and nothing carries tagged fields; False (``out``
    untouched) otherwise, for the generic codec."""
    if type(body) is not OffsetCommitResponse or body.unknown_tagged_fields:
        return False
    columns = []
    for topic in body.topics:
        found = answer_columns(topic)
        if found is None or topic.unknown_tagged_fields:
            return False
        columns.append(found)
    flexible = version >= _FLEXIBLE_FROM
    key, write_key = _topic_writer(version)
    part = bytearray()
    if version >= 3:
        part += _I32.pack(body.throttle_time_ms)
    if flexible:
        write_uvarint(part, len(body.topics) + 1)
    else:
        part += _I32.pack(len(body.topics))
    for topic, (indexes, codes) in zip(body.topics, columns, strict=True):
        write_key(part, getattr(topic, key))
        n = len(indexes)
        if flexible:
            write_uvarint(part, n + 1)
        else:
            part += _I32.pack(n)
        part += _partitions(indexes, codes, flexible)
        if flexible:
            part.append(0)  # the topic's tagged fields: none
    if flexible:
        part.append(0)
    out += part
    return True


def _partitions(indexes: list[int], codes: list[int], flexible: bool) -> bytearray:
    """Each partition's int32 index and int16 error code (and, flexible, a 0 tag count), in
    order: the columns packed whole, then copied into place byte by byte with strides."""
    n = len(indexes)
    stride = 7 if flexible else 6
    data = bytearray(n * stride)
    if not n:
        return data
    packed = struct.pack(f">{n}i", *indexes)
    for b in range(4):
        data[b::stride] = packed[b::4]
    if codes.count(codes[0]) == n:
        high, low = struct.pack(">h", codes[0])
        data[4::stride] = bytes((high,)) * n
        data[5::stride] = bytes((low,)) * n
    else:
        packed_codes = struct.pack(f">{n}h", *codes)
        data[4::stride] = packed_codes[0::2]
        data[5::stride] = packed_codes[1::2]
    return data
