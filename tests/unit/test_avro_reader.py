"""groupcoord/records/avro_reader.py reads exactly what fastavro reads, for every record definition whose
schema it compiles: the same records from the same bytes, and an error where fastavro fails."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.records.avro import from_avro
from groupcoord.records.avro_reader import compile_reader
from groupcoord.records.codec import CoordinatorRecord, RecordCodec, RecordDecodeError
from groupcoord.records.definitions import DEFINITIONS, RecordDef

FAST = RecordCodec()
FASTAVRO = RecordCodec(compiled_readers=False)


def _values(schema: Any) -> st.SearchStrategy[Any]:
    if isinstance(schema, dict) and schema.get("type") == "record":
        names = [f["name"] for f in schema["fields"]]
        return st.tuples(*(_values(f["type"]) for f in schema["fields"])).map(
            lambda vs: dict(zip(names, vs, strict=True))
        )
    if isinstance(schema, dict):
        return _values(schema["type"])
    if isinstance(schema, list):
        return st.none() | _values(schema[1])
    return {
        "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1),
        "string": st.text(max_size=40),
        "bytes": st.binary(max_size=40),
    }[schema]


COMPILED = [d for d in DEFINITIONS if compile_reader(d.key_schema, d.key_cls) is not None]


@st.composite
def records(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A record's bytes as fastavro writes them, its value in any schema version."""
    definition: RecordDef = draw(st.sampled_from(COMPILED))
    key = from_avro(definition.key_cls, draw(_values(definition.key_schema)))
    compiled = sorted(FAST._by_type[int(definition.type)].value_readers)
    version = draw(st.sampled_from(compiled)) if compiled else definition.latest_version
    value = None
    if len(compiled) > 0 and draw(st.booleans()):
        value = from_avro(definition.value_cls, draw(_values(definition.value_schemas[version])))
    return (
        FASTAVRO.encode_key(definition.type, key),
        FASTAVRO.encode_value(definition.type, value, version),
    )


def _decoded(codec: RecordCodec, key: bytes, value: bytes | None) -> CoordinatorRecord | str:
    try:
        return codec.decode(key, value)
    except RecordDecodeError as exc:
        # Avro varints end by their 10th byte; the compiled reader refuses an 11th, fastavro not.
        return "too long" if "longer than 10 bytes" in str(exc) else "error"


def test_the_records_that_fill_a_log_of_many_groups_are_compiled() -> None:
    # Offset commits (every version), consumer group and assignment epochs, shard epochs.
    compiled = {(int(t), v) for t, c in FAST._by_type.items() for v in c.value_readers}
    offsets = next(d for d in DEFINITIONS if int(d.type) == 1)
    assert {(1, v) for v in offsets.value_schemas} | {(3, 1), (6, 1), (100, 1)} <= compiled


@settings(max_examples=300, deadline=None)
@given(records())
def test_same_records_as_fastavro(record: tuple[bytes, bytes | None]) -> None:
    assert FAST.decode(*record) == FASTAVRO.decode(*record)


@settings(max_examples=500, deadline=None)
@given(records(), st.data())
def test_damaged_bytes_fail_where_fastavro_fails(record: tuple[bytes, bytes | None], data: st.DataObject) -> None:
    key, value = record
    target = data.draw(st.sampled_from(["key", "value"] if value is not None else ["key"]))
    raw = bytearray(key if target == "key" else value or b"")
    cut = data.draw(st.integers(2 if target == "key" else 4, len(raw)))
    damaged = bytes(raw[:cut]) + data.draw(st.binary(max_size=6))
    args = (damaged, value) if target == "key" else (key, damaged)
    fast, slow = _decoded(FAST, *args), _decoded(FASTAVRO, *args)
    assert fast == slow or fast == "too long"
