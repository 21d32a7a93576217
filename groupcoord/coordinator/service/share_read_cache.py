"""The last records read from each partition for share groups, reused by the next ShareFetches.

Consumers of one share group read the same partition one after the other, each a little further
on (the first acquires 500 of the records a read returned, the next fetches from where that
ended). A Fetch from the partition's leader returns up to 1 MiB; keeping that answer lets the
following ShareFetches acquire from it without a round trip to the broker each (Kafka's broker
reads its own log; this sidecar's log is across the network). Records below the high watermark
do not change, so an answer stays right; it is kept for ``TTL_S`` only, so records removed by
retention or a DeleteRecords are not handed out for longer than that after a read, and at most
``MAX_ENTRIES`` partitions' answers are kept. Beside each, at most one answer read ahead: the
records right after it, read once fetches reached its last batch (``read_ahead_from``), which
becomes the kept answer when a fetch reaches it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from groupcoord.coordinator.service.share_fetcher import PartitionFetch

TTL_S = 1.0
MAX_ENTRIES = 64

# (topic, partition, read_committed)
CacheKey = tuple[str, int, bool]


@dataclass(frozen=True, slots=True)
class _Entry:
    fetched: PartitionFetch
    lasts: list[int]  # each batch's last offset, for bisecting
    at: float


class ShareReadCache:
    def __init__(self, ttl_s: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[CacheKey, _Entry] = {}
        # Per partition, a read of the records right after its kept one, begun before a fetch
        # needed them (``put_ahead``); it becomes the kept read when a fetch reaches it.
        self._ahead: dict[CacheKey, _Entry] = {}

    def put(self, key: CacheKey, fetched: PartitionFetch, now: float) -> None:
        """Keep a read's answer (only one without error that returned records)."""
        ahead = self._ahead.get(key)
        if ahead is not None and (not fetched.batches or ahead.fetched.batches[0].first <= fetched.batches[-1].last):
            del self._ahead[key]  # no longer right after the kept read
        if fetched.error_code or not fetched.batches:
            self._entries.pop(key, None)
            return
        self._entries.pop(key, None)
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]  # the oldest kept
        self._entries[key] = _Entry(fetched, [b.last for b in fetched.batches], now)

    def put_ahead(self, key: CacheKey, fetched: PartitionFetch, now: float) -> None:
        """Keep a read begun ahead (``read_ahead_from``) beside the kept one, until a fetch
        reaches it; the kept read stays (fetches still take its last records)."""
        if fetched.error_code or not fetched.batches:
            return
        self._ahead.pop(key, None)
        if len(self._ahead) >= self.max_entries:
            del self._ahead[next(iter(self._ahead))]
        self._ahead[key] = _Entry(fetched, [b.last for b in fetched.batches], now)

    def read_ahead_from(self, key: CacheKey, offset: int, now: float) -> int | None:
        """Where to begin the next read of ``key`` once a fetch acquired up to ``offset`` (the
        next offset to fetch): right after the kept read, when ``offset`` lies in its last batch
        or past it, the partition held records there when it was read (its high watermark), and
        no read of them is kept yet. None: not now."""
        entry = self._entries.get(key)
        if entry is None or now - entry.at > self.ttl_s or key in self._ahead:
            return None
        start = max(entry.lasts[-1] + 1, offset)
        if offset < entry.fetched.batches[-1].first or start >= entry.fetched.high_watermark:
            return None
        return start

    def get(self, key: CacheKey, offset: int, max_bytes: int, now: float) -> PartitionFetch | None:
        """What a read from ``offset`` of at most ``max_bytes`` (at least one batch) would
        return, when a kept answer holds ``offset``; None otherwise."""
        entry = self._entries.get(key)
        if entry is not None and now - entry.at > self.ttl_s:
            del self._entries[key]
            entry = None
        if entry is None or offset > entry.lasts[-1]:
            ahead = self._ahead.get(key)
            if ahead is not None and now - ahead.at > self.ttl_s:
                del self._ahead[key]
                ahead = None
            if ahead is None or not ahead.fetched.batches[0].first <= offset <= ahead.lasts[-1]:
                return None
            # A fetch reached the read begun ahead: it is the kept read from now on.
            del self._ahead[key]
            self._entries.pop(key, None)
            self._entries[key] = entry = ahead
        batches = entry.fetched.batches
        if offset < batches[0].first or offset > entry.lasts[-1]:
            return None
        return limited(entry.fetched, bisect.bisect_left(entry.lasts, offset), max_bytes)


def limited(fetched: PartitionFetch, start: int, max_bytes: int) -> PartitionFetch:
    """The batches from index ``start`` that fit in ``max_bytes``, the first whatever its size (a
    broker's Fetch never splits a batch and always sends the first), with the archive ranges they
    cover. A broker may send more than asked (Tansu ignores a partition's MaxBytes)."""
    batches = fetched.batches
    if start == 0 and len(batches) < 2:
        return fetched
    end, size = start + 1, len(batches[start].data)
    while end < len(batches) and size + len(batches[end].data) <= max_bytes:
        size += len(batches[end].data)
        end += 1
    if start == 0 and end == len(batches):
        return fetched
    first, last = batches[start].first, batches[end - 1].last
    return PartitionFetch(
        fetched.error_code,
        batches[start:end],
        [a for a in fetched.archive if a.last >= first and a.first <= last],
        fetched.log_start_offset,
        fetched.high_watermark,
    )
