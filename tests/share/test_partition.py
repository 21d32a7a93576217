"""The share-partition state machine, transition by transition, with Kafka's error codes.

Every test also checks that the records the operations produced replay to the partition's
durable picture (``Harness.write``), so each transition is a test of its record too.
"""

from __future__ import annotations

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
    initial_start_offset,
)
from tests.share.harness import Harness

ACCEPT, RELEASE, REJECT, RENEW, GAP = (int(t) for t in (1, 2, 3, 4, 0))
LOCK = 30_000


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def states(h: Harness) -> dict[int, tuple[str, int, str | None]]:
    return {o: (r.state.name, r.delivery_count, r.member) for o, r in sorted(h.sp.records.items())}


def test_acquire_hands_out_new_records_with_delivery_count_one() -> None:
    h = Harness()
    got = h.acquire("m1", [OffsetRange(0, 4), OffsetRange(5, 9)], 100, now=0)
    assert got == (AcquiredRecords(0, 9, 1),)
    assert h.sp.end_offset == 10 and h.sp.start_offset == 0
    assert all(r.state == RecordState.ACQUIRED and r.deadline == LOCK for r in h.sp.records.values())
    # Nothing is available: the next fetch reads new records.
    assert h.sp.next_fetch_offset() == 10


def test_acquire_skips_records_acquired_by_another_member() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 4)], 100, now=0)
    assert h.acquire("m2", [OffsetRange(0, 9)], 100, now=0) == (AcquiredRecords(5, 9, 1),)


def test_max_records_is_a_hard_limit() -> None:
    h = Harness()
    assert h.acquire("m1", [OffsetRange(0, 9)], 3, now=0) == (AcquiredRecords(0, 2, 1),)
    assert h.sp.end_offset == 3
    assert h.acquire("m1", [OffsetRange(0, 9)], 0, now=0) == ()


def test_batch_optimized_acquires_a_begun_batch_to_its_end() -> None:
    """ShareFetch v1 / ShareAcquireMode 0: MaxRecords is soft, as Kafka's acquisition ends at the
    end of the fetched batch holding its last record; record-limit (the default here) is hard."""
    batches = [OffsetRange(0, 4), OffsetRange(5, 9), OffsetRange(10, 14)]
    soft = Harness()
    assert soft.acquire("m1", batches, 7, now=0, batch_optimized=True) == (AcquiredRecords(0, 9, 1),)
    assert soft.sp.end_offset == 10
    # The limit reached at a batch's end: the next batch is not begun.
    assert soft.acquire("m2", batches, 5, now=0, batch_optimized=True) == (AcquiredRecords(10, 14, 1),)
    hard = Harness()
    assert hard.acquire("m1", batches, 7, now=0) == (AcquiredRecords(0, 6, 1),)
    assert hard.sp.end_offset == 7


def test_batch_optimized_finishes_a_batch_past_records_others_hold() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 10, now=0)
    h.ack("m1", [ack(2, 3, RELEASE), ack(6, 6, RELEASE)], now=1)
    # 2 and 3 fill the limit; the batch goes on to its end, skipping what m1 still holds.
    got = h.acquire("m2", [OffsetRange(0, 9), OffsetRange(10, 12)], 2, now=1, batch_optimized=True)
    assert got == (AcquiredRecords(2, 3, 2), AcquiredRecords(6, 6, 2))
    assert h.sp.end_offset == 10


def test_batch_optimized_window_is_soft_by_one_batch() -> None:
    """Kafka's window (SPEO - SPSO below max.record.locks) bounds where an acquisition may start;
    a batch begun below it is acquired whole, and nothing new starts while it is over."""
    h = Harness(SharePartitionConfig(max_in_flight_records=5))
    batches = [OffsetRange(0, 3), OffsetRange(4, 9), OffsetRange(10, 12)]
    assert h.acquire("m1", batches, 100, now=0, batch_optimized=True) == (AcquiredRecords(0, 9, 1),)
    assert h.sp.in_flight() == 10 and not h.sp.can_acquire()
    assert h.acquire("m2", [OffsetRange(10, 12)], 100, now=0, batch_optimized=True) == ()
    # Room again once the start moves: again up to the end of the batch begun.
    assert h.ack("m1", [ack(0, 9, ACCEPT)], now=1).error == ErrorCode.NONE
    got = h.acquire("m2", [OffsetRange(10, 12), OffsetRange(13, 20)], 4, now=1, batch_optimized=True)
    assert got == (AcquiredRecords(10, 20, 1),)
    hard = Harness(SharePartitionConfig(max_in_flight_records=5))
    assert hard.acquire("m1", batches, 100, now=0) == (AcquiredRecords(0, 4, 1),)


