"""OffsetCommit records encoded with what one commit's records share written once.

A commit of N partitions writes N OffsetCommit records whose keys share the group and topic and
whose values share the commit and expiry timestamps and the topic id; only the partition, the
offset, the leader epoch and the metadata differ. The shared bytes are kept from the previous
record (one entry each, so nothing grows), which makes encoding a 100-partition commit mostly
joining bytes; ``encode_run`` encodes a whole run of such records in one loop. The result is
byte for byte what the schema-driven writer gives (keys are compared as bytes):
``tests/unit/test_avro_writer.py`` checks it against fastavro.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from groupcoord.records.avro_writer import write_long, write_string
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue, RecordType

_KIND = RecordType.OFFSET_COMMIT
_TYPE = int(_KIND)
_SMALL = [bytes((i,)) for i in range(128)]
# A value whose producer id tells whether ``lacking`` reads the producer id alone.
_PRODUCER_PROBE = OffsetCommitValue(0, producer_id=-7)


# The value fields, in order, that ``OffsetCommitEncoder.value`` writes.
VALUE_FIELDS = ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp", "topic_id")


def _varint(z: int) -> bytes:
    """A zigzag-encoded long (``z`` >= 128) as Avro's base-128 varint, low groups first. Up to
    five bytes (offsets below 2**34) are made in one call: the loop cost a third of encoding
    a commit whose offsets take two or three bytes (profiled)."""
    if z < 0x4000:
        return bytes(((z & 127) | 128, z >> 7))
    if z < 0x200000:
        return bytes(((z & 127) | 128, ((z >> 7) & 127) | 128, z >> 14))
    if z < 0x10000000:
        return bytes(((z & 127) | 128, ((z >> 7) & 127) | 128, ((z >> 14) & 127) | 128, z >> 21))
    if z < 0x800000000:
        return bytes(
            ((z & 127) | 128, ((z >> 7) & 127) | 128, ((z >> 14) & 127) | 128, ((z >> 21) & 127) | 128, z >> 28)
        )
    buf = bytearray()
    while z > 127:
        buf.append((z & 127) | 128)
        z >>= 7
    buf.append(z)
    return bytes(buf)


# The bytes of partitions 0 to 1,023 (a key's last field): the keys of a commit to a topic of up
# to 1,024 partitions are joined by C-level maps (``OffsetCommitEncoder.encode_columns``).
_PARTITIONS = [_SMALL[2 * p] if p < 64 else _varint(2 * p) for p in range(1024)]


def _shared_tail(commit_timestamp: int, expire_timestamp: int, topic_id: str | None) -> bytes:
    """A value's bytes after its metadata (commit and expiry timestamps, topic id)."""
    tail: list[bytes] = []
    write_long(tail, commit_timestamp)
    write_long(tail, expire_timestamp)
    if topic_id is None:
        tail.append(b"\x00")
    else:
        tail.append(b"\x02")
        write_string(tail, topic_id)
    return b"".join(tail)


