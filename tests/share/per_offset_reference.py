"""The share-partition as it was kept before its in-flight state went into runs: one record per
offset, every operation offset by offset. Kept as the oracle of ``test_runs``: the run-length
``SharePartition`` must answer every operation exactly as this does (same AcquiredRecords, error
codes, durable changes, pictures)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence

from groupcoord.coordinator.errors import ErrorCode

# The answers' types and the acknowledgement targets are the production module's: what is
# compared is how the two keep and change their state.
from groupcoord.coordinator.share.partition import (
    _ACK_TARGET,
    _TERMINAL,
    Acknowledged,
    Acquired,
    validate_acknowledgements,
)
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import MAX_BATCH_SPAN, DurableShareState, ShareStateChange
from groupcoord.records.definitions import ShareStateBatch

# offset -> its durable (state, delivery count) before the operation ((0, 0) for a new record).
_Touched = dict[int, tuple[int, int]]


def merge_batches(offsets: Iterable[tuple[int, tuple[int, int]]]) -> Iterator[ShareStateBatch]:
    """Runs of consecutive offsets (given in ascending order) with the same state and count: the
    per-offset form of ``state.merge_ranges``, kept here as the oracle's own."""
    run: list[int] | None = None  # [first, last, state, count]
    for offset, (state, count) in offsets:
        if run is not None and offset == run[1] + 1 and run[2] == state and run[3] == count:
            run[1] = offset
            continue
        if run is not None:
            yield ShareStateBatch(run[0], run[1], run[2], run[3])
        run = [offset, offset, state, count]
    if run is not None:
        yield ShareStateBatch(run[0], run[1], run[2], run[3])


class InFlightRecord:
    __slots__ = ("state", "delivery_count", "member", "deadline")

    def __init__(self, state: RecordState, delivery_count: int) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member: str | None = None
        self.deadline = 0

    def durable(self) -> tuple[int, int]:
        # An acquisition is never written (see the module docstring): an acquired record's durable
        # form is the available one it was acquired from, one delivery fewer.
        if self.state is RecordState.ACQUIRED:
            return 0, self.delivery_count - 1
        return int(self.state), self.delivery_count

    def __repr__(self) -> str:
        return f"InFlightRecord({self.state.name}, {self.delivery_count}, {self.member}, {self.deadline})"