def test_batch_optimized_keeps_throttled_lots_hard() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=5))  # throttled from count 3
    for n in range(3):
        h.acquire("m1", [OffsetRange(0, 15)], 16, now=n * LOCK)
        h.expire((n + 1) * LOCK)
    # Near the limit the lot is half of max records, even inside one fetched batch.
    got = h.acquire("m1", [OffsetRange(0, 15)], 16, now=3 * LOCK, batch_optimized=True)
    assert got == (AcquiredRecords(0, 7, 4),)


def test_in_flight_window_bounds_new_records_not_redeliveries() -> None:
    h = Harness(SharePartitionConfig(max_in_flight_records=5))
    assert h.acquire("m1", [OffsetRange(0, 9)], 100, now=0) == (AcquiredRecords(0, 4, 1),)
    assert not h.sp.can_acquire()
    assert h.acquire("m2", [OffsetRange(5, 9)], 100, now=0) == ()
    # A released record is acquirable again even with the window full.
    assert h.ack("m1", [ack(2, 2, RELEASE)], now=1).error == ErrorCode.NONE
    assert h.sp.can_acquire() and h.sp.next_fetch_offset() == 2
    assert h.acquire("m2", [OffsetRange(0, 9)], 100, now=1) == (AcquiredRecords(2, 2, 2),)
    # The window slides once the start offset moves.
    assert h.ack("m1", [ack(0, 1, ACCEPT)], now=1).error == ErrorCode.NONE
    assert h.sp.start_offset == 2
    assert h.acquire("m2", [OffsetRange(5, 9)], 100, now=1) == (AcquiredRecords(5, 6, 1),)


def test_accept_release_reject_gap() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    res = h.ack("m1", [ack(0, 3, ACCEPT, RELEASE, REJECT, GAP), ack(4, 9, ACCEPT)], now=5)
    assert res.error == ErrorCode.NONE
    assert states(h) == {1: ("AVAILABLE", 1, None), 2: ("ARCHIVED", 1, None), 3: ("ARCHIVED", 1, None)} | {
        o: ("ACKNOWLEDGED", 1, None) for o in range(4, 10)
    }
    assert h.sp.start_offset == 1 and h.sp.next_fetch_offset() == 1


def test_start_offset_moves_over_done_records_only() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.ack("m1", [ack(5, 9, ACCEPT)], now=1)
    assert h.sp.start_offset == 0
    h.ack("m1", [ack(0, 4, REJECT)], now=1)
    assert h.sp.start_offset == 10 and h.sp.records == {} and h.sp.end_offset == 10


@pytest.mark.parametrize(
    ("batches", "why"),
    [
        ([ack(3, 2, ACCEPT)], "first after last"),
        ([ack(0, 3, ACCEPT, ACCEPT)], "types neither one nor one per offset"),
        ([ack(0, 2, ACCEPT), ack(1, 3, ACCEPT)], "a batch beginning below the previous one's last offset"),
        ([ack(2, 3, ACCEPT), ack(0, 1, ACCEPT)], "batches out of order"),
        ([ack(0, 1, 7)], "unknown acknowledge type"),
        ([AcknowledgementBatch(0, 1, ())], "no type"),
        ([ack(-2, 1, ACCEPT)], "first offset below -1"),
        ([ack(8, 12, ACCEPT)], "past anything ever acquired"),
    ],
)
def test_malformed_acknowledgements_are_invalid_request_and_change_nothing(
    batches: list[AcknowledgementBatch], why: str
) -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    before, writes = states(h), len(h.log)
    assert h.ack("m1", batches, now=1).error == ErrorCode.INVALID_REQUEST, why
    assert states(h) == before and len(h.log) == writes


@pytest.mark.parametrize(
    ("setup", "batch"),
    [
        ("other member", ack(0, 4, ACCEPT)),
        ("already accepted", ack(5, 5, ACCEPT)),
        ("released", ack(1, 1, ACCEPT)),
        ("lock expired", ack(0, 9, ACCEPT)),
    ],
)
def test_acknowledging_what_the_member_does_not_hold_is_invalid_record_state(
    setup: str, batch: AcknowledgementBatch
) -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    member = "m1"
    if setup == "other member":
        member = "m2"
    elif setup == "already accepted":
        h.ack("m1", [ack(5, 5, ACCEPT)], now=1)
    elif setup == "released":
        h.ack("m1", [ack(1, 1, RELEASE)], now=1)
    elif setup == "lock expired":
        h.expire(LOCK)
    before, writes = states(h), len(h.log)
    assert h.ack(member, [batch], now=LOCK).error == ErrorCode.INVALID_RECORD_STATE
    assert states(h) == before and len(h.log) == writes


