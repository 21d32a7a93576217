"""Key/value byte codecs for coordinator records.

Key bytes   = int16 record type (big-endian) + Avro body of the key schema.
Value bytes = int16 record type + int16 schema version + Avro body of that version's schema.
A ``None`` value is a tombstone (a null Kafka value), which compaction uses to delete the key.

Avro binary encoding of a given schema is deterministic, so equal keys give equal bytes and
compaction keeps exactly one value per slot.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import struct
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer

from groupcoord.records.avro import from_avro, to_avro
from groupcoord.records.avro_reader import RecordReader, compile_reader
from groupcoord.records.avro_writer import compile_encoder
from groupcoord.records.definitions import (
    DEFINITIONS,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDef,
    RecordType,
)
from groupcoord.records.offset_commit_encoding import VALUE_FIELDS, OffsetCommitEncoder

_KEY_HEADER = struct.Struct(">h")
_VALUE_HEADER = struct.Struct(">hh")


class RecordDecodeError(ValueError):
    """The bytes are not a record this version of the coordinator can read."""


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    type: RecordType
    key: Any
    value: Any | None  # None = tombstone


class _Compiled:
    __slots__ = (
        "definition",
        "record_type",
        "key_schema",
        "value_schemas",
        "latest_version",
        "latest_schema",
        "versions",
        "key_reader",
        "value_readers",
        "fast_key",
        "fast_values",
        "version_checks",
        "run_encoder",
        "plain_commits",
        "memo_key",
        "memo",
    )

    def __init__(self, definition: RecordDef, compiled_readers: bool = True) -> None:
        self.definition = definition
        self.record_type = RecordType(definition.type)
        self.key_schema = parse_schema(definition.key_schema)
        self.value_schemas = {v: parse_schema(s) for v, s in definition.value_schemas.items()}
        self.latest_version = definition.latest_version
        self.latest_schema = self.value_schemas[self.latest_version]
        # Flat schemas are read without fastavro (groupcoord/records/avro_reader.py).
        self.key_reader: RecordReader | None = None
        self.value_readers: dict[int, RecordReader] = {}
        if compiled_readers:
            self.key_reader = compile_reader(definition.key_schema, definition.key_cls)
            newest = definition.value_schemas[self.latest_version]
            for version, declared in definition.value_schemas.items():
                reader = compile_reader(declared, definition.value_cls, newest)
                if reader is not None:
                    self.value_readers[version] = reader
        # Per version, oldest first: the value's fields that version lacks, with their defaults. A
        # value is written in the oldest version that holds it (its other fields at their
        # defaults), so a process of an earlier release still reads every record it can
        # represent (a rolling upgrade moves shards between releases).
        fields = dataclasses.fields(definition.value_cls)
        self.versions: list[tuple[int, list[tuple[str, Any]]]] = []
        for v in sorted(definition.value_schemas):
            names = {field["name"] for field in definition.value_schemas[v]["fields"]}
            lacking = [f for f in fields if f.name not in names]
            if all(_has_default(f) for f in lacking):
                self.versions.append((v, [(f.name, _default(f)) for f in lacking]))
        # ``versions`` as (version, getter of the lacking fields, their defaults): one C-level
        # attrgetter call and one tuple comparison per version instead of a getattr per field
        # (the check ran for every record written: 2% of a commit-heavy run's samples).
        self.version_checks: list[tuple[int, Callable[[Any], tuple[Any, ...]], tuple[Any, ...]]] = [
            (v, _getter([name for name, _ in lacking]), tuple(default for _, default in lacking))
            for v, lacking in self.versions
        ]
        # The same bytes as fastavro's, written without it (see ``groupcoord.records.avro_writer``), per
        # value version; absent where the schema uses something that module does not encode.
        self.fast_key = compile_encoder(definition.key_schema, _KEY_HEADER.pack(definition.type))
        self.fast_values: dict[int, Callable[[Any], bytes]] = {}
        # (records, start, out) -> where the run stopped: encodes the records from ``start`` on
        # that go in the oldest version, while they last (``OffsetCommitEncoder.encode_run``).
        self.run_encoder: Callable[[Sequence[Any], int, list[tuple[bytes, bytes | None]]], int] | None = None
        # The encoder of a plain commit's version (the oldest: it lacks the producer id alone).
        self.plain_commits: OffsetCommitEncoder | None = None
        # Values written again and again with the same fields (``VALUE_MEMO_KEYS``): their bytes by
        # those fields, bounded.
        self.memo_key = VALUE_MEMO_KEYS.get(self.record_type)
        self.memo: dict[Hashable, bytes] = {}
        for v, declared in definition.value_schemas.items():
            encoder = compile_encoder(declared, _VALUE_HEADER.pack(definition.type, v))
            if encoder is not None:
                self.fast_values[v] = encoder
            if _is_offset_commit(definition, v):
                commits = OffsetCommitEncoder(v)
                self.fast_key, self.fast_values[v] = commits.key, commits.value
                if self.version_checks and self.version_checks[0][0] == v:
                    _, oldest_lacking, oldest_defaults = self.version_checks[0]
                    self.run_encoder = functools.partial(
                        commits.encode_run, lacking=oldest_lacking, defaults=oldest_defaults
                    )
                    if oldest_defaults == (-1,) and oldest_lacking(OffsetCommitValue(0, producer_id=-7)) == (-7,):
                        self.plain_commits = commits

    def version_for(self, value: Any) -> int:
        for version, lacking, defaults in self.version_checks:
            if lacking(value) == defaults:
                return version
        return self.latest_version


# A memo holds at most this many values of one record type (then starts again, empty).
VALUE_MEMO_SIZE = 256


def _member_metadata_key(value: ConsumerGroupMemberMetadataValue) -> Hashable | None:
    """Every field of the value, the list as a tuple; None (not memoized) with classic metadata."""
    if value.classic_member_metadata is not None:
        return None
    return (
        value.client_id,
        value.client_host,
        value.rebalance_timeout_ms,
        value.instance_id,
        value.rack_id,
        tuple(value.subscribed_topic_names),
        value.subscribed_topic_regex,
        value.server_assignor,
    )


def _current_assignment_key(value: ConsumerGroupCurrentMemberAssignmentValue) -> Hashable | None:
    """Every field of a value without partitions (a joining member's); None for any other."""
    if value.assigned_partitions or value.partitions_pending_revocation:
        return None
    return (value.member_epoch, value.previous_member_epoch, value.state)


# Record types whose values repeat from record to record (every member of a mass join writes the
# same metadata and the same empty assignment at the same epoch): how to key a value by all of
# its fields (None: that value is not memoized). Each function names every field of its class
# (tests/unit/test_records.py checks it), so equal keys are equal values and equal bytes.
VALUE_MEMO_KEYS: dict[RecordType, Callable[[Any], Hashable | None]] = {
    RecordType.CONSUMER_GROUP_MEMBER_METADATA: _member_metadata_key,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: _current_assignment_key,
}


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the named attributes of an object as a tuple (empty for no names)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return attrgetter(*names)  # type: ignore[return-value]  # a tuple for two names or more


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _default(f: dataclasses.Field[Any]) -> Any:
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc,operator]


