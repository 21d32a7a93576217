"""The words of a share-partition: record states, acknowledgement types, ranges and limits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum


class RecordState(IntEnum):
    """A record's state in a share-partition (Kafka's ids, which are also the durable ids)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(IntEnum):
    """ShareFetch/ShareAcknowledge ``AcknowledgeTypes`` values. GAP (0) marks an offset the client
    found no record at (compaction, a transaction marker); RENEW (4, KIP-1222) extends the lock."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


ACK_TYPE_IDS = frozenset(int(t) for t in AcknowledgeType)


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``first..last``, both inclusive (a fetched batch, an aborted transaction's records)."""

    first: int
    last: int

    def __len__(self) -> int:
        return max(0, self.last - self.first + 1)


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One ``AcquiredRecords`` entry of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One ``AcknowledgementBatches`` entry: either one type for the whole range or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """The limits a share-partition runs under (group configs over broker defaults, resolved by the
    caller). Defaults are Kafka's."""

    # share.delivery.count.limit / group.share.delivery.count.limit: 2..10, default 5.
    delivery_count_limit: int = 5
    # share.record.lock.duration.ms / group.share.record.lock.duration.ms, default 30 s.
    record_lock_duration_ms: int = 30_000
    # group.share.partition.max.record.locks: how far SPEO may run ahead of SPSO (Kafka 4.0: 200;
    # raised since). Records already in flight may be re-acquired whatever the bound.
    max_in_flight_records: int = 2_000
    # share.renew.acknowledge.enable (KIP-1222): when off, RENEW is INVALID_RECORD_STATE. Off here by
    # default; the data path sets it from the group's config (Kafka's default: on).
    renew_enabled: bool = False

    @property
    def throttle_delivery_count(self) -> int:
        """From this delivery count on, records are handed out in ever smaller numbers so that one
        poison record does not take a whole batch to the limit with it (KAFKA-17541): half the
        limit rounded up, at least 2."""
        return max(2, math.ceil(self.delivery_count_limit / 2))


def initial_start_offset(reset: str, earliest: int, latest: int, by_duration: int | None = None) -> int:
    """The start offset of a share-partition that has no state yet, by ``share.auto.offset.reset``:
    ``latest`` (Kafka's default), ``earliest``, or ``by_duration:<ISO-8601 duration>`` whose offset the
    caller looked up (ListOffsets by timestamp) and passes as ``by_duration``."""
    if reset == "latest":
        return latest
    if reset == "earliest":
        return earliest
    if reset.startswith("by_duration:") and by_duration is not None:
        # No record at or after the timestamp: Kafka starts at the end, like latest.
        return latest if by_duration < 0 else by_duration
    raise ValueError(f"share.auto.offset.reset {reset!r} cannot be resolved")