@pytest.mark.parametrize(
    "batches",
    [
        [ack(0, 4, ACCEPT), ack(4, 9, ACCEPT)],
        [ack(0, 4, RELEASE), ack(4, 4, ACCEPT)],
        [ack(2, 4, REJECT, GAP, ACCEPT), ack(4, 6, ACCEPT)],
    ],
)
def test_a_batch_beginning_at_the_previous_ones_last_offset_is_invalid_record_state(
    batches: list[AcknowledgementBatch],
) -> None:
    # Kafka 4.2's validateAcknowledgementBatches refuses a batch beginning BELOW the previous one's
    # last offset only; SharePartition.acknowledge then finds the shared offset already in a state
    # transition (acknowledged by the batch before): INVALID_RECORD_STATE, for the partition.
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    before, writes = states(h), len(h.log)
    assert h.ack("m1", batches, now=1).error == ErrorCode.INVALID_RECORD_STATE
    assert states(h) == before and len(h.log) == writes


def test_a_renewal_then_an_acknowledgement_of_the_same_offset_is_applied() -> None:
    # A RENEW starts no state transition in Kafka: the next batch may acknowledge that offset.
    h = Harness(SharePartitionConfig(renew_enabled=True))
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    assert h.ack("m1", [ack(0, 4, RENEW), ack(4, 9, ACCEPT)], now=1).error == ErrorCode.NONE
    assert states(h)[4] == ("ACKNOWLEDGED", 1, None)
    assert states(h)[3] == ("ACQUIRED", 1, "m1") and h.sp.next_lock_deadline() == 1 + LOCK


def test_a_first_offset_of_minus_one_is_below_any_start_offset() -> None:
    # Kafka's validation starts from a "previous last offset" of -1: a first offset of -1 passes,
    # and lies below the start offset like any other.
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    assert h.ack("m1", [ack(-1, 1, ACCEPT)], now=1).error == ErrorCode.NONE
    assert h.sp.start_offset == 2


@pytest.mark.parametrize("batch", [ack(10, 12, ACCEPT), ack(0, 3, ACCEPT), ack(9, 9, ACCEPT)])
def test_acknowledging_with_nothing_in_flight_is_invalid_record_state(batch: AcknowledgementBatch) -> None:
    # Kafka finds no cached batch at or below the range's first offset: INVALID_RECORD_STATE, even
    # past SPEO (where, with records in flight, the range is INVALID_REQUEST).
    h = Harness()
    assert h.ack("m1", [batch], now=1).error == ErrorCode.INVALID_RECORD_STATE
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.ack("m1", [ack(0, 9, ACCEPT)], now=1)
    assert h.sp.start_offset == h.sp.end_offset == 10
    writes = len(h.log)
    expected = ErrorCode.NONE if batch.last_offset < 10 else ErrorCode.INVALID_RECORD_STATE
    assert h.ack("m1", [batch], now=2).error == expected
    assert len(h.log) == writes


def test_acknowledging_below_the_start_offset_is_skipped() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.ack("m1", [ack(0, 1, ACCEPT)], now=1)
    assert h.sp.start_offset == 2
    assert h.ack("m1", [ack(0, 1, ACCEPT)], now=1).error == ErrorCode.NONE


def test_acknowledgement_is_all_or_nothing() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 4)], 100, now=0)
    h.acquire("m2", [OffsetRange(5, 9)], 100, now=0)
    before = states(h)
    # The first batch is m1's, the second not: neither applies.
    assert h.ack("m1", [ack(0, 4, ACCEPT), ack(5, 5, ACCEPT)], now=1).error == ErrorCode.INVALID_RECORD_STATE
    assert states(h) == before


def test_lock_expiry_makes_records_available_again_with_their_count() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 4)], 100, now=0)
    assert h.sp.next_lock_deadline() == LOCK
    h.expire(LOCK - 1)
    assert h.sp.acquired_by("m1") == [0, 1, 2, 3, 4]
    h.expire(LOCK)
    assert h.sp.acquired_by("m1") == [] and h.sp.next_fetch_offset() == 0 and h.sp.next_lock_deadline() is None
    assert h.acquire("m2", [OffsetRange(0, 4)], 100, now=LOCK) == (AcquiredRecords(0, 4, 2),)


