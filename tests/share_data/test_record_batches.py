"""Reading a Fetch answer's record batches for the share data path: their offset ranges, a batch
cut at the end left out, control batches and aborted transactions never delivered."""

from __future__ import annotations

import struct

from groupcoord.coordinator.messages.fetch import FetchResponseAbortedTransaction
from groupcoord.coordinator.service.share_data import _overlapping
from groupcoord.coordinator.service.share_fetcher import aborted_ranges, record_batches
from groupcoord.coordinator.share.partition_types import AcquiredRecords, OffsetRange

HEAD = struct.Struct(">qiibIhiqqqhii")


def batch(base: int, count: int, pid: int = -1, transactional: bool = False, control: bool = False) -> bytes:
    body = b"r" * (10 * count)  # records: not read
    attrs = (0x10 if transactional else 0) | (0x20 if control else 0)
    length = HEAD.size - 12 + len(body)
    return HEAD.pack(base, length, 0, 2, 0, attrs, count - 1, 0, 0, pid, 0, 0, count) + body


def test_batches_and_their_ranges_a_cut_batch_left_out() -> None:
    data = batch(0, 3) + batch(3, 1) + batch(4, 5)[:-7]
    got = list(record_batches(data))
    assert [(b.first, b.last) for b in got] == [(0, 2), (3, 3)]
    assert bytes(got[1].data) == batch(3, 1)
    assert list(record_batches(None)) == [] and list(record_batches(b"\x00" * 10)) == []


def test_control_batches_and_aborted_transactions_are_archived() -> None:
    data = (
        batch(0, 2, pid=7, transactional=True)  # aborted
        + batch(2, 2, pid=8, transactional=True)  # committed
        + batch(4, 1, pid=7, transactional=True, control=True)  # abort marker
        + batch(5, 1, pid=8, transactional=True, control=True)  # commit marker
        + batch(6, 2, pid=7, transactional=True)  # a later transaction of 7: not aborted
    )
    got = list(record_batches(data))
    assert aborted_ranges(got, None) == [OffsetRange(4, 4), OffsetRange(5, 5)]
    aborted = [FetchResponseAbortedTransaction(producer_id=7, first_offset=0)]
    assert sorted(aborted_ranges(got, aborted), key=lambda r: r.first) == [
        OffsetRange(0, 1),
        OffsetRange(4, 4),
        OffsetRange(5, 5),
    ]


def test_the_answer_carries_the_batches_holding_acquired_records() -> None:
    got = list(record_batches(batch(0, 3) + batch(3, 2) + batch(5, 2)))
    assert _overlapping(got, (AcquiredRecords(2, 3, 1),)) == batch(0, 3) + batch(3, 2)


def test_time_lookup_trusts_a_right_answer_and_searches_past_a_wrong_one() -> None:
    """``first_at_or_after`` (share.auto.offset.reset=by_duration): a broker's right ListOffsets
    answer costs two reads; a wrong one (the log start, as the local broker answers) is searched."""
    import asyncio

    from groupcoord.coordinator.service.share_fetcher import first_at_or_after

    reads: list[int] = []

    async def stamp(offset: int) -> tuple[int, int] | None:
        reads.append(offset)
        # Offsets 0-19 at 1000, 1010, ...; 7 holds no record (compacted away).
        found = offset + 1 if offset == 7 else offset
        return (found, 1000 + 10 * found) if found < 20 else None

    assert asyncio.run(first_at_or_after(stamp, 1055, (0, 20), 6)) == 6 and reads == [6, 5]
    assert asyncio.run(first_at_or_after(stamp, 1055, (0, 20), 0)) == 6
    assert asyncio.run(first_at_or_after(stamp, 1071, (0, 20), 0)) == 8
    assert asyncio.run(first_at_or_after(stamp, 5000, (0, 20), -1)) == 20
    assert asyncio.run(first_at_or_after(stamp, 5000, (0, 20), 0)) == 20
    assert asyncio.run(first_at_or_after(stamp, 0, (0, 20), 0)) == 0