def _is_offset_commit(definition: RecordDef, version: int) -> bool:
    """Whether the definition is the OffsetCommit record ``OffsetCommitEncoder`` writes."""
    fields = tuple(f["name"] for f in definition.value_schemas[version]["fields"])
    key_fields = tuple(f["name"] for f in definition.key_schema["fields"])
    return (
        definition.type == RecordType.OFFSET_COMMIT
        and definition.key_cls is OffsetCommitKey
        and definition.value_cls is OffsetCommitValue
        and key_fields == ("group", "topic", "partition")
        and fields == VALUE_FIELDS
    )


def _write(schema: Any, datum: Any) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, schema, to_avro(datum))
    return buf.getvalue()


class RecordCodec:
    """Encoder/decoder over a set of record definitions (the shipped set by default)."""

    def __init__(self, definitions: tuple[RecordDef, ...] = DEFINITIONS, compiled_readers: bool = True) -> None:
        self._by_type: dict[int, _Compiled] = {int(d.type): _Compiled(d, compiled_readers) for d in definitions}

    def _compiled(self, record_type: int) -> _Compiled:
        try:
            return self._by_type[record_type]
        except KeyError:
            raise RecordDecodeError(f"unknown record type {record_type}") from None

    def plain_commit_encoder(self) -> OffsetCommitEncoder | None:
        """The encoder of the OffsetCommit version a plain commit (no producer id) is written
        in, if these definitions have the one ``OffsetCommitEncoder`` writes."""
        compiled = self._by_type.get(int(RecordType.OFFSET_COMMIT))
        return None if compiled is None else compiled.plain_commits

    def encode_key(self, record_type: RecordType, key: Any) -> bytes:
        c = self._compiled(record_type)
        if c.fast_key is not None:
            return c.fast_key(key)
        return _KEY_HEADER.pack(record_type) + _write(c.key_schema, key)

    def encode_value(self, record_type: RecordType, value: Any | None, version: int | None = None) -> bytes | None:
        if value is None:
            return None
        c = self._compiled(record_type)
        v = c.version_for(value) if version is None else version
        fast = c.fast_values.get(v)
        if fast is not None:
            return fast(value)
        return _VALUE_HEADER.pack(record_type, v) + _write(c.value_schemas[v], value)

    def encode(self, record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
        return self.encode_key(record.type, record.key), self.encode_value(record.type, record.value)

    def encode_all(self, records: Sequence[CoordinatorRecord]) -> list[tuple[bytes, bytes | None]]:
        """``[encode(r) for r in records]``, with one lookup of the record type's encoders per
        run of records of one type (a 100-partition commit is a run of 100 OffsetCommits)."""
        out: list[tuple[bytes, bytes | None]] = []
        kind: Any = None
        memo_key: Callable[[Any], Hashable | None] | None = None
        memo: dict[Hashable, bytes] = {}
        key_of: Callable[[Any], bytes] | None = None
        run: Callable[[Sequence[Any], int, list[tuple[bytes, bytes | None]]], int] | None = None
        at, end = 0, len(records)
        while at < end:
            record = records[at]
            if record.type is not kind or key_of is None:
                kind = record.type
                compiled = self._compiled(kind)
                key_of, versions, fast, latest, run, memo_key, memo = (
                    compiled.fast_key,
                    compiled.version_checks,
                    compiled.fast_values,
                    compiled.latest_version,
                    compiled.run_encoder,
                    compiled.memo_key,
                    compiled.memo,
                )
                if key_of is None:
                    out.append(self.encode(record))
                    at += 1
                    continue
            if run is not None:
                stop = run(records, at, out)
                if stop > at:
                    at = stop
                    continue
            at += 1
            value = record.value
            if value is None:
                out.append((key_of(record.key), None))
                continue
            memo_at = None if memo_key is None else memo_key(value)
            if memo_at is not None:
                known = memo.get(memo_at)
                if known is not None:
                    out.append((key_of(record.key), known))
                    continue
            version = latest
            for candidate, lacking, defaults in versions:
                if lacking(value) == defaults:
                    version = candidate
                    break
            writer = fast.get(version)
            encoded = writer(value) if writer is not None else self.encode_value(kind, value)
            if memo_at is not None:
                if len(memo) >= VALUE_MEMO_SIZE:
                    memo.clear()
                memo[memo_at] = encoded  # type: ignore[assignment]
            out.append((key_of(record.key), encoded))
        return out

    def decode(self, key: bytes | None, value: bytes | None) -> CoordinatorRecord:
        """Decode one log record; raises RecordDecodeError on anything unreadable."""
        if key is None or len(key) < _KEY_HEADER.size:
            raise RecordDecodeError("record has no key or a truncated key header")
        (record_type,) = _KEY_HEADER.unpack_from(key)
        c = self._compiled(record_type)
        try:
            if c.key_reader is not None:
                key_obj = c.key_reader(key, _KEY_HEADER.size)[0]
            else:
                key_dict = schemaless_reader(io.BytesIO(key[_KEY_HEADER.size :]), c.key_schema, None)
                key_obj = from_avro(c.definition.key_cls, key_dict)  # type: ignore[arg-type]
        except Exception as exc:  # fastavro raises several unrelated types on bad bytes
            raise RecordDecodeError(f"bad key body for record type {record_type}: {exc!r}") from exc
        if value is None:
            return CoordinatorRecord(c.record_type, key_obj, None)
        return CoordinatorRecord(c.record_type, key_obj, self._decode_value(c, value))

    def decode_value(self, record_type: int, value: bytes) -> Any:
        """Decode a value alone (its key read elsewhere); raises RecordDecodeError as ``decode``."""
        return self._decode_value(self._compiled(record_type), value)

    def _decode_value(self, c: _Compiled, value: bytes) -> Any:
        record_type = int(c.record_type)
        if len(value) < _VALUE_HEADER.size:
            raise RecordDecodeError("value shorter than its header")
        value_type, version = _VALUE_HEADER.unpack_from(value)
        if value_type != record_type:
            raise RecordDecodeError(f"value type {value_type} does not match key type {record_type}")
        writer = c.value_schemas.get(version)
        if writer is None:
            raise RecordDecodeError(f"record type {record_type} has no schema version {version}")
        compiled = c.value_readers.get(version)
        if compiled is not None:
            try:
                value_obj, end = compiled(value, _VALUE_HEADER.size)
            except Exception as exc:
                raise RecordDecodeError(f"bad value body for record type {record_type} v{version}: {exc!r}") from exc
            if end != len(value):
                raise RecordDecodeError(f"trailing bytes after value body of record type {record_type}")
            return value_obj
        body = io.BytesIO(value[_VALUE_HEADER.size :])
        try:
            reader = None if version == c.latest_version else c.latest_schema
            value_dict = schemaless_reader(body, writer, reader)
            value_obj = from_avro(c.definition.value_cls, value_dict)  # type: ignore[arg-type]
        except Exception as exc:
            raise RecordDecodeError(f"bad value body for record type {record_type} v{version}: {exc!r}") from exc
        if body.tell() != len(value) - _VALUE_HEADER.size:
            raise RecordDecodeError(f"trailing bytes after value body of record type {record_type}")
        return value_obj


def record_type_of(key: bytes | None) -> int:
    """The record type a key's header names, without decoding the key body."""
    if key is None or len(key) < _KEY_HEADER.size:
        raise RecordDecodeError("record has no key or a truncated key header")
    return int(_KEY_HEADER.unpack_from(key)[0])


DEFAULT_CODEC = RecordCodec()
encode_key = DEFAULT_CODEC.encode_key
encode_value = DEFAULT_CODEC.encode_value
encode = DEFAULT_CODEC.encode
encode_all = DEFAULT_CODEC.encode_all
decode = DEFAULT_CODEC.decode
