"""Field-by-name conversion between the gateway's wire dataclasses and the logic's models.

Both sides name fields after the Kafka schemas (snake_case), so a conversion is a copy of the
fields the target declares, recursing into nested structs and lists of structs. Fields the source
lacks keep the target's default; ``overrides`` sets the rest (``api_version``, say). Topic ids
are ``uuid.UUID`` on the wire and Kafka's string form in the logic; ``topic_id`` fields are
translated between the two.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import uuid
from functools import cache
from typing import Any, TypeVar, cast

from coordinator.service.metadata_cache import topic_id_string, topic_id_uuid
from records.avro import dataclass_in

T = TypeVar("T")

_MISSING = object()


def _sequence_of(tp: Any) -> tuple[type, type | None] | None:
    """(list or tuple, element dataclass or None) if ``tp`` is a list/tuple type (maybe optional)."""
    candidates = typing.get_args(tp) if isinstance(tp, types.UnionType) else (tp,)
    for candidate in candidates:
        origin = typing.get_origin(candidate)
        if origin in (list, tuple):
            args = typing.get_args(candidate)
            return origin, dataclass_in(args[0]) if args else None
    return None


@cache
def _plan(cls: Any) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.init)


def _topic_id(value: Any, tp: Any) -> Any:
    if isinstance(value, uuid.UUID) and tp in (str, str | None):
        return None if value.int == 0 and tp == str | None else topic_id_string(value)
    if isinstance(value, str) and tp in (uuid.UUID, uuid.UUID | None):
        return topic_id_uuid(value)
    if value is None and tp is uuid.UUID:
        return uuid.UUID(int=0)
    return value


def _value(value: Any, tp: Any) -> Any:
    if value is None:
        return None
    struct = dataclass_in(tp)
    if struct is not None and dataclasses.is_dataclass(value):
        return convert(value, struct)
    seq = _sequence_of(tp)
    if seq is not None and isinstance(value, (list, tuple)):
        container, element = seq
        items = [convert(v, element) if element is not None else v for v in value]
        return container(items)
    return value


def convert(source: Any, target: type[T], **overrides: Any) -> T:
    kwargs: dict[str, Any] = {}
    plan: tuple[tuple[str, Any], ...] = _plan(cast(Any, target))
    for name, tp in plan:
        if name in overrides:
            kwargs[name] = overrides[name]
            continue
        value = getattr(source, name, _MISSING)
        if value is _MISSING:
            continue
        kwargs[name] = _topic_id(value, tp) if name == "topic_id" else _value(value, tp)
    return target(**kwargs)
