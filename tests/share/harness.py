"""One share-partition with its log: every change goes through the real record codec into a log,
is replayed into a ``ShareStateStore``, and the replay must equal the partition's durable picture."""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.coordinator.share.partition import Acknowledged, SharePartition
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import SharePartitionKey, ShareStateChange, ShareStateStore, combine_changes
from groupcoord.records import CoordinatorRecord, decode, encode

KEY = SharePartitionKey("g", "t", 0)


def compact(log: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
    """What log compaction leaves: the newest value of each key, in log order (tombstones kept)."""
    newest = {key: i for i, (key, _) in enumerate(log)}
    return [entry for i, entry in enumerate(log) if newest[entry[0]] == i]


def replay(log: list[tuple[bytes, bytes | None]], updates_per_snapshot: int) -> ShareStateStore:
    store = ShareStateStore(updates_per_snapshot)
    for key, value in log:
        store.replay(decode(key, value))
    return store


class Harness:
    def __init__(
        self,
        config: SharePartitionConfig | None = None,
        start_offset: int = 0,
        updates_per_snapshot: int = 3,
    ) -> None:
        self.config = config or SharePartitionConfig()
        self.store = ShareStateStore(updates_per_snapshot)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.sp, change = SharePartition.create(self.config, start_offset)
        self.write(change)

    def write(self, change: ShareStateChange | None) -> list[CoordinatorRecord]:
        if change is None:
            self.check()
            return []
        records = self.store.records_for(KEY, change)
        for r in records:
            key, value = encode(r)
            self.log.append((key, value))
            self.store.replay(decode(key, value))
        self.check()
        return records

    def check(self) -> None:
        durable = self.store.get(KEY)
        assert durable is not None
        assert durable.picture() == self.sp.durable_picture(), (durable.picture(), self.sp.durable_picture())
        # Acquisitions are not written: the written end may lag the live one, never pass it.
        assert durable.end_offset <= self.sp.end_offset or not self.sp.run_count()

    def reload(self) -> None:
        """A failover: the partition as the (compacted) log has it."""
        store = replay(compact(self.log), self.store.updates_per_snapshot)
        assert store.picture() == replay(self.log, self.store.updates_per_snapshot).picture()
        durable = store.get(KEY)
        assert durable is not None
        self.store = store
        self.sp, change = SharePartition.load(self.config, durable)
        self.write(change)

    # --- operations, each written ------------------------------------------------------------
    def acquire(
        self,
        member: str,
        fetched: Sequence[OffsetRange],
        max_records: int,
        now: int,
        archive: Sequence[OffsetRange] = (),
        fetch_offset: int | None = None,
        batch_optimized: bool = False,
    ) -> tuple[AcquiredRecords, ...]:
        got = self.sp.acquire(
            member,
            fetched,
            max_records,
            now,
            archive=archive,
            fetch_offset=fetch_offset,
            batch_optimized=batch_optimized,
        )
        self.write(got.change)
        return got.records

    def ack(self, member: str, batches: Sequence[AcknowledgementBatch], now: int) -> Acknowledged:
        res = self.sp.acknowledge(member, batches, now)
        self.write(res.change)
        return res

    def ack_and_acquire(
        self,
        member: str,
        batches: Sequence[AcknowledgementBatch],
        fetched: Sequence[OffsetRange],
        max_records: int,
        now: int,
        archive: Sequence[OffsetRange] = (),
        batch_optimized: bool = False,
    ) -> tuple[Acknowledged, tuple[AcquiredRecords, ...]]:
        """A ShareFetch's acknowledgements and acquisition, written as ONE record (their changes
        combined), as the data path writes them."""
        res = self.sp.acknowledge(member, batches, now)
        got = self.sp.acquire(member, fetched, max_records, now, archive=archive, batch_optimized=batch_optimized)
        assert len(self.write(combine_changes(res.change, got.change))) <= 1
        return res, got.records

    def expire(self, now: int) -> None:
        self.write(self.sp.expire_locks(now))

    def release_member(self, member: str) -> None:
        self.write(self.sp.release_member(member))

    def update_log_start_offset(self, offset: int) -> None:
        self.write(self.sp.update_log_start_offset(offset))
