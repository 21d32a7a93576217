"""Read a few fields of a message without building it: the topic names and ids a forwarded request
carries, at a fraction of a full decode's cost (a Fetch is checked on every forward).

A scanner walks the same layout as ``codec`` (same version rules, same refusals: non-minimal
varints, Kafka's array and tagged-field caps, truncation) but only the fields on the wanted paths
are read into values; everything else is stepped over. Compiled once per (class, version, paths).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.gateway.codec import (
    CodecError,
    check_array_count,
    field_reader,
    read_tag_count,
    read_uvarint,
)
from groupcoord.coordinator.messages.schema import Field, Struct

# Reads from ``pos``, appends what it found to ``out``, returns the position after the field.
Scanner = Callable[[memoryview, int, list[Any]], int]
Paths = tuple[tuple[str, ...], ...]

_FIXED = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "float64": 8, "uuid": 16}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _length(buf: memoryview, pos: int, flexible: bool, classic: struct.Struct) -> tuple[int, int]:
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    if pos + classic.size > len(buf):
        raise CodecError("truncated length")
    return int(classic.unpack_from(buf, pos)[0]), pos + classic.size


def _skip_primitive(kind: str, flexible: bool) -> Scanner:
    size = _FIXED.get(kind)
    if size is not None:

        def skip_fixed(buf: memoryview, pos: int, out: list[Any]) -> int:
            if pos + size > len(buf):
                raise CodecError("truncated fixed-width field")
            return pos + size

        return skip_fixed
    classic = _I16 if kind == "string" else _I32

    def skip_blob(buf: memoryview, pos: int, out: list[Any]) -> int:
        n, pos = _length(buf, pos, flexible, classic)
        if n > 0:
            if pos + n > len(buf):
                raise CodecError("truncated string or bytes")
            pos += n
        return pos

    return skip_blob


def _array(element: Scanner, flexible: bool) -> Scanner:
    def scan_array(buf: memoryview, pos: int, out: list[Any]) -> int:
        n, pos = _length(buf, pos, flexible, _I32)
        check_array_count(max(n, 0), len(buf) - pos)
        for _ in range(n):
            pos = element(buf, pos, out)
        return pos

    return scan_array


def _reader(f: Field, version: int, flexible: bool) -> Scanner:
    """A path's end: the value itself (a list of names is added name by name)."""
    read = field_reader(f, version, flexible)

    def scan_value(buf: memoryview, pos: int, out: list[Any]) -> int:
        value, pos = read(buf, pos)
        if isinstance(value, list):
            out.extend(value)
        elif value is not None:
            out.append(value)
        return pos

    return scan_value


def _field(f: Field, version: int, flexible: bool, paths: Paths) -> Scanner:
    if any(not p for p in paths):
        return _reader(f, version, flexible)
    if f.kind == "array":
        if f.struct is None:
            return _array(_skip_primitive(f.item, flexible), flexible)
        return _array(scanner(f.struct, version, flexible, paths), flexible)
    if f.kind == "struct":
        assert f.struct is not None
        inner = scanner(f.struct, version, flexible, paths)
        if version not in f.nullable:
            return inner

        def scan_nullable(buf: memoryview, pos: int, out: list[Any]) -> int:
            if pos >= len(buf):
                raise CodecError("truncated struct marker")
            return pos + 1 if buf[pos] >= 0x80 else inner(buf, pos + 1, out)

        return scan_nullable
    return _skip_primitive(f.kind, flexible)


_compiled: dict[tuple[type[Struct], int, bool, Paths], Scanner] = {}


def scanner(cls: type[Struct], version: int, flexible: bool, paths: Paths) -> Scanner:
    """A scanner of ``cls`` collecting the values at ``paths`` (attribute names, as in the class)."""
    key = (cls, version, flexible, paths)
    found = _compiled.get(key)
    if found is None:
        found = _compiled[key] = _compile(cls, version, flexible, paths)
    return found


def _compile(cls: type[Struct], version: int, flexible: bool, paths: Paths) -> Scanner:
    plain: list[Scanner] = []
    tagged: dict[int, Scanner] = {}
    for f in cls.SCHEMA:
        if version not in f.versions:
            continue
        mine = tuple(p[1:] for p in paths if p and p[0] == f.name)
        scan = _field(f, version, flexible, mine)
        if flexible and version in f.tagged:
            if mine:
                tagged[f.tag] = scan
        else:
            plain.append(scan)

    def scan_struct(buf: memoryview, pos: int, out: list[Any]) -> int:
        for scan in plain:
            pos = scan(buf, pos, out)
        if flexible:
            count, pos = read_tag_count(buf, pos)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise CodecError("truncated tagged field")
                known = tagged.get(tag)
                if known is not None and known(buf[:end], pos, out) != end:
                    raise CodecError(f"tagged field {tag} has trailing bytes")
                pos = end
        return pos

    return scan_struct


def scan(cls: type[Struct], data: memoryview, version: int, flexible: bool, paths: Paths) -> list[Any]:
    """The values at ``paths`` in ``data`` read as a ``cls`` (bytes after it are ignored, as a
    broker ignores them). Raises ``CodecError`` (or ``struct.error``/``IndexError``) when the
    bytes are not such a message."""
    out: list[Any] = []
    scanner(cls, version, flexible, paths)(data, 0, out)
    return out
