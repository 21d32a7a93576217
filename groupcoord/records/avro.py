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
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def dataclass_in(tp: Any) -> type | None:
    """The dataclass named by ``tp`` if ``tp`` is ``D`` or ``D | None``."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        for arg in typing.get_args(tp):
            found = dataclass_in(arg)
            if found is not None:
                return found
    return None


Converter = typing.Callable[[Any], Any]


def _converter(tp: Any) -> Converter | None:
    """How to turn a decoded Avro value into a value of type ``tp`` (None: use it as is)."""
    inner = dataclass_in(tp)
    if inner is not None:
        return lambda v: None if v is None else from_avro(inner, v)
    if typing.get_origin(tp) is list:
        (item_tp,) = typing.get_args(tp)
        item = _converter(item_tp)
        if item is not None:
            return lambda v: [item(x) for x in v]
    return None


@cache
def _plan(cls: Any) -> tuple[tuple[str, Converter | None], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls))


@cache
def _flat(cls: Any) -> bool:
    """Whether every field of ``cls`` is taken as decoded (no nested dataclass to build)."""
    return all(convert is None for _, convert in _plan(cls))


def from_avro(cls: Any, data: dict[str, Any]) -> Any:
    """Build dataclass ``cls`` from a decoded Avro dict (nested dataclasses included)."""
    if _flat(cls):
        try:
            # The common case on the load path: the dict holds exactly the dataclass's fields.
            return cls(**data)
        except TypeError:
            pass
    kwargs = {}
    for name, convert in _plan(cls):
        if name in data:
            value = data[name]
            kwargs[name] = value if convert is None else convert(value)
    return cls(**kwargs)


@cache
def _field_names(cls: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def to_avro(obj: Any) -> Any:
    """Dataclass (possibly nested) to the plain structure fastavro writes."""
    if isinstance(obj, (str, int, bytes, float, bool)) or obj is None:
        return obj
    if isinstance(obj, (list, tuple)):
        return [to_avro(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: to_avro(getattr(obj, name)) for name in _field_names(type(obj))}
    return obj
