"""Sans-IO encoder and decoder for schema-described messages.

A (struct class, version) pair is compiled once into a pair of closures and cached, so steady-state
decoding is a flat loop over precomputed field readers rather than a walk over the schema.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from groupcoord.coordinator.messages.schema import Field, Struct

S = TypeVar("S", bound=Struct)

Reader = Callable[[memoryview, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]


class CodecError(ValueError):
    """The bytes do not form a valid message for the schema and version asked for."""


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_F64 = struct.Struct(">d")

# Kafka's generated readers and writers refuse strings longer than a classic int16 length allows,
# in flexible (compact) versions too, where the varint length could otherwise say anything.
MAX_STRING_BYTES = 0x7FFF
# Kafka 4.4's readers refuse, before allocating anything, an array of more elements than this and a
# tagged-field section of more fields than this (whatever the frame's size would allow).
MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def read_uvarint(buf: memoryview | bytes | bytearray, pos: int) -> tuple[int, int]:
    """An unsigned varint in its one canonical (shortest) encoding.

    A padded encoding (``0x98 0x00`` for 24) decodes to the same number on a broker, so anything
    that looks at a request's bytes could be told one thing while the broker reads another: it is
    refused as malformed, like any other broken frame.
    """
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise CodecError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0 and shift:
                raise CodecError("non-minimal varint")
            if value > 0xFFFFFFFF:
                raise CodecError("varint beyond 32 bits")
            return value, pos
        shift += 7
        if shift > 28:
            raise CodecError("varint longer than 5 bytes")


def read_tag_count(buf: memoryview | bytes | bytearray, pos: int) -> tuple[int, int]:
    """The number of fields of a tagged-field section, refused beyond ``MAX_TAGGED_FIELDS``."""
    count, pos = read_uvarint(buf, pos)
    if count > MAX_TAGGED_FIELDS:
        raise CodecError(f"{count} tagged fields exceed the limit of {MAX_TAGGED_FIELDS}")
    return count, pos


def check_array_count(n: int, remaining: int) -> None:
    """Refuse an array count before anything is allocated for it."""
    if n > MAX_ARRAY_ELEMENTS:
        raise CodecError(f"array of {n} elements exceeds the limit of {MAX_ARRAY_ELEMENTS}")
    # Every element takes at least one byte: a count beyond the remaining bytes is corrupt.
    if n > remaining:
        raise CodecError("array count exceeds the remaining bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _fixed(fmt: struct.Struct) -> tuple[Reader, Writer]:
    size = fmt.size
    unpack_from = fmt.unpack_from
    pack = fmt.pack

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise CodecError("truncated fixed-width field")
        return unpack_from(buf, pos)[0], pos + size

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return read, write


def _read_bool(buf: memoryview, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise CodecError("truncated bool")
    return buf[pos] != 0, pos + 1


def _write_bool(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _read_uuid(buf: memoryview, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(buf):
        raise CodecError("truncated uuid")
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def _write_uuid(out: bytearray, value: Any) -> None:
    out += value.bytes


def _length_reader(flexible: bool, classic: struct.Struct) -> Callable[[memoryview, int], tuple[int, int]]:
    """Length prefix: ``-1`` means null; flexible versions store ``length + 1`` as a varint."""
    if flexible:

        def read_flex(buf: memoryview, pos: int) -> tuple[int, int]:
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        return read_flex
    unpack_from = classic.unpack_from
    size = classic.size

    def read_classic(buf: memoryview, pos: int) -> tuple[int, int]:
        if pos + size > len(buf):
            raise CodecError("truncated length")
        return int(unpack_from(buf, pos)[0]), pos + size

    return read_classic


def _length_writer(flexible: bool, classic: struct.Struct) -> Callable[[bytearray, int], None]:
    if flexible:

        def write_flex(out: bytearray, n: int) -> None:
            write_uvarint(out, n + 1)

        return write_flex
    pack = classic.pack

    def write_classic(out: bytearray, n: int) -> None:
        out += pack(n)

    return write_classic


def _blob(flexible: bool, nullable: bool, text: bool, classic: struct.Struct) -> tuple[Reader, Writer]:
    read_len = _length_reader(flexible, classic)
    write_len = _length_writer(flexible, classic)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            if not nullable:
                raise CodecError("null in a non-nullable field")
            return None, pos
        if text and n > MAX_STRING_BYTES:
            raise CodecError(f"string of {n} bytes exceeds the {MAX_STRING_BYTES}-byte limit")
        end = pos + n
        if end > len(buf):
            raise CodecError("truncated string or bytes")
        raw = bytes(buf[pos:end])
        if not text:
            return raw, end
        try:
            return raw.decode("utf-8"), end
        except UnicodeDecodeError as exc:
            raise CodecError("string is not valid UTF-8") from exc

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise CodecError("None in a non-nullable field")
            write_len(out, -1)
            return
        raw = value.encode("utf-8") if text else bytes(value)
        if text and len(raw) > MAX_STRING_BYTES:
            raise CodecError(f"string of {len(raw)} bytes exceeds the {MAX_STRING_BYTES}-byte limit")
        write_len(out, len(raw))
        out += raw

    return read, write


def _primitive(kind: str, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
    if kind == "bool":
        return _read_bool, _write_bool
    if kind == "int8":
        return _fixed(_I8)
    if kind == "int16":
        return _fixed(_I16)
    if kind == "int32":
        return _fixed(_I32)
    if kind == "int64":
        return _fixed(_I64)
    if kind == "uint16":
        return _fixed(_U16)
    if kind == "float64":
        return _fixed(_F64)
    if kind == "uuid":
        return _read_uuid, _write_uuid
    if kind == "string":
        return _blob(flexible, nullable, True, _I16)
    if kind in ("bytes", "records"):
        return _blob(flexible, nullable or kind == "records", False, _I32)
    raise CodecError(f"unknown field kind {kind!r}")


def _array(element: tuple[Reader, Writer], flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
    read_item, write_item = element
    read_len = _length_reader(flexible, _I32)
    write_len = _length_writer(flexible, _I32)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_len(buf, pos)
        if n < 0:
            if not nullable:
                raise CodecError("null array in a non-nullable field")
            return None, pos
        check_array_count(n, len(buf) - pos)
        items = []
        for _ in range(n):
            item, pos = read_item(buf, pos)
            items.append(item)
        return items, pos

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise CodecError("None in a non-nullable array")
            write_len(out, -1)
            return
        write_len(out, len(value))
        if type(value) is EncodedItems:
            out += value.data
            return
        for item in value:
            write_item(out, item)

    return read, write


class EncodedItems:
    """An array field's items already encoded, one after another, by the writer ``item_writer``
    gives for the field's struct at the answer's version (``gateway/sliced_encoding``): written
    as they are, after the item count."""

    __slots__ = ("count", "data")

    def __init__(self, count: int, data: bytes) -> None:
        self.count = count
        self.data = data

    def __len__(self) -> int:
        return self.count


def _nullable_struct(inner: tuple[Reader, Writer]) -> tuple[Reader, Writer]:
    read_inner, write_inner = inner

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos >= len(buf):
            raise CodecError("truncated struct marker")
        marker = _I8.unpack_from(buf, pos)[0]
        if marker < 0:
            return None, pos + 1
        return read_inner(buf, pos + 1)

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            out += _I8.pack(-1)
            return
        out += _I8.pack(1)
        write_inner(out, value)

    return read, write


def _field_codec(f: Field, version: int, flexible: bool) -> tuple[Reader, Writer]:
    nullable = version in f.nullable
    if f.kind == "array":
        if f.struct is not None:
            element = _struct_codec(f.struct, version, flexible)
        else:
            element = _primitive(f.item, flexible, False)
        return _array(element, flexible, nullable)
    if f.kind == "struct":
        assert f.struct is not None
        inner = _struct_codec(f.struct, version, flexible)
        return _nullable_struct(inner) if nullable else inner
    return _primitive(f.kind, flexible, nullable)


def item_writer(f: Field, version: int, flexible: bool) -> Writer:
    """The writer of one item of an array-of-structs field at a version."""
    assert f.kind == "array" and f.struct is not None
    return _struct_codec(f.struct, version, flexible)[1]


def field_reader(f: Field, version: int, flexible: bool) -> Reader:
    """The reader of one field at a version (for readers of selected fields: ``gateway/scan``)."""
    return _field_codec(f, version, flexible)[0]


def field_writer(f: Field, version: int, flexible: bool) -> Writer:
    """The writer of one field at a version (for writers of selected fields: ``gateway/commit_columns``)."""
    return _field_codec(f, version, flexible)[1]


def _is_default(f: Field, value: Any) -> bool:
    if f.kind == "array":
        return not value
    if f.kind == "struct":
        return value is None
    return bool(value == f.default)


_compiled: dict[tuple[type[Struct], int, bool], tuple[Reader, Writer]] = {}


def _struct_codec(cls: type[Struct], version: int, flexible: bool) -> tuple[Reader, Writer]:
    key = (cls, version, flexible)
    found = _compiled.get(key)
    if found is None:
        found = _compiled[key] = _compile_struct(cls, version, flexible)
    return found


def _compile_struct(cls: type[Struct], version: int, flexible: bool) -> tuple[Reader, Writer]:
    plain: list[tuple[str, Reader, Writer]] = []
    tagged: dict[int, tuple[Field, Reader, Writer]] = {}
    for f in cls.SCHEMA:
        if version not in f.versions:
            continue
        read, write = _field_codec(f, version, flexible)
        if flexible and version in f.tagged:
            tagged[f.tag] = (f, read, write)
        else:
            plain.append((f.name, read, write))
    tag_order = sorted(tagged)

    def read_struct(buf: memoryview, pos: int) -> tuple[Any, int]:
        obj = cls()
        for name, read, _ in plain:
            value, pos = read(buf, pos)
            setattr(obj, name, value)
        if flexible:
            count, pos = read_tag_count(buf, pos)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise CodecError("truncated tagged field")
                known = tagged.get(tag)
                if known is None:
                    obj.unknown_tagged_fields[tag] = bytes(buf[pos:end])
                else:
                    f, read, _ = known
                    value, used = read(buf[:end], pos)
                    if used != end:
                        raise CodecError(f"tagged field {tag} has trailing bytes")
                    setattr(obj, f.name, value)
                pos = end
        return obj, pos

    def write_struct(out: bytearray, obj: Any) -> None:
        for name, _, write in plain:
            write(out, getattr(obj, name))
        if not flexible:
            return
        chunks: dict[int, bytes] = dict(obj.unknown_tagged_fields)
        for tag in tag_order:
            f, _, write = tagged[tag]
            value = getattr(obj, f.name)
            if _is_default(f, value):
                continue
            part = bytearray()
            write(part, value)
            chunks[tag] = bytes(part)
        write_uvarint(out, len(chunks))
        for tag in sorted(chunks):
            write_uvarint(out, tag)
            write_uvarint(out, len(chunks[tag]))
            out += chunks[tag]

    return read_struct, write_struct


def decode_struct(
    cls: type[S], data: bytes | bytearray | memoryview, version: int, flexible: bool, exact: bool = True
) -> S:
    """Decode ``data`` as one ``cls``; trailing bytes are an error unless ``exact`` is False (then
    the message is what a broker reads: the prefix, as brokers ignore what follows it)."""
    buf = data if isinstance(data, memoryview) else memoryview(data)
    read, _ = _struct_codec(cls, version, flexible)
    try:
        obj, pos = read(buf, 0)
    except CodecError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise CodecError(str(exc)) from exc
    if exact and pos != len(buf):
        raise CodecError(f"{len(buf) - pos} unread bytes after {cls.__name__} v{version}")
    if not isinstance(obj, cls):
        raise CodecError(f"decoded {type(obj).__name__}, expected {cls.__name__}")
    return obj


def encode_struct(obj: Struct, version: int, flexible: bool, out: bytearray | None = None) -> bytearray:
    buf = bytearray() if out is None else out
    _, write = _struct_codec(type(obj), version, flexible)
    try:
        write(buf, obj)
    except (struct.error, AttributeError, TypeError) as exc:
        raise CodecError(f"cannot encode {type(obj).__name__} v{version}: {exc}") from exc
    return buf
