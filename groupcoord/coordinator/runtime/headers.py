"""Kafka record headers the runtime puts on every record it writes.

``gc.e`` carries the writer's shard epoch (int32): replay ignores records from an epoch older
than one already seen, which fences a zombie owner. ``gc.b`` marks records of an atomic batch
(int32 index, int32 count), so a batch cut short by a crash is never half-applied. Headers are
used instead of value fields because tombstones have no value.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

EPOCH_HEADER = "gc.e"
BATCH_HEADER = "gc.b"
_EPOCH = struct.Struct(">i")
_BATCH = struct.Struct(">ii")

Headers = list[tuple[str, bytes]]


def make_headers(epoch: int, index: int, count: int) -> Headers:
    headers: Headers = [(EPOCH_HEADER, _EPOCH.pack(epoch))]
    if count > 1:
        headers.append((BATCH_HEADER, _BATCH.pack(index, count)))
    return headers


@functools.lru_cache(maxsize=32)
def batch_headers(epoch: int, count: int) -> list[Headers]:
    """``make_headers(epoch, i, count)`` for every i of a batch of ``count`` (one record: itself
    alone), with the epoch header packed once. Cached (an epoch lasts, and commits come in a
    few sizes: 3% of a 100-partition commit's samples went to making them): the lists are
    shared, and no caller may change them."""
    epoch_header = (EPOCH_HEADER, _EPOCH.pack(epoch))
    if count <= 1:
        return [[epoch_header]]
    pack = _BATCH.pack
    return [[epoch_header, (BATCH_HEADER, pack(i, count))] for i in range(count)]


def parse_headers(headers: Sequence[tuple[str, Any]] | None) -> tuple[int, tuple[int, int] | None]:
    """(epoch, (index, count) or None) from a record's headers; malformed headers raise ValueError."""
    epoch = 0
    batch: tuple[int, int] | None = None
    for name, raw in headers or ():
        if isinstance(raw, str):
            raw = raw.encode()
        if name == EPOCH_HEADER and raw is not None:
            (epoch,) = _EPOCH.unpack(raw)
        elif name == BATCH_HEADER and raw is not None:
            index, count = _BATCH.unpack(raw)
            if not 0 <= index < count:
                raise ValueError(f"bad batch header {index}/{count}")
            batch = (index, count)
    return epoch, batch
