"""OffsetCommit records read in bulk by a load, their values left encoded until an offset is read.

A shard load ends by replaying the last record of every key. In a log of many groups that is
one OffsetCommit record per committed offset, and decoding them (the key into an
``OffsetCommitKey``, the value into an ``OffsetCommitValue``) was most of a load: 1M records took
about 20 s, five times the bare read of the log. ``OffsetCommitRuns`` reads a run of such records
with what it takes to place them (group, topic and partition), without decoding any value, and
hands them over as ``(group, topic, {partition: value bytes})`` entries; the offsets state
keeps the bytes and decodes a value when it is read (``groupcoord/coordinator/offsets/state.py``).

Exactness. A value is left encoded only when ``PLAIN_VALUE`` matches it, a shape the compiled
reader always decodes (every varint at most ten bytes, the metadata empty, the topic id null or
22 ASCII characters): reading it later cannot fail, and gives what decoding it at the load would
have given. Any other record of the run (metadata, an unusual key, damaged bytes) stops the run
and is decoded at the load as before, so an unreadable record fails its shard as it always did.
``tests/unit/test_offset_commit_decoding.py`` checks both against the codec.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from groupcoord.records.avro_reader import read_long, read_string
from groupcoord.records.codec import DEFAULT_CODEC
from groupcoord.records.definitions import DEFINITIONS, OffsetCommitValue, RecordType

_TYPE = int(RecordType.OFFSET_COMMIT)
KEY_PREFIX = _TYPE.to_bytes(2, "big")

# (offset, key bytes, value bytes): a record as a load keeps it.
Raw = tuple[int, bytes, bytes | None]
# One group's and topic's records of a run: (group, topic, {partition: value bytes as kept}), the
# later record of a partition (if any) having replaced the earlier.
EncodedOffsets = tuple[str, str, dict[int, bytes]]

# The value fields the pattern below reads, per schema version (the shipped definitions are
# checked against this at import: a version that differs gets no fast path).
_V1_FIELDS = ["offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp", "topic_id"]
_LAYOUTS = {1: _V1_FIELDS, 2: [*_V1_FIELDS, "producer_id"]}
_VARINT = rb"[\x80-\xff]{0,9}[\x00-\x7f]"  # read_long reads at most ten bytes
_EMPTY_STRING = rb"\x00"
_TOPIC_ID = rb"(?:\x00|\x02\x2c[\x00-\x7f]{22})"  # null, or 22 ASCII bytes (valid UTF-8)
_BODIES = {
    1: _VARINT + _VARINT + _EMPTY_STRING + _VARINT + _VARINT + _TOPIC_ID,
    2: _VARINT + _VARINT + _EMPTY_STRING + _VARINT + _VARINT + _TOPIC_ID + _VARINT,
}


def _plain_value_pattern() -> re.Pattern[bytes] | None:
    (definition,) = (d for d in DEFINITIONS if d.type == RecordType.OFFSET_COMMIT)
    branches = []
    for version, schema in definition.value_schemas.items():
        if [f["name"] for f in schema["fields"]] != _LAYOUTS.get(version):
            return None
        header = _TYPE.to_bytes(2, "big") + version.to_bytes(2, "big")
        branches.append(re.escape(header) + _BODIES[version])
    return re.compile(b"|".join(branches))


PLAIN_VALUE = _plain_value_pattern()

# A value is kept without its record type (the two bytes every OffsetCommit value starts with):
# the slice is also a fresh copy, made after the load's messages were freed, where the consumed
# value's own bytes would stay scattered among them and keep their memory from being reused
# (measured: 894 bytes of RSS per loaded offset kept whole).
_KEPT_FROM = len(KEY_PREFIX)


class OffsetCommitRuns:
    """Reads runs of OffsetCommit records (``read``). Keys of one commit share their group and
    topic bytes, so the last key's prefix is kept: a key that starts with it and ends with a
    one-byte partition is placed without being parsed."""

    def __init__(self) -> None:
        self._prefix = b"\x00"  # never the start of an OffsetCommit key: the first is parsed
        self._group = ""
        self._topic = ""
        self._topics: dict[str, str] = {}  # one string object per topic name, for memory

    def read(self, raws: Sequence[Raw], start: int) -> tuple[list[EncodedOffsets], int]:
        """The records of ``raws`` from ``start`` on, up to the first that must be decoded the
        usual way (its index is returned; ``len(raws)`` when there is none)."""
        plain = PLAIN_VALUE
        out: list[EncodedOffsets] = []
        if plain is None:
            return out, start
        match = plain.fullmatch
        prefix, size = self._prefix, len(self._prefix) + 1
        slots: dict[int, bytes] | None = None
        at, end = start, len(raws)
        # Indexed, not islice(raws, start, None): islice walks from index 0, and a load whose
        # records are mostly decoded the usual way calls this once per record (quadratic).
        while at < end:
            _, key, value = raws[at]
            if value is None or match(value) is None:
                break
            if len(key) == size and key.startswith(prefix) and key[-1] < 0x80:
                if slots is None:
                    slots = {}
                    out.append((self._group, self._topic, slots))
                last = key[-1]
                slots[(last >> 1) ^ -(last & 1)] = value[_KEPT_FROM:]
            else:
                try:
                    group, topic, partition, prefix = self._parse(key)
                except (ValueError, IndexError):
                    break
                size = len(prefix) + 1
                slots = {partition: value[_KEPT_FROM:]}
                out.append((group, topic, slots))
            at += 1
        self._prefix = prefix
        return out, at

    def _parse(self, key: bytes) -> tuple[str, str, int, bytes]:
        """(group, topic, partition, the key's bytes before the partition); the key must be an
        OffsetCommit key with nothing after its partition."""
        if not key.startswith(KEY_PREFIX):
            raise ValueError("not an OffsetCommit key")
        group, pos = read_string(key, len(KEY_PREFIX))
        topic, pos = read_string(key, pos)
        partition, end = read_long(key, pos)
        if end != len(key):
            raise ValueError("bytes after the partition")  # the codec's path decides about those
        topic = self._topics.setdefault(topic, topic)
        self._group, self._topic = group, topic
        return group, topic, partition, key[:pos]


def decode_offset_value(kept: bytes) -> OffsetCommitValue:
    """A value ``OffsetCommitRuns`` left encoded (it matched ``PLAIN_VALUE``), as it keeps it."""
    decoded: OffsetCommitValue = DEFAULT_CODEC.decode_value(RecordType.OFFSET_COMMIT, KEY_PREFIX + kept)
    return decoded


# A kept value's commit and expiry timestamps: after its version (two bytes), the offset and the
# leader epoch, and its metadata (empty in a kept value).
_TIMESTAMPS = re.compile(rb"..(?:" + _VARINT + rb"){2}\x00(" + _VARINT + rb")(" + _VARINT + rb")", re.DOTALL)
# Entries ``KeptTimestamps`` keeps at most (a retention sweep meets a few distinct timestamps).
_TIMESTAMPS_KEPT = 4096


class KeptTimestamps:
    """(commit timestamp, expiry timestamp) of values ``OffsetCommitRuns`` left encoded, read
    without decoding the rest: the retention sweep looks at every committed offset, and decoding
    each (an ``OffsetCommitValue`` built for two of its fields) cost it 2 us an offset. The
    timestamps' bytes repeat (one commit's records share them, a plain expiry is -1), so their
    values are remembered by those bytes."""

    def __init__(self) -> None:
        self._longs: dict[bytes, int] = {}

    def __call__(self, kept: bytes) -> tuple[int, int]:
        found = _TIMESTAMPS.match(kept)
        if found is None:  # not a value a load keeps: read as any other
            value = decode_offset_value(kept)
            return value.commit_timestamp, value.expire_timestamp
        longs = self._longs
        if len(longs) > _TIMESTAMPS_KEPT:
            longs.clear()
        committed_bytes, expires_bytes = found.group(1, 2)
        committed = longs.get(committed_bytes)
        if committed is None:
            committed = longs[committed_bytes] = read_long(committed_bytes, 0)[0]
        expires = longs.get(expires_bytes)
        if expires is None:
            expires = longs[expires_bytes] = read_long(expires_bytes, 0)[0]
        return committed, expires
