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
from itertools import compress
from operator import itemgetter, ne
from typing import Any

import re2

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


# --- A load's OffsetCommit records in log order, at once (``OffsetsTable``) ------------------

# ``all_plain`` joins a run's values with this between them: ten continuation bytes, which no
# plain value holds in a row (a varint has at most nine before its last byte, and nothing else in
# it is 0xff), so RE2's one pass over the joined run finds each value exactly where it was put.
_SEP = b"\xff" * 10


def _plain_runs_pattern() -> Any:
    if PLAIN_VALUE is None:
        return None
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1  # bytes, not UTF-8
    return re2.compile(b"(?:(?:" + PLAIN_VALUE.pattern + b")" + re.escape(_SEP) + b")*", options)


_PLAIN_RUNS = _plain_runs_pattern()


def all_plain(values: list[bytes]) -> bool:
    """Whether every one of ``values`` matches ``PLAIN_VALUE``, checked in one linear pass.

    The joined text is ``v1 SEP v2 SEP ... vn SEP``. If it matches ``(PLAIN SEP)*``, every SEP the
    match took is a run of exactly ten 0xff bytes between a plain value's last byte (below 0x80)
    and the next value's first (0x00) or the end; each SEP put there is such a run or part of a
    longer one, which nothing in the pattern can cover, so each was taken as a SEP. A SEP taken
    anywhere else would lie inside a value and make more than n of them, which the count rules
    out: the match's pieces are exactly the values, each a plain value. (RE2, not ``re``: 4x
    faster over a run, and linear.)"""
    if _PLAIN_RUNS is None or None in values:
        return False
    joined = _SEP.join(values) + _SEP  # type: ignore[arg-type]
    return joined.count(_SEP) == len(values) and _PLAIN_RUNS.fullmatch(joined) is not None


# A partition kept in one key byte: a zigzag varint of 0..63 is one even byte below 0x80.
_ONE_BYTE_PARTITIONS = bytes(range(0, 0x80, 2))
_HALF = bytes(b >> 1 for b in range(256))
_LAST = itemgetter(-1)
_BEFORE_LAST = itemgetter(slice(None, -1))
_KEPT = itemgetter(slice(_KEPT_FROM, None))
# Records placed at once: the joined values of one chunk stay small (in cache).
TABLE_CHUNK = 2048

# group -> topic -> {partition: value bytes as kept}
OffsetsTableGroups = dict[str, dict[str, dict[int, bytes]]]