def test_one_lock_entry_per_acquisition_still_names_each_records_deadline() -> None:
    """An acquisition's lock is one heap entry over its offsets: records of it released, accepted
    or acquired again under another lock leave the rest's deadline and expiry as they were."""
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 5)], 100, now=0)
    h.ack("m1", [ack(0, 0, RELEASE)], now=1)  # the entry's first offset is not acquired any more
    assert h.sp.next_lock_deadline() == LOCK
    h.acquire("m2", [OffsetRange(0, 0)], 100, now=10)  # offset 0 again, its own later lock
    h.ack("m1", [ack(1, 2, ACCEPT)], now=11)
    assert h.sp.next_lock_deadline() == LOCK
    h.expire(LOCK)
    assert h.sp.acquired_by("m1") == [] and h.sp.acquired_by("m2") == [0]
    assert h.sp.next_fetch_offset() == 3 and h.sp.next_lock_deadline() == LOCK + 10
    h.expire(LOCK + 10)
    assert h.sp.acquired_by("m2") == [] and h.sp.next_lock_deadline() is None
    assert states(h)[0] == ("AVAILABLE", 2, None)


def test_delivery_count_limit_archives_and_moves_the_start_offset() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=2))
    h.acquire("m1", [OffsetRange(0, 0)], 100, now=0)
    h.ack("m1", [ack(0, 0, RELEASE)], now=1)
    assert h.acquire("m1", [OffsetRange(0, 0)], 100, now=1) == (AcquiredRecords(0, 0, 2),)
    # The second delivery was the last: a release (or an expiry) archives it.
    h.ack("m1", [ack(0, 0, RELEASE)], now=2)
    assert h.sp.records == {} and h.sp.start_offset == 1


def test_lock_expiry_at_the_limit_archives() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=2))
    h.acquire("m1", [OffsetRange(0, 1)], 100, now=0)
    h.expire(LOCK)
    h.acquire("m1", [OffsetRange(0, 1)], 100, now=LOCK)
    h.ack("m1", [ack(1, 1, ACCEPT)], now=LOCK)
    h.expire(2 * LOCK)
    assert h.sp.start_offset == 2 and h.sp.records == {}


def test_release_member_gives_records_back_keeping_the_count() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 4)], 100, now=0)
    h.acquire("m2", [OffsetRange(5, 9)], 100, now=0)
    h.release_member("m1")
    assert h.sp.acquired_by("m1") == [] and h.sp.acquired_by("m2") == [5, 6, 7, 8, 9]
    assert h.acquire("m3", [OffsetRange(0, 9)], 100, now=1) == (AcquiredRecords(0, 4, 2),)


def test_renew_extends_the_lock_when_enabled() -> None:
    h = Harness(SharePartitionConfig(renew_enabled=True))
    h.acquire("m1", [OffsetRange(0, 1)], 100, now=0)
    assert h.ack("m1", [ack(0, 1, RENEW, ACCEPT)], now=20_000).error == ErrorCode.NONE
    h.expire(LOCK)
    assert h.sp.acquired_by("m1") == [0]
    h.expire(20_000 + LOCK)
    assert h.sp.acquired_by("m1") == [] and h.sp.records[0].delivery_count == 1


def test_renew_is_invalid_record_state_unless_enabled() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 1)], 100, now=0)
    assert h.ack("m1", [ack(0, 1, RENEW)], now=1).error == ErrorCode.INVALID_RECORD_STATE


def test_aborted_transactions_and_markers_are_archived_not_delivered() -> None:
    h = Harness()
    got = h.acquire("m1", [OffsetRange(0, 9)], 100, now=0, archive=[OffsetRange(3, 5), OffsetRange(9, 9)])
    assert got == (AcquiredRecords(0, 2, 1), AcquiredRecords(6, 8, 1))
    h.ack("m1", [ack(0, 2, ACCEPT), ack(6, 8, ACCEPT)], now=1)
    assert h.sp.start_offset == 10 and h.sp.records == {}


def test_available_records_the_log_no_longer_has_are_archived() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.ack("m1", [ack(0, 9, RELEASE)], now=1)
    # Compaction removed 0-3 and 6: a fetch from 0 returns 4-5 and 7-12.
    got = h.acquire("m2", [OffsetRange(4, 5), OffsetRange(7, 12)], 100, now=1, fetch_offset=0)
    assert got == (AcquiredRecords(4, 5, 2), AcquiredRecords(7, 9, 2), AcquiredRecords(10, 12, 1))
    assert h.sp.start_offset == 4 and h.sp.records[6].state == RecordState.ARCHIVED


