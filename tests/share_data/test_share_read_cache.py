"""The records last read from a partition, reused by the next ShareFetches of that partition."""

from __future__ import annotations

from groupcoord.coordinator.service.share_fetcher import Batch, PartitionFetch
from groupcoord.coordinator.service.share_read_cache import ShareReadCache
from groupcoord.coordinator.share.partition_types import OffsetRange

KEY = ("t", 0, False)


def _batch(first: int, last: int, size: int = 100) -> Batch:
    return Batch(first, last, -1, False, False, memoryview(b"x" * size))


def _read() -> PartitionFetch:
    # Batches 0-9, 10-19 (a control batch at 20), 21-30; log start 0, high watermark 31.
    batches = [_batch(0, 9), _batch(10, 19), _batch(20, 20, 50), _batch(21, 30)]
    return PartitionFetch(0, batches, [OffsetRange(20, 20)], 0, 31)


def test_a_kept_read_answers_from_the_batch_holding_the_offset() -> None:
    cache = ShareReadCache(ttl_s=1.0)
    cache.put(KEY, _read(), now=0.0)
    got = cache.get(KEY, 12, 1 << 20, now=0.5)
    assert got is not None
    assert [(b.first, b.last) for b in got.batches] == [(10, 19), (20, 20), (21, 30)]
    assert got.archive == [OffsetRange(20, 20)] and got.high_watermark == 31
    # At most max_bytes, but always the batch holding the offset.
    got = cache.get(KEY, 12, 120, now=0.5)
    assert got is not None and [(b.first, b.last) for b in got.batches] == [(10, 19)] and got.archive == []
    got = cache.get(KEY, 12, 10, now=0.5)
    assert got is not None and [(b.first, b.last) for b in got.batches] == [(10, 19)]


def test_offsets_the_kept_read_does_not_hold_and_old_reads_go_to_the_broker() -> None:
    cache = ShareReadCache(ttl_s=1.0)
    cache.put(KEY, _read(), now=0.0)
    assert cache.get(KEY, 31, 1 << 20, now=0.5) is None  # past it: new records, if any
    assert cache.get(("t", 0, True), 12, 1 << 20, now=0.5) is None  # read_committed reads apart
    assert cache.get(KEY, 12, 1 << 20, now=1.5) is None  # kept too long
    assert cache.get(KEY, 12, 1 << 20, now=0.5) is None  # and dropped
    cache.put(KEY, PartitionFetch(0, [_batch(5, 9)], [], 0, 10), now=2.0)
    assert cache.get(KEY, 3, 1 << 20, now=2.0) is None  # before it
    cache.put(KEY, PartitionFetch(0, [], [], 0, 10), now=2.0)  # a read that returned nothing
    assert cache.get(KEY, 5, 1 << 20, now=2.0) is None


def test_at_most_max_entries_partitions_are_kept() -> None:
    cache = ShareReadCache(ttl_s=10.0, max_entries=2)
    for partition in range(3):
        cache.put(("t", partition, False), _read(), now=0.0)
    assert cache.get(("t", 0, False), 0, 1 << 20, now=0.0) is None
    assert cache.get(("t", 2, False), 0, 1 << 20, now=0.0) is not None


def test_the_next_read_begins_once_the_last_batch_of_the_kept_one_is_reached() -> None:
    cache = ShareReadCache(ttl_s=1.0)
    assert cache.read_ahead_from(KEY, 20, now=0.0) is None  # nothing kept: nothing to read ahead of
    # Batches 0-9 and 10-19 kept, read while the log held up to 30 (high watermark 31).
    cache.put(KEY, PartitionFetch(0, [_batch(0, 9), _batch(10, 19)], [], 0, 31), now=0.0)
    assert cache.read_ahead_from(KEY, 5, now=0.5) is None  # a batch and more still to take
    assert cache.read_ahead_from(KEY, 10, now=0.5) == 20  # into the last batch: from its end on
    assert cache.read_ahead_from(KEY, 20, now=0.5) == 20
    assert cache.read_ahead_from(KEY, 31, now=0.5) is None  # the log's end: no records to read yet
    assert cache.read_ahead_from(KEY, 20, now=1.5) is None  # too old to go by


def test_a_read_kept_ahead_answers_past_the_kept_read_and_then_replaces_it() -> None:
    cache = ShareReadCache(ttl_s=1.0)
    cache.put(KEY, PartitionFetch(0, [_batch(0, 9), _batch(10, 19)], [], 0, 31), now=0.0)
    cache.put_ahead(KEY, PartitionFetch(0, [_batch(20, 30)], [], 0, 31), now=0.2)
    assert cache.read_ahead_from(KEY, 15, now=0.3) is None  # already read
    got = cache.get(KEY, 12, 1 << 20, now=0.3)  # the kept read still answers its own offsets
    assert got is not None and [(b.first, b.last) for b in got.batches] == [(10, 19)]
    got = cache.get(KEY, 25, 1 << 20, now=0.3)
    assert got is not None and [(b.first, b.last) for b in got.batches] == [(20, 30)]
    assert cache.get(KEY, 12, 1 << 20, now=0.3) is None  # replaced by the one read ahead
    # A read of its own of a partition drops a read kept ahead that no longer follows it.
    cache.put_ahead(KEY, PartitionFetch(0, [_batch(31, 40)], [], 0, 41), now=0.4)
    cache.put(KEY, PartitionFetch(0, [_batch(25, 35)], [], 0, 41), now=0.4)
    assert cache.get(KEY, 38, 1 << 20, now=0.5) is None
