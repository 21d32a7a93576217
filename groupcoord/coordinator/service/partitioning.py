"""Which log partition (shard) holds a group: the rule Apache Kafka uses for __consumer_offsets."""

from __future__ import annotations

import functools


def java_string_hash(value: str) -> int:
    """``String.hashCode()`` of Java: 31-polynomial over UTF-16 code units, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# Every request names its group, and the same groups come back every heartbeat interval: the
# hash, a loop over the id's characters, is computed once per group id while it stays in use.
@functools.lru_cache(maxsize=65536)
def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 instead of overflowing.
    return (0 if h == -(1 << 31) else abs(h)) % partitions
