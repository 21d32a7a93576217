"""Avro binary encoding, compiled from a schema into plain Python closures, for the write path.

fastavro's ``schemaless_writer`` is a C extension, yet each call pays for a stream, a schema walk
and the dataclass turned into a dict first (``to_avro``): profiled on 100-partition commits it was
the largest single cost of the write path (about 17% of the process's samples, two calls per
record). The records the coordinator writes use a small part of Avro (strings, ints, longs,
booleans, bytes, nullable unions, arrays and nested records), which this module encodes straight
from the dataclass's attributes. The bytes must be exactly fastavro's, since keys are compared as
bytes by compaction and by the replayer: ``tests/unit/test_avro_writer.py`` checks that for every
record definition. A schema using anything else compiles to None and is written by fastavro.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

# (the output parts, a value) -> None; the encoded value is appended to the parts.
Writer = Callable[[list[bytes], Any], None]

_ONE_BYTE = [bytes((i,)) for i in range(128)]
_NULL_BRANCH, _VALUE_BRANCH = b"\x00", b"\x02"  # union branch 0 and 1, zigzag varints


def write_long(out: list[bytes], n: int) -> None:
    # Zigzag, then base-128 varint, low groups first: Avro's int and long encodings (the 32-bit
    # zigzag gives the same bytes as the 64-bit one for every value an int field can hold).
    z = (n << 1) ^ (n >> 63)
    if z < 128:
        out.append(_ONE_BYTE[z])
        return
    buf = bytearray()
    while z > 127:
        buf.append((z & 127) | 128)
        z >>= 7
    buf.append(z)
    out.append(bytes(buf))


def _write_bytes(out: list[bytes], data: bytes) -> None:
    write_long(out, len(data))
    out.append(data)


def write_string(out: list[bytes], text: str) -> None:
    data = text.encode()
    write_long(out, len(data))
    out.append(data)


def _write_boolean(out: list[bytes], flag: bool) -> None:
    out.append(b"\x01" if flag else b"\x00")


_PRIMITIVES: dict[str, Writer] = {
    "int": write_long,
    "long": write_long,
    "string": write_string,
    "bytes": _write_bytes,
    "boolean": _write_boolean,
}


def _nullable(inner: Writer) -> Writer:
    def write(out: list[bytes], value: Any) -> None:
        if value is None:
            out.append(_NULL_BRANCH)
        else:
            out.append(_VALUE_BRANCH)
            inner(out, value)

    return write


def _array(item: Writer) -> Writer:
    def write(out: list[bytes], values: Any) -> None:
        # One block holding every item, then the empty block that ends the array (fastavro's
        # layout); an empty array is the end block alone.
        if values:
            write_long(out, len(values))
            for value in values:
                item(out, value)
        out.append(b"\x00")

    return write


def _record(schema: dict[str, Any], named: dict[str, Writer]) -> Writer | None:
    fields: list[tuple[Callable[[Any], Any], Writer]] = []

    def write(out: list[bytes], obj: Any) -> None:
        for get, writer in fields:
            writer(out, get(obj))

    # Named before its fields, as Avro scopes names (a later field may refer to it by name).
    named[schema["name"]] = write
    for f in schema["fields"]:
        writer = _compile(f["type"], named)
        if writer is None:
            return None
        fields.append((attrgetter(f["name"]), writer))
    return write


def _compile(schema: Any, named: dict[str, Writer]) -> Writer | None:
    if isinstance(schema, str):
        return _PRIMITIVES.get(schema) or named.get(schema)
    if isinstance(schema, list):
        if len(schema) == 2 and schema[0] == "null":
            inner = _compile(schema[1], named)
            return None if inner is None else _nullable(inner)
        return None
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "record":
            return _record(schema, named)
        if kind == "array":
            item = _compile(schema["items"], named)
            return None if item is None else _array(item)
        if isinstance(kind, str) and len(schema) == 1:
            return _PRIMITIVES.get(kind)
    return None


def compile_writer(schema: Any) -> Writer | None:
    """A writer for ``schema`` (as declared with ``groupcoord.records.avro``, not parsed), or None if it
    uses anything this module does not encode."""
    return _compile(schema, {})


def compile_encoder(schema: Any, prefix: bytes) -> Callable[[Any], bytes] | None:
    """``obj -> prefix + its Avro body`` for a record schema, or None (use fastavro)."""
    writer = compile_writer(schema)
    if writer is None:
        return None

    def encode(obj: Any) -> bytes:
        out = [prefix]
        writer(out, obj)
        return b"".join(out)

    return encode
