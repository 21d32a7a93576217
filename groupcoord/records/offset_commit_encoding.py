"""OffsetCommit records encoded with what one commit's records share written once.

A commit of N partitions writes N OffsetCommit records whose keys share the group and topic and
whose values share the commit and expiry timestamps and the topic id; only the partition, the
offset, the leader epoch and the metadata differ. The shared bytes are kept from the previous
record (one entry each, so nothing grows), which makes encoding a 100-partition commit mostly
joining bytes. The result is byte for byte what the schema-driven writer gives (keys are compared
as bytes): ``tests/unit/test_avro_writer.py`` checks it against fastavro.
"""

from __future__ import annotations

import struct
from typing import Any

from groupcoord.records.avro_writer import write_long, write_string
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue, RecordType

_TYPE = int(RecordType.OFFSET_COMMIT)


# The value fields, in order, that ``OffsetCommitEncoder.value`` writes.
VALUE_FIELDS = ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp", "topic_id")


class OffsetCommitEncoder:
    """Encodes the OffsetCommit key and value (schema version ``version``, which must be the
    fields ``OffsetCommitValue`` has: offset, leader epoch, metadata, commit and expiry
    timestamps, topic id)."""

    def __init__(self, version: int) -> None:
        self._key_header = struct.pack(">h", _TYPE)
        self._value_header = struct.pack(">hh", _TYPE, version)
        self._key_prefix: tuple[Any, bytes] = ((None, None), b"")
        self._value_tail: tuple[Any, bytes] = ((None, None, None), b"")

    def key(self, key: OffsetCommitKey) -> bytes:
        # Read once: another thread encoding meanwhile replaces the entry, never changes it.
        cached = self._key_prefix
        shared = (key.group, key.topic)
        if cached[0] != shared:
            out = [self._key_header]
            write_string(out, key.group)
            write_string(out, key.topic)
            self._key_prefix = cached = (shared, b"".join(out))
        out = [cached[1]]
        write_long(out, key.partition)
        return b"".join(out)

    def value(self, value: OffsetCommitValue) -> bytes:
        cached = self._value_tail
        shared = (value.commit_timestamp, value.expire_timestamp, value.topic_id)
        if cached[0] != shared:
            tail: list[bytes] = []
            write_long(tail, value.commit_timestamp)
            write_long(tail, value.expire_timestamp)
            if value.topic_id is None:
                tail.append(b"\x00")
            else:
                tail.append(b"\x02")
                write_string(tail, value.topic_id)
            self._value_tail = cached = (shared, b"".join(tail))
        out = [self._value_header]
        write_long(out, value.offset)
        write_long(out, value.leader_epoch)
        write_string(out, value.metadata)
        out.append(cached[1])
        return b"".join(out)
