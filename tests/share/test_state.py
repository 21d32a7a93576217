"""Durable share-partition state: which record is written, replay, compaction, failover."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import DurableShareState, ShareStateChange, ShareStateStore
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from groupcoord.records.definitions import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
)
from tests.share.harness import KEY, Harness, compact, replay

ACCEPT, RELEASE, REJECT = 1, 2, 3
LOCK = 30_000


def kinds(h: Harness) -> list[str]:
    out = []
    for key, value in h.log:
        r = decode(key, value)
        out.append("S" if r.type == RecordType.SHARE_SNAPSHOT else f"U{r.key.slot}")
    return out


def test_a_snapshot_every_n_updates_and_the_slots_are_reused() -> None:
    h = Harness(updates_per_snapshot=2)
    for n in range(7):
        h.acquire("m1", [OffsetRange(n, n)], 1, now=0)  # not written
        h.ack("m1", [AcknowledgementBatch(n, n, (RELEASE,))], now=0)  # one update or snapshot
    assert kinds(h) == ["S", "U0", "U1", "S", "U0", "U1", "S", "U0"]
    values = [decode(k, v).value for k, v in h.log]
    snapshots = [s for s in values if isinstance(s, ShareSnapshotValue)]
    assert [s.snapshot_epoch for s in snapshots] == [0, 1, 2]
    # The last snapshot holds everything written before it.
    assert snapshots[-1].state_batches == [ShareStateBatch(0, 5, int(RecordState.AVAILABLE), 1)]
    # Compaction keeps one snapshot and N update slots, and replays to the same state.
    assert len(compact(h.log)) == 3
    assert replay(compact(h.log), 2).picture() == replay(h.log, 2).picture() == h.store.picture()


def test_an_acquisition_is_not_written_its_release_and_expiry_are() -> None:
    """As Kafka's SharePartition.acquire, which writes nothing to the share coordinator: a fetch
    that only acquires needs no write. What ends or gives back an acquisition is written: the
    delivery count it took survives a failover from then on."""
    h = Harness()
    writes = len(h.log)
    h.acquire("m1", [OffsetRange(0, 4)], 100, now=0)
    assert len(h.log) == writes and h.store.get(KEY).offsets == {}  # type: ignore[union-attr]
    # A renewal changes only the lock; a release and an expired lock write the count.
    h.ack("m1", [AcknowledgementBatch(0, 0, (RELEASE,))], now=1)
    assert len(h.log) == writes + 1
    h.expire(LOCK)
    assert len(h.log) == writes + 2
    h.acquire("m2", [OffsetRange(0, 4)], 100, now=LOCK)
    assert len(h.log) == writes + 2
    assert h.store.get(KEY).offsets == {o: (int(RecordState.AVAILABLE), 1) for o in range(5)}  # type: ignore[union-attr]


def test_failover_redelivers_unacknowledged_records_counting_from_the_written_count() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    h.ack(
        "m1",
        [
            AcknowledgementBatch(0, 4, (ACCEPT,)),
            AcknowledgementBatch(5, 5, (REJECT,)),
            AcknowledgementBatch(7, 7, (RELEASE,)),
        ],
        now=1,
    )
    h.reload()
    # Written up to 7: 6 (acquired, never written) is available with count 0 like 8-9 beyond.
    assert h.sp.start_offset == 6 and h.sp.end_offset == 8
    # 0-5 are never delivered again; 6-9 are: 7 as its second delivery (its release was written),
    # 6, 8 and 9 as a first one, their acquisition lost with the owner (as in Kafka).
    assert h.sp.next_fetch_offset() == 6
    got = h.acquire("m2", [OffsetRange(0, 12)], 100, now=2)
    assert got == (AcquiredRecords(6, 6, 1), AcquiredRecords(7, 7, 2), AcquiredRecords(8, 12, 1))
    # The old owner's acquisition is gone: m1's acknowledgement fails.
    assert h.ack("m1", [AcknowledgementBatch(6, 6, (ACCEPT,))], now=2).error == ErrorCode.INVALID_RECORD_STATE


def test_failover_archives_what_the_log_no_longer_holds_in_the_unwritten_gap() -> None:
    """An offset between the written start and end with no written state may have held no record
    (compacted away, a transaction marker): the first fetch after a load archives it."""
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 1), OffsetRange(3, 4)], 100, now=0)  # 2 holds no record
    h.ack("m1", [AcknowledgementBatch(4, 4, (ACCEPT,))], now=1)
    h.reload()
    assert h.sp.start_offset == 0 and sorted(h.sp.records) == [0, 1, 2, 3, 4]
    got = h.acquire("m2", [OffsetRange(0, 1), OffsetRange(3, 5)], 100, now=2, fetch_offset=0)
    assert got == (AcquiredRecords(0, 1, 1), AcquiredRecords(3, 3, 1), AcquiredRecords(5, 5, 1))
    assert h.sp.records[2].state == RecordState.ARCHIVED


def test_failover_archives_records_whose_written_count_reached_the_limit() -> None:
    h = Harness(SharePartitionConfig(delivery_count_limit=3))
    h.acquire("m1", [OffsetRange(0, 1)], 100, now=0)
    h.expire(LOCK)
    h.acquire("m1", [OffsetRange(0, 0)], 100, now=LOCK)
    h.expire(2 * LOCK)  # 0 written as delivered twice, 1 once
    h.config = SharePartitionConfig(delivery_count_limit=2)  # lowered since
    h.reload()
    # 0 was delivered twice (the limit now): a lock expiry would archive it.
    assert h.sp.start_offset == 1 and h.sp.records[1].state == RecordState.AVAILABLE
    assert h.acquire("m2", [OffsetRange(0, 1)], 100, now=LOCK) == (AcquiredRecords(1, 1, 2),)


def test_failover_at_every_point_of_a_history_replays_the_same() -> None:
    h = Harness(updates_per_snapshot=2)
    h.acquire("m1", [OffsetRange(0, 9)], 4, now=0)
    h.acquire("m2", [OffsetRange(0, 9)], 4, now=0)
    h.ack("m1", [AcknowledgementBatch(0, 3, (ACCEPT, REJECT, ACCEPT, RELEASE))], now=1)
    h.ack("m2", [AcknowledgementBatch(4, 7, (ACCEPT,))], now=1)
    h.acquire("m1", [OffsetRange(3, 12)], 100, now=2)
    for cut in range(1, len(h.log) + 1):
        assert replay(compact(h.log[:cut]), 2).picture() == replay(h.log[:cut], 2).picture()


def test_replay_applies_the_updates_of_the_snapshot_in_slot_order_whatever_the_read_order() -> None:
    def snap(epoch: int) -> CoordinatorRecord:
        return CoordinatorRecord(
            RecordType.SHARE_SNAPSHOT, ShareSnapshotKey("g", "t", 0), ShareSnapshotValue(epoch, 0, 10)
        )

    def update(slot: int, epoch: int, state: RecordState) -> CoordinatorRecord:
        value = ShareUpdateValue(epoch, 10, [ShareStateBatch(12, 12, int(state), 1)])
        return CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey("g", "t", 0, slot), value)

    stale = update(2, 2, RecordState.ARCHIVED)  # a slot of the previous snapshot
    written = [snap(3), update(0, 3, RecordState.AVAILABLE), update(1, 3, RecordState.ACKNOWLEDGED)]
    # A restore (the runtime re-appending a key's valid value after a zombie) reads a key late.
    for order in ([stale, *written], [written[0], written[2], stale, written[1]], [written[2], written[1], written[0]]):
        store = ShareStateStore(updates_per_snapshot=5)
        for r in order:
            store.replay(r)
        state = store.get(KEY)
        assert state is not None and state.offsets == {12: (int(RecordState.ACKNOWLEDGED), 1)}, order
        assert state.updates == 2 and state.snapshot_epoch == 3
    # A tombstone of an applied slot takes its change out again.
    store.replay(CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey("g", "t", 0, 1), None))
    assert store.get(KEY).offsets == {12: (int(RecordState.AVAILABLE), 1)}  # type: ignore[union-attr]


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_the_state_is_a_function_of_the_newest_value_of_each_key(data: st.DataObject) -> None:
    h = Harness(updates_per_snapshot=3)
    h.acquire("m1", [OffsetRange(0, 9)], 4, now=0)
    h.acquire("m2", [OffsetRange(0, 9)], 4, now=0)
    h.ack("m1", [AcknowledgementBatch(0, 3, (ACCEPT, REJECT, ACCEPT, RELEASE))], now=1)
    h.ack("m2", [AcknowledgementBatch(4, 7, (ACCEPT,))], now=1)
    h.acquire("m1", [OffsetRange(3, 12)], 100, now=2)
    h.ack("m1", [AcknowledgementBatch(8, 9, (ACCEPT,))], now=3)
    cut = data.draw(st.integers(1, len(h.log)))
    newest = compact(h.log[:cut])
    shuffled = data.draw(st.permutations(newest))
    assert replay(shuffled, 3).picture() == replay(h.log[:cut], 3).picture()


def test_replay_drops_batches_no_writer_produces() -> None:
    store = ShareStateStore()
    value = ShareSnapshotValue(
        0,
        0,
        0,
        [ShareStateBatch(0, 1 << 40, 0, 1), ShareStateBatch(0, 0, 1, 1), ShareStateBatch(2, 1, 0, 1)],
    )
    store.replay(CoordinatorRecord(RecordType.SHARE_SNAPSHOT, ShareSnapshotKey("g", "t", 0), value))
    state = store.get(KEY)
    assert state is not None and state.offsets == {}


def test_a_reset_is_a_snapshot_with_a_new_state_epoch() -> None:
    h = Harness()
    h.acquire("m1", [OffsetRange(0, 9)], 100, now=0)
    records = h.store.records_for(KEY, ShareStateChange(100, (), state_epoch=1, reset=True))
    assert [r.type for r in records] == [RecordType.SHARE_SNAPSHOT]
    value = records[0].value
    assert isinstance(value, ShareSnapshotValue)
    assert value.state_epoch == 1 and value.state_batches == [] and value.snapshot_epoch == 1


def test_delete_tombstones_the_snapshot_and_every_slot() -> None:
    h = Harness(updates_per_snapshot=3)
    h.acquire("m1", [OffsetRange(0, 0)], 1, now=0)
    tombstones = h.store.delete_records(KEY)
    assert len(tombstones) == 4 and all(r.value is None for r in tombstones)
    log = h.log + [encode(r) for r in tombstones]
    assert replay(log, 3).get(KEY) is None
    assert compact(log) == [encode(r) for r in tombstones]


def test_durable_state_end_offset() -> None:
    assert DurableShareState(5).end_offset == 5
    assert DurableShareState(5, runs=[(7, 7, 0, 1)]).end_offset == 8