def test_gaps_between_fetched_batches_hold_no_record() -> None:
    h = Harness()
    assert h.acquire("m1", [OffsetRange(0, 1), OffsetRange(5, 6)], 100, now=0) == (
        AcquiredRecords(0, 1, 1),
        AcquiredRecords(5, 6, 1),
    )
    # Acknowledging across the gap is fine; the gap is skipped.
    assert h.ack("m1", [ack(0, 6, ACCEPT)], now=1).error == ErrorCode.NONE
    assert h.sp.start_offset == 7


def test_log_start_offset_moving_past_spso_drops_what_is_below() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.update_log_start_offset(5)
    assert h.sp.start_offset == 5 and min(h.sp.records) == 5
    # Acknowledging records below SPSO is skipped, as Kafka does.
    assert h.ack("m1", [ack(0, 6, ACCEPT)], now=1).error == ErrorCode.NONE
    assert h.sp.start_offset == 7
    h.update_log_start_offset(20)
    assert h.sp.start_offset == 20 and h.sp.end_offset == 20 and h.sp.records == {}
    assert h.acquire("m1", [OffsetRange(20, 21)], 100, now=1) == (AcquiredRecords(20, 21, 1),)


def test_throttled_delivery_isolates_records_near_the_limit() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=5))  # throttled from count 3
    for n in range(3):
        assert h.acquire("m1", [OffsetRange(0, 15)], 16, now=n * LOCK) == (AcquiredRecords(0, 15, n + 1),)
        h.expire((n + 1) * LOCK)
    # Delivered 3 times: the 4th delivery hands out half of max records, the 5th a quarter.
    assert h.acquire("m1", [OffsetRange(0, 15)], 16, now=3 * LOCK) == (AcquiredRecords(0, 7, 4),)
    h.expire(4 * LOCK)
    assert h.sp.records[0].state == RecordState.AVAILABLE and h.sp.records[8].delivery_count == 3
    assert h.acquire("m1", [OffsetRange(0, 15)], 16, now=4 * LOCK) == (AcquiredRecords(0, 3, 5),)
    h.expire(5 * LOCK)  # 0-3 reached the limit: archived
    assert h.sp.start_offset == 4
    # A fetch that already acquired something stops before a throttled record.
    h2 = Harness(SharePartitionConfig(delivery_count_limit=5))
    h2.acquire("m1", [OffsetRange(0, 3)], 100, now=0)
    for n in range(1, 3):
        h2.ack("m1", [ack(2, 3, RELEASE)], now=n)
        h2.acquire("m1", [OffsetRange(2, 3)], 100, now=n)
    h2.ack("m1", [ack(2, 3, RELEASE)], now=5)
    h2.ack("m1", [ack(0, 0, ACCEPT)], now=5)
    h2.ack("m1", [ack(1, 1, RELEASE)], now=5)
    assert h2.acquire("m2", [OffsetRange(1, 6)], 100, now=5) == (AcquiredRecords(1, 1, 2),)


def test_initial_start_offset_by_share_auto_offset_reset() -> None:
    assert initial_start_offset("latest", 3, 40) == 40
    assert initial_start_offset("earliest", 3, 40) == 3
    assert initial_start_offset("by_duration:PT1H", 3, 40, by_duration=17) == 17
    assert initial_start_offset("by_duration:PT1H", 3, 40, by_duration=-1) == 40
    with pytest.raises(ValueError):
        initial_start_offset("none", 3, 40)


def test_create_writes_the_reset_decision() -> None:
    sp, change = SharePartition.create(SharePartitionConfig(), 40)
    assert change.reset and change.start_offset == 40
    assert sp.next_fetch_offset() == 40


def test_acknowledge_type_ids_are_kafkas() -> None:
    assert [int(t) for t in AcknowledgeType] == [0, 1, 2, 3, 4]
    assert [int(s) for s in RecordState] == [0, 1, 2, 4]


def test_a_throttled_lot_leaves_new_records_for_the_next_fetch() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=3))  # throttled from count 2
    h.acquire("m1", [OffsetRange(0, 0)], 10, now=0)
    h.expire(LOCK)
    h.acquire("m1", [OffsetRange(0, 0)], 10, now=LOCK)
    h.expire(2 * LOCK)
    assert h.acquire("m1", [OffsetRange(0, 3)], 10, now=2 * LOCK) == (AcquiredRecords(0, 0, 3),)
    assert h.sp.end_offset == 1 and h.sp.next_fetch_offset() == 1
    assert h.acquire("m2", [OffsetRange(1, 3)], 10, now=2 * LOCK) == (AcquiredRecords(1, 3, 1),)