class OffsetsTable:
    """The OffsetCommit records of a load, placed in log order: each key's value is its last
    record's (``groups``, values kept as ``OffsetCommitRuns`` keeps them), a tombstone removes
    it, and a record whose value is not plain is kept aside as read (``irregular``: decoded the
    usual way by the caller, after the table, which is right as it is its key's last record;
    a later record of its key takes it out again). Replaying the table gives the state replaying
    each key's last record gives (what the offsets state keeps of a key is its last record's
    value, or nothing after a tombstone); only the order the groups are met in differs.

    Records go in by chunks (``add``): a chunk of plain values under keys whose partition fits
    one byte is placed with C-level operations over the chunk (RE2 over its joined values, its
    keys cut before their partition byte and grouped where neighbours share that prefix), one
    Python step per group and topic rather than per record; any other chunk record by record.
    A key that does not parse as ``OffsetCommitRuns`` parses keys makes the table ``declined``:
    the caller then replays the records the usual way."""

    def __init__(self) -> None:
        self.groups: OffsetsTableGroups = {}
        self.irregular: dict[bytes, Raw] = {}
        self.tombstoned: set[bytes] = set()  # keys whose last record so far is a tombstone
        self.declined = False
        self.view: Any = None  # the offsets state's shareable form of ``groups`` (made once)
        self._runs = OffsetCommitRuns()
        self._topics: dict[bytes, str] = {}

    def add(self, keys: list[bytes], values: list[bytes | None], offsets: list[int]) -> None:
        """Place records (OffsetCommit records' keys, values and offsets), in log order, in chunks."""
        for at in range(0, len(keys), TABLE_CHUNK):
            if self.declined:
                return
            end = at + TABLE_CHUNK
            chunk_keys, chunk_values = keys[at:end], values[at:end]
            if not (all_plain(chunk_values) and self._add_plain(chunk_keys, chunk_values)):  # type: ignore[arg-type]
                self._add_each(chunk_keys, chunk_values, offsets[at:end])

    def records(self) -> int:
        """Keys whose last record the table holds (a value or a tombstone); ``irregular`` aside."""
        return sum(len(parts) for topics in self.groups.values() for parts in topics.values()) + len(self.tombstoned)

    def _add_plain(self, keys: list[bytes], values: list[bytes]) -> bool:
        lasts = bytes(map(_LAST, keys))
        if lasts.translate(None, _ONE_BYTE_PARTITIONS):
            return False
        prefixes = list(map(_BEFORE_LAST, keys))
        count = len(keys)
        bounds = [0, *compress(range(1, count), map(ne, prefixes[1:], prefixes[:-1])), count]
        names = [self._names(prefixes[a]) for a in bounds[:-1]]
        if None in names:
            return False
        partitions = lasts.translate(_HALF)
        kept = list(map(_KEPT, values))
        if self.irregular:
            for key in self.irregular.keys() & keys:
                del self.irregular[key]
        if self.tombstoned:
            self.tombstoned.difference_update(keys)
        # Each run's {partition: value}, made in C: slices of the partitions and kept values.
        runs = list(map(slice, bounds[:-1], bounds[1:]))
        run_slots = list(map(dict, map(zip, map(partitions.__getitem__, runs), map(kept.__getitem__, runs))))
        group_names, topic_names = zip(*names, strict=True)  # type: ignore[misc]
        # The first run may go on with a group the previous chunk ended with.
        first = 1 if group_names[0] in self.groups else 0
        self._merge(group_names[:first], topic_names[:first], run_slots[:first])
        group_names, topic_names, run_slots = group_names[first:], topic_names[first:], run_slots[first:]
        if len(set(group_names)) == len(group_names) and self.groups.keys().isdisjoint(group_names):
            # Each group met for the first time, in one run: {topic: slots} for each, in C.
            self.groups.update(zip(group_names, map(dict, zip(zip(topic_names, run_slots, strict=True))), strict=True))
        else:
            self._merge(group_names, topic_names, run_slots)
        return True

    def _merge(self, group_names: Sequence[str], topic_names: Sequence[str], run_slots: list[dict[int, bytes]]) -> None:
        groups = self.groups
        for group, topic, slots in zip(group_names, topic_names, run_slots, strict=True):
            topics = groups.get(group)
            if topics is None:
                groups[group] = {topic: slots}
                continue
            parts = topics.get(topic)
            if parts is None:
                topics[topic] = slots
            else:
                parts.update(slots)

    def _names(self, prefix: bytes) -> tuple[str, str] | None:
        """(group, topic) of a key's bytes before a one-byte partition, if that is all they hold."""
        # Names shorter than 64 bytes, as nearly all are: each length is one even byte (a
        # zigzag varint), read here without the general reader (a step for each group).
        end = len(prefix)
        if end > 3:
            size = prefix[2]
            group_end = 3 + (size >> 1)
            if size < 0x80 and not size & 1 and group_end < end:
                size = prefix[group_end]
                if size < 0x80 and not size & 1 and group_end + 1 + (size >> 1) == end:
                    topic_bytes = prefix[group_end + 1 :]
                    topic = self._topics.get(topic_bytes)
                    try:
                        if topic is None:
                            topic = self._topics[topic_bytes] = topic_bytes.decode()
                        return prefix[3:group_end].decode(), topic
                    except UnicodeDecodeError:
                        return None
        try:
            group, topic, _, before = self._runs._parse(prefix + b"\x00")
        except (ValueError, IndexError):
            return None
        if len(before) != len(prefix):
            return None
        return group, topic

    def _add_each(self, keys: list[bytes], values: list[bytes | None], offsets: list[int]) -> None:
        plain = PLAIN_VALUE.fullmatch if PLAIN_VALUE is not None else None
        for key, value, offset in zip(keys, values, offsets, strict=True):
            try:
                group, topic, partition, _ = self._runs._parse(key)
            except (ValueError, IndexError):
                self.declined = True
                return
            self.irregular.pop(key, None)
            if value is not None and plain is not None and plain(value) is not None:
                self.tombstoned.discard(key)
                self.groups.setdefault(group, {}).setdefault(topic, {})[partition] = value[_KEPT_FROM:]
                continue
            self._remove(group, topic, partition)
            if value is None:
                self.tombstoned.add(key)
            else:
                self.tombstoned.discard(key)
                self.irregular[key] = (offset, key, value)

    def _remove(self, group: str, topic: str, partition: int) -> None:
        topics = self.groups.get(group)
        parts = None if topics is None else topics.get(topic)
        if parts is None or topics is None:
            return
        parts.pop(partition, None)
        if not parts:
            del topics[topic]
            if not topics:
                del self.groups[group]


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
