"""Avro binary decoding of flat records, compiled from a schema into plain Python closures, for
the load path.

A shard load decodes the newest record of every key in the log. When keys repeat (a group
committing the same partitions again and again) that is few records; when they do not (100,000
groups with their own offsets) it is every record, and then fastavro's ``schemaless_reader`` (a
stream, a schema walk, a dict per record) and the dataclass built from that dict were 70% of the
load's CPU, 16 us a record. The records that dominate such logs (offset commits, group and member
metadata keys) are flat: ints, longs, strings, bytes and nullable ones of those, which this module
reads straight from the bytes into the dataclass. Anything else compiles to None and is read by
fastavro, as are older schema versions (which need Avro's schema resolution).

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


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    data, pos = _read_bytes(buf, pos)
    return data.decode(), pos


_PRIMITIVES: dict[str, FieldReader] = {
    "int": read_long,
    "long": read_long,
    "string": _read_string,
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


def compile_reader(schema: Any, cls: Any) -> RecordReader | None:
    """A reader of ``schema`` (a record, as declared with ``records.avro``) into dataclass ``cls``,
    or None when the schema is not flat or the dataclass has fields the schema does not fill."""
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
    if names != [f.name for f in dataclasses.fields(cls)]:
        return None  # fields in another order, or defaults the dataclass fills: fastavro's path
    build: Any = cls
    steps = tuple(readers)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        values = []
        for step in steps:
            value, pos = step(buf, pos)
            values.append(value)
        return build(*values), pos

    return read
