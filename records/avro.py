"""Small helpers to declare Avro schemas and to move between dataclasses and Avro dicts.

The coordinator keeps record values in memory as frozen dataclasses; fastavro works on
plain dicts. Conversion is generic over the dataclass type hints so that a record type is
declared once as a dataclass plus its (versioned, immutable) Avro schemas.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any

AvroType = str | dict[str, Any] | list[Any]
FieldSpec = tuple[str, AvroType] | tuple[str, AvroType, Any]

_NO_DEFAULT = object()


def field(name: str, avro_type: AvroType, default: Any = _NO_DEFAULT) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": avro_type}
    if default is not _NO_DEFAULT:
        out["default"] = default
    return out


def record(name: str, fields: list[FieldSpec]) -> dict[str, Any]:
    """An Avro record schema from ``(name, type[, default])`` tuples."""
    return {
        "type": "record",
        "name": name,
        "fields": [field(*spec) for spec in fields],
    }


def optional(avro_type: AvroType) -> list[AvroType]:
    return ["null", avro_type]


def array(items: AvroType) -> dict[str, Any]:
    return {"type": "array", "items": items}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _dataclass_in(tp: Any) -> type | None:
    """The dataclass named by ``tp`` if ``tp`` is ``D`` or ``D | None``."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        for arg in typing.get_args(tp):
            found = _dataclass_in(arg)
            if found is not None:
                return found
    return None


def _convert_in(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    inner = _dataclass_in(tp)
    if inner is not None:
        return from_avro(inner, value)
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        (item_tp, *_) = typing.get_args(tp)
        items = [_convert_in(item_tp, v) for v in value]
        return tuple(items) if origin is tuple else items
    return value


def from_avro(cls: type[Any], data: dict[str, Any]) -> Any:
    """Build dataclass ``cls`` from a decoded Avro dict (nested dataclasses included)."""
    hints = _hints(cls)
    kwargs = {
        f.name: _convert_in(hints[f.name], data[f.name])
        for f in dataclasses.fields(cls)
        if f.name in data
    }
    return cls(**kwargs)


def to_avro(obj: Any) -> Any:
    """Dataclass (possibly nested) to the plain structure fastavro writes."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_avro(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_avro(v) for v in obj]
    return obj
