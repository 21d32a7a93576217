"""Seeded random instances of any schema-described message, filled only where a version has fields."""

from __future__ import annotations

import random
import uuid
from typing import Any

from groupcoord.coordinator.messages.schema import Field, Struct

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}


def _primitive(kind: str, rng: random.Random) -> Any:
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return rng.randint(low, high)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.uniform(-1e6, 1e6)
    if kind == "string":
        # A two-byte UTF-8 character checks lengths are counted in bytes, not characters.
        return "".join(rng.choice("abcxyz-é") for _ in range(rng.randint(0, 12)))
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 20))
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(kind)


def _value(f: Field, version: int, rng: random.Random, depth: int) -> Any:
    if version in f.nullable and rng.random() < 0.25:
        return None
    if f.kind == "array":
        count = rng.randint(0, 3 if depth < 3 else 1)
        if f.struct is not None:
            return [sample(f.struct, version, rng, depth + 1) for _ in range(count)]
        return [_primitive(f.item, rng) for _ in range(count)]
    if f.kind == "struct":
        assert f.struct is not None
        return sample(f.struct, version, rng, depth + 1)
    return _primitive(f.kind, rng)


def sample(cls: type[Struct], version: int, rng: random.Random, depth: int = 0) -> Any:
    obj = cls()
    for f in cls.SCHEMA:
        if version in f.versions:
            setattr(obj, f.name, _value(f, version, rng, depth))
    return obj
