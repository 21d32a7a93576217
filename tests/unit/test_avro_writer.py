"""The compiled Avro writer gives exactly fastavro's bytes for every record definition (keys are
compared as bytes by compaction and replay, so one differing byte would split a key in two)."""

from __future__ import annotations

import io
from typing import Any

from fastavro import parse_schema, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.records import CoordinatorRecord, RecordCodec, RecordType
from groupcoord.records.avro import from_avro, to_avro
from groupcoord.records.avro_writer import compile_encoder, compile_writer
from groupcoord.records.definitions import DEFINITIONS, OffsetCommitKey, OffsetCommitValue

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_PRIMITIVE = {
    "int": _INT32,
    "long": _INT64,
    "string": st.text(max_size=300),
    "bytes": st.binary(max_size=300),
    "boolean": st.booleans(),
}


def _datum(schema: Any, named: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Values of ``schema`` as fastavro reads them (dicts for records)."""
    named = {} if named is None else named
    if isinstance(schema, str):
        return _PRIMITIVE[schema] if schema in _PRIMITIVE else named[schema]
    if isinstance(schema, list):
        return st.none() | _datum(schema[1], named)
    if schema["type"] == "array":
        return st.lists(_datum(schema["items"], named), max_size=4)
    if schema["type"] == "record":
        fields = {f["name"]: _datum(f["type"], named) for f in schema["fields"]}
        named[schema["name"]] = strategy = st.fixed_dictionaries(fields)
        return strategy
    return _PRIMITIVE[schema["type"]]


def _schemas() -> list[tuple[str, Any, Any]]:
    out = []
    for d in DEFINITIONS:
        out.append((f"{d.type.name} key", d.key_cls, d.key_schema))
        for version, schema in d.value_schemas.items():
            out.append((f"{d.type.name} value v{version}", d.value_cls, schema))
    return out


def test_every_shipped_schema_compiles() -> None:
    # Nothing the coordinator writes falls back to fastavro's slower path.
    assert [name for name, _, schema in _schemas() if compile_writer(schema) is None] == []


@st.composite
def _cases(draw: st.DrawFn) -> tuple[str, Any, Any]:
    name, cls, schema = draw(st.sampled_from(_schemas()))
    return name, schema, from_avro(cls, draw(_datum(schema)))


@settings(max_examples=400)
@given(_cases())
def test_same_bytes_as_fastavro(case: tuple[str, Any, Any]) -> None:
    name, schema, obj = case
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), to_avro(obj))
    encoder = compile_encoder(schema, b"P")
    assert encoder is not None
    assert encoder(obj) == b"P" + buf.getvalue(), name


def test_unsupported_schemas_fall_back() -> None:
    assert compile_writer({"type": "map", "values": "string"}) is None
    assert compile_writer(["null", "string", "int"]) is None
    assert compile_writer({"type": "record", "name": "R", "fields": [{"name": "d", "type": "double"}]}) is None


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["g", "group-ü", ""]),
            st.sampled_from(["t", "topic-2"]),
            _INT32,
            _INT64,
            _INT32,
            st.text(max_size=20),
            st.sampled_from([0, 1795651224840, -1]),
            st.sampled_from([-1, 1795651224840]),
            st.none() | st.sampled_from(["AAAAAAAAAAAAAAAAAAAAAA", "x"]),
        ),
        max_size=6,
    )
)
def test_offset_commits_encode_as_fastavro_whatever_came_before(rows: list[tuple[Any, ...]]) -> None:
    # The OffsetCommit encoder reuses the bytes the previous record shared with the next one:
    # every record must still be exactly fastavro's, whatever the previous one was.
    definition = next(d for d in DEFINITIONS if d.type == RecordType.OFFSET_COMMIT)
    codec = RecordCodec()
    for group, topic, partition, offset, epoch, metadata, ts, expire, topic_id in rows:
        key = OffsetCommitKey(group, topic, partition)
        value = OffsetCommitValue(offset, epoch, metadata, ts, expire, topic_id)
        key_buf, value_buf = io.BytesIO(), io.BytesIO()
        schemaless_writer(key_buf, parse_schema(definition.key_schema), to_avro(key))
        # A plain commit (no producer id) is written in version 1, the oldest that holds it.
        schemaless_writer(value_buf, parse_schema(definition.value_schemas[1]), to_avro(value))
        assert codec.encode_key(RecordType.OFFSET_COMMIT, key) == b"\x00\x01" + key_buf.getvalue()
        assert codec.encode_value(RecordType.OFFSET_COMMIT, value) == b"\x00\x01\x00\x01" + value_buf.getvalue()


@st.composite
def _records(draw: st.DrawFn) -> Any:
    d = draw(st.sampled_from(DEFINITIONS))
    key = from_avro(d.key_cls, draw(_datum(d.key_schema)))
    version = draw(st.sampled_from(sorted(d.value_schemas)))
    value = draw(st.none() | _datum(d.value_schemas[version]).map(lambda v: from_avro(d.value_cls, v)))
    return CoordinatorRecord(d.type, key, value)


@settings(max_examples=200)
@given(st.lists(_records(), max_size=12), st.booleans())
def test_encode_all_is_encode_of_each(records: list[Any], runs: bool) -> None:
    # Runs of one type (a commit's records) and mixed types, tombstones among them.
    if runs:
        records = sorted(records, key=lambda r: int(r.type))
    codec = RecordCodec()
    assert codec.encode_all(records) == [codec.encode(r) for r in records]