class OffsetCommitEncoder:
    """Encodes the OffsetCommit key and value (schema version ``version``, which must be the
    fields ``OffsetCommitValue`` has: offset, leader epoch, metadata, commit and expiry
    timestamps, topic id)."""

    def __init__(self, version: int) -> None:
        self._key_header = struct.pack(">h", _TYPE)
        self._value_header = struct.pack(">hh", _TYPE, version)
        self._key_prefix: tuple[Any, bytes] = ((None, None), b"")
        self._value_tail: tuple[Any, bytes] = ((None, None, None), b"")

    def _prefix(self, group: str, topic: str) -> bytes:
        """The key's bytes before its partition."""
        out = [self._key_header]
        write_string(out, group)
        write_string(out, topic)
        return b"".join(out)

    @staticmethod
    def _tail(value: OffsetCommitValue) -> bytes:
        """The value's bytes after its metadata: the fields a commit's records share."""
        return _shared_tail(value.commit_timestamp, value.expire_timestamp, value.topic_id)

    def key(self, key: OffsetCommitKey) -> bytes:
        # Read once: another thread encoding meanwhile replaces the entry, never changes it.
        cached = self._key_prefix
        shared = (key.group, key.topic)
        if cached[0] != shared:
            self._key_prefix = cached = (shared, self._prefix(key.group, key.topic))
        out = [cached[1]]
        write_long(out, key.partition)
        return b"".join(out)

    def value(self, value: OffsetCommitValue) -> bytes:
        cached = self._value_tail
        shared = (value.commit_timestamp, value.expire_timestamp, value.topic_id)
        if cached[0] != shared:
            self._value_tail = cached = (shared, self._tail(value))
        out = [self._value_header]
        write_long(out, value.offset)
        write_long(out, value.leader_epoch)
        write_string(out, value.metadata)
        out.append(cached[1])
        return b"".join(out)

    def encode_run(
        self,
        records: Sequence[Any],
        start: int,
        out: list[tuple[bytes, bytes | None]],
        lacking: Callable[[Any], tuple[Any, ...]],
        defaults: tuple[Any, ...],
    ) -> int:
        """Encode the OffsetCommit records of ``records`` from ``start`` on that this version
        writes (values whose ``lacking`` fields are ``defaults``), appending ``(key, value)`` to
        ``out``; returns the index of the first record it leaves (another type, a tombstone,
        another version). The bytes of ``key`` and ``value`` for each, without their calls and
        lists per record: a 100-partition commit is one run of one group and topic, whose key
        prefix and value tail are made once (encoded one by one: 1.5 us a record, measured)."""
        header, small = self._value_header, _SMALL
        # A plain commit's version lacks the producer id alone: checked inline, not through
        # ``lacking`` (a lambda call per record).
        plain = defaults == (-1,) and lacking(_PRODUCER_PROBE) == (_PRODUCER_PROBE.producer_id,)
        at, end = start, len(records)
        group = topic = None
        prefix = b""
        committed = expires = topic_id = None  # no value's commit timestamp: the first makes the tail
        tail = b""
        while at < end:
            record = records[at]
            value = record.value
            if record.type is not _KIND or value is None:
                break
            if (value.producer_id != -1) if plain else (lacking(value) != defaults):
                break
            key = record.key
            if key.group != group or key.topic != topic:
                group, topic = key.group, key.topic
                prefix = self._prefix(group, topic)  # type: ignore[arg-type]
            if value.commit_timestamp != committed or value.expire_timestamp != expires or value.topic_id != topic_id:
                committed, expires, topic_id = value.commit_timestamp, value.expire_timestamp, value.topic_id
                tail = self._tail(value)
            n = key.partition
            z = (n << 1) ^ (n >> 63)
            key_bytes = prefix + (small[z] if z < 128 else _varint(z))
            n = value.offset
            z = (n << 1) ^ (n >> 63)
            value_bytes = header + (small[z] if z < 128 else _varint(z))
            n = value.leader_epoch
            z = (n << 1) ^ (n >> 63)
            value_bytes += small[z] if z < 128 else _varint(z)
            metadata = value.metadata
            if metadata:
                data = metadata.encode()
                n = len(data)
                value_bytes += (small[n << 1] if n < 64 else _varint(n << 1)) + data
            else:
                value_bytes += b"\x00"  # the empty string: its length, 0
            out.append((key_bytes, value_bytes + tail))
            at += 1
        return at

    def encode_columns(
        self,
        group: str,
        topic: str,
        partitions: Sequence[int],
        offsets: Sequence[int],
        leader_epochs: Sequence[int],
        shared: tuple[int, int, str | None],
        keys: list[bytes],
        values: list[bytes],
    ) -> None:
        """Append to ``keys`` and ``values`` the bytes of plain OffsetCommit records (empty
        metadata, no producer id: this version must be the one that writes them) of one group
        and topic, given as columns; ``shared``: the commit and expiry timestamps and the topic
        id they all have. What ``key`` and ``value`` give for each such record, without a record
        object per offset: the keys, when every partition is below 1,024, are joined by C-level
        maps, and the values by one loop of a varint (the offset) and a lookup (what follows it
        is the same for every offset of a leader epoch)."""
        prefix = self._prefix(group, topic)
        small = _SMALL
        if partitions and min(partitions) >= 0 and max(partitions) < len(_PARTITIONS):
            keys.extend(map(prefix.__add__, map(_PARTITIONS.__getitem__, partitions)))
        else:
            for n in partitions:
                z = (n << 1) ^ (n >> 63)
                keys.append(prefix + (small[z] if z < 128 else _varint(z)))
        # After the offset: the leader epoch, the empty metadata (its length, 0) and the shared fields.
        header, tail = self._value_header, b"\x00" + _shared_tail(*shared)
        after: dict[int, bytes] = {}
        append = values.append
        for n, e in zip(offsets, leader_epochs, strict=True):
            rest = after.get(e)
            if rest is None:
                y = (e << 1) ^ (e >> 63)
                rest = after[e] = (small[y] if y < 128 else _varint(y)) + tail
            z = (n << 1) ^ (n >> 63)
            append(header + (small[z] if z < 128 else _varint(z)) + rest)