class SharePartition:
    def __init__(self, config: SharePartitionConfig, start_offset: int, state_epoch: int = 0) -> None:
        self.config = config
        self.state_epoch = state_epoch
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.records: dict[int, InFlightRecord] = {}
        # Lazy heaps (entries checked against the records when popped): AVAILABLE offsets, and
        # (deadline, first, last) of acquired runs (one entry per run acquired, not per offset:
        # an acquisition of 500 records is one heap push, its acknowledgement no pop at all).
        self._available: list[int] = []
        self._locks: list[tuple[int, int, int]] = []

    # --- creation ----------------------------------------------------------------------------
    @classmethod
    def create(
        cls, config: SharePartitionConfig, start_offset: int, state_epoch: int = 0
    ) -> tuple[SharePartition, ShareStateChange]:
        """As ``partition.SharePartition.create`` answers it, offset by offset."""
        return cls(config, start_offset, state_epoch), ShareStateChange(start_offset, (), state_epoch, reset=True)

    @classmethod
    def load(
        cls, config: SharePartitionConfig, durable: DurableShareState
    ) -> tuple[SharePartition, ShareStateChange | None]:
        """As ``partition.SharePartition.load`` answers it, offset by offset."""
        sp = cls(config, durable.start_offset, durable.state_epoch)
        touched: _Touched = {}
        for offset, (state, count) in sorted(durable.offsets.items()):
            if offset < durable.start_offset:
                continue
            rec = InFlightRecord(RecordState(state), count)
            if rec.state == RecordState.AVAILABLE and count >= config.delivery_count_limit:
                touched[offset] = rec.durable()
                rec.state = RecordState.ARCHIVED
            sp.records[offset] = rec
            if rec.state == RecordState.AVAILABLE:
                heapq.heappush(sp._available, offset)
        sp.end_offset = durable.end_offset
        # Offsets below the written end with no written state: acquired but never written (lost
        # with the old owner's memory), or no record there. Available with count 0 (their durable
        # form anyway): the next fetch acquires those the log holds, archives the others.
        for offset in range(sp.start_offset, sp.end_offset):
            if offset not in sp.records:
                sp.records[offset] = InFlightRecord(RecordState.AVAILABLE, 0)
                heapq.heappush(sp._available, offset)
        before = sp.start_offset
        sp._advance_start()
        return sp, sp._change(touched, before)

    # --- reading -----------------------------------------------------------------------------
    def next_fetch_offset(self) -> int:
        """Where the next fetch from the log should start: the lowest available record, else SPEO."""
        heap = self._available
        while heap:
            rec = self.records.get(heap[0])
            if heap[0] >= self.start_offset and rec is not None and rec.state == RecordState.AVAILABLE:
                return heap[0]
            heapq.heappop(heap)
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch can acquire anything: a record is available again, or the window has room."""
        return self.next_fetch_offset() < self.end_offset or self.in_flight() < self.config.max_in_flight_records

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def next_lock_deadline(self) -> int | None:
        """When ``expire_locks`` next has something to do (for the caller's timer)."""
        heap, records = self._locks, self.records
        while heap:
            deadline, first, last = heap[0]
            for offset in range(max(first, self.start_offset), last + 1):
                rec = records.get(offset)
                if rec is not None and rec.state is RecordState.ACQUIRED and rec.deadline == deadline:
                    if offset > first:  # what went before is done: the entry narrows
                        heapq.heapreplace(heap, (deadline, offset, last))
                    return deadline
            heapq.heappop(heap)
        return None

    def locks_due(self, now: int) -> int:
        """How many acquired records' locks have run out by ``now`` (what ``expire_locks`` gives back)."""
        return sum(1 for r in self.records.values() if r.state == RecordState.ACQUIRED and r.deadline <= now)

    def acquired_by(self, member: str) -> list[int]:
        return [o for o, r in sorted(self.records.items()) if r.state == RecordState.ACQUIRED and r.member == member]

    def durable_picture(self) -> tuple[int, int, tuple[tuple[int, int, int], ...]]:
        """What the records written so far must replay to (``DurableShareState.picture``): offsets
        whose durable form is AVAILABLE with count 0 are never written (no state means that)."""
        offsets = tuple(
            (o, *d) for o, r in sorted(self.records.items()) if o >= self.start_offset and (d := r.durable()) != (0, 0)
        )
        return (self.state_epoch, self.start_offset, offsets)

    # --- acquiring -----------------------------------------------------------------------------
    def acquire(
        self,
        member: str,
        fetched: Sequence[OffsetRange],
        max_records: int,
        now: int,
        *,
        archive: Sequence[OffsetRange] = (),
        fetch_offset: int | None = None,
        batch_optimized: bool = False,
    ) -> Acquired:
        """As ``partition.SharePartition.acquire`` answers it, offset by offset."""
        batches = sorted((b for b in fetched if b.last >= b.first), key=lambda b: b.first)
        if max_records <= 0 or not batches:
            return Acquired((), None)
        cfg = self.config
        before = self.start_offset
        touched: _Touched = {}
        runs: list[AcquiredRecords] = []
        acquired = 0
        first_acquired = last_acquired = -1
        skip = _RangeSet(archive)
        has_skip = bool(skip)
        lock_until = now + cfg.record_lock_duration_ms
        room = cfg.max_in_flight_records - self.in_flight()
        # What replay accepts as one batch bounds the window whatever the configuration or the
        # batch-optimized rounding says.
        span_room = MAX_BATCH_SPAN - self.in_flight()
        limit = max_records
        throttled = False  # this fetch hands out records near the delivery-count limit
        throttle_from, count_limit = cfg.throttle_delivery_count, cfg.delivery_count_limit

        # Records the log no longer has: available ones between the fetch offset and the data.
        lo = batches[0].first if fetch_offset is None else fetch_offset
        self._archive_missing(max(lo, self.start_offset), batches, touched)

        for batch in batches:
            # Batch-optimized: once this batch gave a record, the limits no longer stop it.
            begun = False
            for offset in range(max(batch.first, self.start_offset), batch.last + 1):
                if acquired >= limit and not (begun and batch_optimized and not throttled):
                    break
                rec = self.records.get(offset)
                if rec is None:
                    if offset < self.end_offset:
                        continue  # a gap that held no record when first fetched
                    if throttled or span_room <= 0 or (room <= 0 and not (begun and batch_optimized)):
                        break
                    room -= 1
                    span_room -= 1
                    rec = InFlightRecord(RecordState.AVAILABLE, 0)
                    self.records[offset] = rec
                    self.end_offset = offset + 1
                elif rec.state != RecordState.AVAILABLE:
                    continue
                if offset not in touched:
                    touched[offset] = rec.durable()
                if (has_skip and offset in skip) or rec.delivery_count >= count_limit:
                    # Not to be delivered, or the limit was lowered since it was released: done.
                    rec.state = RecordState.ARCHIVED
                    continue
                if rec.delivery_count >= throttle_from:
                    if not throttled:
                        if acquired:
                            break  # records near the limit go out in a lot of their own, later
                        throttled = True
                        limit = max(1, max_records >> (rec.delivery_count - throttle_from + 1))
                elif throttled:
                    break
                rec.state = RecordState.ACQUIRED
                rec.delivery_count += 1
                rec.member = member
                rec.deadline = lock_until
                count = rec.delivery_count
                acquired += 1
                begun = True
                # Consecutive offsets with the same delivery count: one AcquiredRecords.
                if runs and last_acquired + 1 == offset and runs[-1].delivery_count == count:
                    runs[-1] = AcquiredRecords(runs[-1].first_offset, offset, count)
                else:
                    runs.append(AcquiredRecords(offset, offset, count))
                if first_acquired < 0:
                    first_acquired = offset
                last_acquired = offset
            else:
                continue
            break
        if acquired:
            # One lock entry for all of them (offsets between that this fetch did not acquire
            # fail the entry's check when it is due: another deadline, or not acquired).
            heapq.heappush(self._locks, (lock_until, first_acquired, last_acquired))
        self._advance_start()
        return Acquired(tuple(runs), self._change(touched, before))

    def _archive_missing(self, lo: int, batches: Sequence[OffsetRange], touched: _Touched) -> None:
        hi = min(batches[-1].last, self.end_offset - 1)
        if lo > hi:
            return
        # Every available record has an entry in the available heap: only those in range are
        # looked at, not every offset of the window a fetch from a stale offset spans (with
        # several members on one partition most fetches start below the end: another took it).
        candidates = sorted({o for o in self._available if lo <= o <= hi})
        if not candidates:
            return
        present = _RangeSet(batches)
        for offset in candidates:
            rec = self.records.get(offset)
            if rec is not None and rec.state == RecordState.AVAILABLE and offset not in present:
                touched.setdefault(offset, rec.durable())
                rec.state = RecordState.ARCHIVED

    # --- acknowledging -------------------------------------------------------------------------
    def acknowledge(self, member: str, batches: Sequence[AcknowledgementBatch], now: int) -> Acknowledged:
        """As ``partition.SharePartition.acknowledge`` answers it, offset by offset."""
        error = validate_acknowledgements(batches, self.config.renew_enabled)
        if error is not ErrorCode.NONE:
            return Acknowledged(error)
        plan: list[tuple[InFlightRecord, int, int]] = []  # record, offset, acknowledge type
        planned: dict[int, int] = {}  # offset -> the type an earlier range of the list gave it
        for batch in batches:
            if batch.last_offset < self.start_offset:
                continue
            if self.end_offset == self.start_offset:
                return Acknowledged(ErrorCode.INVALID_RECORD_STATE)  # no record in flight
            if batch.last_offset >= self.end_offset:
                return Acknowledged(ErrorCode.INVALID_REQUEST)  # past anything ever acquired
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                rec = self.records.get(offset)
                if rec is None:
                    continue  # no record at this offset: nothing to acknowledge
                if rec.state != RecordState.ACQUIRED or rec.member != member:
                    return Acknowledged(ErrorCode.INVALID_RECORD_STATE)
                if planned.get(offset, AcknowledgeType.RENEW) != AcknowledgeType.RENEW:
                    return Acknowledged(ErrorCode.INVALID_RECORD_STATE)  # acknowledged already
                ack = batch.types[0] if len(batch.types) == 1 else batch.types[offset - batch.first_offset]
                planned[offset] = ack
                plan.append((rec, offset, ack))
        before = self.start_offset
        touched: _Touched = {}
        for rec, offset, ack in plan:
            if ack == AcknowledgeType.RENEW:
                rec.deadline = now + self.config.record_lock_duration_ms
                heapq.heappush(self._locks, (rec.deadline, offset, offset))
                continue
            self._release(rec, offset, _ACK_TARGET[ack], touched)
        self._advance_start()
        return Acknowledged(ErrorCode.NONE, self._change(touched, before))

    # --- releasing -----------------------------------------------------------------------------
    def expire_locks(self, now: int) -> ShareStateChange | None:
        """Locks that ran out by ``now`` give their records back: available again with the same
        delivery count, or archived when the count reached the limit."""
        before = self.start_offset
        touched: _Touched = {}
        heap = self._locks
        while heap and heap[0][0] <= now:
            deadline, first, last = heapq.heappop(heap)
            for offset in range(max(first, self.start_offset), last + 1):
                rec = self.records.get(offset)
                if rec is not None and rec.state == RecordState.ACQUIRED and rec.deadline == deadline:
                    self._release(rec, offset, RecordState.AVAILABLE, touched)
        self._advance_start()
        return self._change(touched, before)

    def release_member(self, member: str) -> ShareStateChange | None:
        """As ``partition.SharePartition.release_member`` answers it, offset by offset."""
        before = self.start_offset
        touched: _Touched = {}
        for offset in self.acquired_by(member):
            self._release(self.records[offset], offset, RecordState.AVAILABLE, touched)
        self._advance_start()
        return self._change(touched, before)

    def update_log_start_offset(self, log_start_offset: int) -> ShareStateChange | None:
        """The log's start moved past SPSO (retention, DeleteRecords): what lay below is gone, acquired
        or not; acknowledgements of it are then skipped as below SPSO."""
        if log_start_offset <= self.start_offset:
            return None
        before = self.start_offset
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        for offset in [o for o in self.records if o < log_start_offset]:
            del self.records[offset]
        self._advance_start()
        return self._change({}, before)

    def _release(self, rec: InFlightRecord, offset: int, target: RecordState, touched: _Touched) -> None:
        if offset not in touched:
            touched[offset] = rec.durable()
        if target == RecordState.AVAILABLE and rec.delivery_count >= self.config.delivery_count_limit:
            target = RecordState.ARCHIVED
        rec.state = target
        rec.member = None
        rec.deadline = 0
        if target == RecordState.AVAILABLE:
            heapq.heappush(self._available, offset)

    # --- bookkeeping ---------------------------------------------------------------------------
    def _advance_start(self) -> None:
        """SPSO moves up over done records and offsets that hold no record; what is below it is dropped."""
        start, end, records = self.start_offset, self.end_offset, self.records
        while start < end:
            rec = records.get(start)
            if rec is None:
                # A gap (no record was ever fetched there): jump to the next record, not offset by offset.
                start = min((o for o in records if o > start), default=end)
                continue
            if rec.state not in _TERMINAL:
                break
            del records[start]
            start += 1
        self.start_offset = start

    def _change(self, touched: _Touched, start_before: int) -> ShareStateChange | None:
        """The offsets whose durable state differs from before the operation, and SPSO."""
        start, records = self.start_offset, self.records
        acquired = RecordState.ACQUIRED
        changed: list[tuple[int, tuple[int, int]]] = []
        for o, was in touched.items():
            rec = records.get(o) if o >= start else None
            if rec is not None:
                # ``InFlightRecord.durable``, inlined: this runs for every offset an operation touched.
                state = rec.state
                now = (0, rec.delivery_count - 1) if state is acquired else (int(state), rec.delivery_count)
                if now != was:
                    changed.append((o, now))
        if not changed and start == start_before:
            return None
        changed.sort()
        return ShareStateChange(start, tuple(merge_batches(changed)), self.state_epoch)


class _RangeSet:
    """Membership in a few sorted offset ranges."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[OffsetRange]) -> None:
        self._ranges = sorted((r.first, r.last) for r in ranges if r.last >= r.first)

    def __contains__(self, offset: object) -> bool:
        return any(first <= offset <= last for first, last in self._ranges)  # type: ignore[operator]

    def __bool__(self) -> bool:
        return bool(self._ranges)
