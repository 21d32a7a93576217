"""Avro binary decoding of flat records, compiled from a schema into plain Python closures, for
the load path.

A shard load decodes the newest record of every key in the log. When keys repeat (a group
committing the same partitions again and again) that is few records; when they do not (100,000
groups with their own offsets) it is every record, and then fastavro's ``schemaless_reader`` (a
stream, a schema walk, a dict per record) and the dataclass built from that dict were 70% of the
load's CPU, 16 us a record. The records that dominate such logs (offset commits, group and member
metadata keys) are flat: ints, longs, strings, bytes and nullable ones of those, which this module
reads straight from the bytes into the dataclass. Anything else compiles to None and is read by
fastavro, as is an older schema version unless the fields it lacks default alike in the newest
schema and in the dataclass (all Avro's schema resolution would do for it).

The results must be fastavro's: ``tests/unit/test_avro_reader.py`` decodes the same bytes both
ways for every record definition, malformed bytes included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

# (buffer, position) -> (value, position after it); raises IndexError or ValueError on bad bytes.
FieldReader = Callable[[bytes, int], tuple[Any, int]]
# (buffer, position) -> (dataclass instance, position after it)
RecordReader = Callable[[bytes, int], tuple[Any, int]]


class AvroReadError(ValueError):
    pass


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """Avro's int and long: a zigzag base-128 varint, low groups first."""
    b = buf[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise AvroReadError("varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    n &= 0xFFFFFFFFFFFFFFFF  # a 10th byte carries bits past 64, which fastavro drops too
    return (n >> 1) ^ -(n & 1), pos


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = read_long(buf, pos)
    end = pos + size
    if size < 0 or end > len(buf):
        raise AvroReadError(f"a length of {size} bytes past the end of the record")
    return buf[pos:end], end


def read_string(buf: bytes, pos: int) -> tuple[str, int]:
    data, pos = _read_bytes(buf, pos)
    return data.decode(), pos


_PRIMITIVES: dict[str, FieldReader] = {
    "int": read_long,
    "long": read_long,
    "string": read_string,
    "bytes": _read_bytes,
}


def _nullable(inner: FieldReader) -> FieldReader:
    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        branch, pos = read_long(buf, pos)
        if branch == 0:
            return None, pos
        if branch == 1:
            return inner(buf, pos)
        raise AvroReadError(f"union branch {branch} of a two-branch union")

    return read


def _field_reader(schema: Any) -> FieldReader | None:
    if isinstance(schema, dict) and len(schema) == 1:
        schema = schema.get("type")
    if isinstance(schema, str):
        return _PRIMITIVES.get(schema)
    if isinstance(schema, list) and len(schema) == 2 and schema[0] == "null":
        inner = _field_reader(schema[1])
        return None if inner is None else _nullable(inner)
    return None


def compile_reader(schema: Any, cls: Any, newest: Any = None) -> RecordReader | None:
    """A reader of ``schema`` (a record, as declared with ``groupcoord.records.avro``) into dataclass ``cls``,
    or None when the schema is not flat or its fields are not the dataclass's. An older version
    (``newest`` given) may hold the first fields only, when each field it lacks has the same default
    in ``newest`` (what Avro's schema resolution fills in) as in the dataclass."""
    if not (isinstance(schema, dict) and schema.get("type") == "record" and dataclasses.is_dataclass(cls)):
        return None
    readers: list[FieldReader] = []
    names: list[str] = []
    for f in schema["fields"]:
        reader = _field_reader(f["type"])
        if reader is None:
            return None
        readers.append(reader)
        names.append(f["name"])
    fields = dataclasses.fields(cls)
    if names != [f.name for f in fields[: len(names)]]:
        return None  # fields in another order: fastavro's path
    if len(names) < len(fields) and not _filled_alike(fields[len(names) :], newest):
        return None
    build: Any = cls
    steps = tuple(readers)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        values = []
        for step in steps:
            value, pos = step(buf, pos)
            values.append(value)
        return build(*values), pos

    return read


def _filled_alike(missing: tuple[dataclasses.Field[Any], ...], newest: Any) -> bool:
    defaults = {f["name"]: f["default"] for f in (newest or {}).get("fields", ()) if "default" in f}
    for f in missing:
        if f.name not in defaults:
            return False
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            return False
        if value != defaults[f.name]:
            return False
    return True
