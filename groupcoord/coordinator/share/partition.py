"""One share-partition's live state: which records are acquired, by whom, until when (KIP-932).

The model follows Kafka's ``SharePartition`` (core/.../server/share): records between the start
offset (SPSO) and the end offset (SPEO, kept here as one past the last offset ever acquired) are in
flight, each AVAILABLE, ACQUIRED (by one member, under a lock that expires), ACKNOWLEDGED or
ARCHIVED. Records below SPSO are done; SPSO moves up over done records (and over offsets that hold
no record).

The in-flight state is kept in runs, as Kafka keeps it per fetched batch: a ``_Run`` is a range of
consecutive offsets that hold records and share (state, delivery count, member, lock deadline).
A fetch acquires a whole batch as one run; an operation that covers only part of a run splits it
at the operation's edges, and neighbours that end up alike are merged again. Every operation thus
costs in runs touched, not in offsets: acquiring a fetched batch of thousands of records, accepting
them in one acknowledgement range, expiring their lock or releasing a member's records, moving
SPSO over them and computing the durable change (ranges, ``ShareStateChange``) are each a few run
edits. Offsets with no record (a gap a fetch skipped, below SPEO) are in no run. Per-offset state
comes back only where the input is per offset (an acknowledgement with one type per offset) or the
answer is (``acquired_by``, ``durable_picture`` and ``records``, which tests and tools read).

Every operation is pure bookkeeping on its arguments (``now`` comes in, no clock is read) and
returns what changed durably, a ``ShareStateChange`` that ``state.ShareStateStore.records_for``
turns into a record. ``durable_picture()`` is what those records must replay to; the tests check
it after every step.

An acquisition changes nothing durable, as in Kafka (``SharePartition.acquire`` writes nothing to
the share coordinator; only acknowledgements, releases, lock expiries and archivals are written):
an acquired record's durable form is the one it had before (AVAILABLE, the delivery count before
this delivery), and a record never written is AVAILABLE with count 0, the same as having no
state. A fetch that only acquires thus needs no write. After a failover the records acquired but
not yet acknowledged, released or expired are AVAILABLE again with the delivery count last
written (the delivery of a lost acquisition is not counted, as in Kafka): at-least-once holds, and
a record is still delivered at most ``delivery_count_limit`` times per owner (its count may start
over from the written one after a move). ``load`` fills the offsets between the written start and
end that have no written state (acquired, never written; or no record there) with AVAILABLE
records of count 0, as Kafka's initial read gap: the next fetch acquires those the log holds and
archives the others.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.partition_types import (
    ACK_TYPE_IDS,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import MAX_BATCH_SPAN, DurableShareState, ShareStateChange, merge_ranges

_ACK_TARGET = {
    int(AcknowledgeType.GAP): RecordState.ARCHIVED,
    int(AcknowledgeType.ACCEPT): RecordState.ACKNOWLEDGED,
    int(AcknowledgeType.RELEASE): RecordState.AVAILABLE,
    int(AcknowledgeType.REJECT): RecordState.ARCHIVED,
}

_AVAILABLE = RecordState.AVAILABLE
_ACQUIRED = RecordState.ACQUIRED
_ARCHIVED = RecordState.ARCHIVED
_TERMINAL = frozenset(s for s in RecordState if s.terminal)

# (first, last, durable state, delivery count): offsets whose durable form an operation changed.
_Changed = list[tuple[int, int, int, int]]


class _Run:
    """Consecutive offsets, each holding a record, with the same state, count, member and deadline."""

    __slots__ = ("first", "last", "state", "delivery_count", "member", "deadline")

    def __init__(
        self,
        first: int,
        last: int,
        state: RecordState,
        delivery_count: int,
        member: str | None = None,
        deadline: int = 0,
    ) -> None:
        self.first = first
        self.last = last
        self.state = state
        self.delivery_count = delivery_count
        self.member = member
        self.deadline = deadline

    def durable(self) -> tuple[int, int]:
        # An acquisition is never written (see the module docstring): an acquired record's durable
        # form is the available one it was acquired from, one delivery fewer.
        if self.state is _ACQUIRED:
            return 0, self.delivery_count - 1
        return int(self.state), self.delivery_count

    def alike(self, other: _Run) -> bool:
        return (
            self.state is other.state
            and self.delivery_count == other.delivery_count
            and self.member == other.member
            and self.deadline == other.deadline
        )

    def __repr__(self) -> str:
        return (
            f"_Run({self.first}-{self.last}, {self.state.name}, {self.delivery_count}, {self.member}, {self.deadline})"
        )


_first_of = attrgetter("first")


class InFlightRecord:
    """One offset's live state, as ``SharePartition.records`` reports it (a copy, for reading)."""

    __slots__ = ("state", "delivery_count", "member", "deadline")

    def __init__(self, state: RecordState, delivery_count: int, member: str | None = None, deadline: int = 0) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member = member
        self.deadline = deadline

    def __repr__(self) -> str:
        return f"InFlightRecord({self.state.name}, {self.delivery_count}, {self.member}, {self.deadline})"


@dataclass(frozen=True, slots=True)
class Acquired:
    """What ``acquire`` handed out (ShareFetch's ``AcquiredRecords``) and what must be written first:
    nothing for the acquisition itself, only the archivals it did (aborted, skipped, at the limit)."""

    records: tuple[AcquiredRecords, ...]
    change: ShareStateChange | None

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.records)


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """The partition's error code in a ShareAcknowledge (or ShareFetch) response; on an error nothing
    changed and ``change`` is None."""

    error: ErrorCode
    change: ShareStateChange | None = None


def validate_acknowledgements(batches: Sequence[AcknowledgementBatch], renew_enabled: bool = True) -> ErrorCode:
    """INVALID_REQUEST for a malformed acknowledgement list, as Kafka 4.2's
    ``KafkaApis.validateAcknowledgementBatches`` judges it (ranges out of order, one beginning
    below the previous one's last offset, types not one or one per offset, an unknown type);
    INVALID_RECORD_STATE for RENEW where renewals are off; else NONE.

    A range beginning AT the previous one's last offset passes, as in Kafka: that offset is
    acknowledged twice, which ``SharePartition.acknowledge`` answers INVALID_RECORD_STATE (unless
    the first was a RENEW). The first range may begin at -1 (Kafka's first "previous last"), which
    is below any start offset: skipped like any offset below it."""
    previous_last = -1
    renew = False
    for b in batches:
        span = b.last_offset - b.first_offset + 1
        if span <= 0 or b.first_offset < previous_last:
            return ErrorCode.INVALID_REQUEST
        if len(b.types) != 1 and len(b.types) != span:
            return ErrorCode.INVALID_REQUEST
        if any(t not in ACK_TYPE_IDS for t in b.types):
            return ErrorCode.INVALID_REQUEST
        renew = renew or AcknowledgeType.RENEW in b.types
        previous_last = b.last_offset
    if renew and not renew_enabled:
        return ErrorCode.INVALID_RECORD_STATE
    return ErrorCode.NONE


def acknowledgement_error(batches: Sequence[AcknowledgementBatch], renew_ack: bool) -> ErrorCode:
    """INVALID_REQUEST for one share-partition's malformed acknowledgements in a ShareFetch or
    ShareAcknowledge, as Kafka 4.2's ``KafkaApis.validateAcknowledgementBatches`` refuses them
    before anything else is looked at (the topic's ACL, whether the partition exists): a range
    ending before it begins or beginning below the previous range's last offset, no type or
    neither one type nor one per offset, an unknown type, or RENEW (4, KIP-1222) in a request
    that does not say IsRenewAck (which a v1 request never does). Else NONE."""
    if validate_acknowledgements(batches) is not ErrorCode.NONE:
        return ErrorCode.INVALID_REQUEST
    if not renew_ack and any(AcknowledgeType.RENEW in b.types for b in batches):
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


class SharePartition:
    def __init__(self, config: SharePartitionConfig, start_offset: int, state_epoch: int = 0) -> None:
        self.config = config
        self.state_epoch = state_epoch
        self.start_offset = start_offset
        self.end_offset = start_offset
        # In offset order, not overlapping, all within [start_offset, end_offset).
        self._runs: list[_Run] = []
        # Lazy heaps (entries checked against the runs when looked at): (first, last) ranges that
        # were made AVAILABLE, and (deadline, first, last) of acquired ranges (one entry per
        # acquisition or renewal, not per offset). Every available offset lies in an entry of the
        # first, every acquired one in an entry of the second with its deadline.
        self._available: list[tuple[int, int]] = []
        self._locks: list[tuple[int, int, int]] = []

    # --- creation ----------------------------------------------------------------------------
    @classmethod
    def create(
        cls, config: SharePartitionConfig, start_offset: int, state_epoch: int = 0
    ) -> tuple[SharePartition, ShareStateChange]:
        """A share-partition with no state yet, starting at ``start_offset`` (from
        ``share.auto.offset.reset``, see ``initial_start_offset``). The change must be written
        before the first fetch is answered, so that a later load does not resolve the reset again."""
        return cls(config, start_offset, state_epoch), ShareStateChange(start_offset, (), state_epoch, reset=True)

    @classmethod
    def load(
        cls, config: SharePartitionConfig, durable: DurableShareState
    ) -> tuple[SharePartition, ShareStateChange | None]:
        """The share-partition as its records left it, every lock expired: a record that was
        acquired (written as available) is available again with its delivery count, or archived if
        that count reached the limit, as an expiring lock would have left it. The change (those
        archivals, and the start offset moving over them) is to be written like any other."""
        sp = cls(config, durable.start_offset, durable.state_epoch)
        changed: _Changed = []
        runs = sp._runs
        end = durable.end_offset
        at = sp.start_offset
        for b in durable.batches():
            if b.last_offset < at:
                continue
            first = max(b.first_offset, at)
            if first > at:
                # No written state: acquired but never written (lost with the old owner's memory),
                # or no record there. Available with count 0 (their durable form anyway): the next
                # fetch acquires those the log holds, archives the others.
                runs.append(_Run(at, first - 1, _AVAILABLE, 0))
            state, count = RecordState(b.delivery_state), b.delivery_count
            if state is _AVAILABLE and count >= config.delivery_count_limit:
                changed.append((first, b.last_offset, int(_ARCHIVED), count))
                state = _ARCHIVED
            runs.append(_Run(first, b.last_offset, state, count))
            at = b.last_offset + 1
        if at < end:
            runs.append(_Run(at, end - 1, _AVAILABLE, 0))
        sp._merge(0, len(runs))
        sp._available = [(r.first, r.last) for r in runs if r.state is _AVAILABLE]
        sp.end_offset = end
        before = sp.start_offset
        sp._advance_start()
        return sp, sp._change(changed, before)

    # --- reading -----------------------------------------------------------------------------
    @property
    def records(self) -> dict[int, InFlightRecord]:
        """Every in-flight offset's state, one entry per offset (a copy: for tests and inspection,
        costs the window's size)."""
        return {
            o: InFlightRecord(r.state, r.delivery_count, r.member, r.deadline)
            for r in self._runs
            for o in range(r.first, r.last + 1)
        }

    def run_count(self) -> int:
        """How many runs the in-flight state is kept in (what the operations cost in)."""
        return len(self._runs)

    def next_fetch_offset(self) -> int:
        """Where the next fetch from the log should start: the lowest available record, else SPEO."""
        heap, runs, start = self._available, self._runs, self.start_offset
        while heap:
            first, last = heap[0]
            lo = max(first, start)
            if lo <= last:
                # The first available offset of the entry's range is the lowest of all: one lower
                # would lie in another entry, whose first is not below this one's.
                i = self._index(lo)
                while i < len(runs) and runs[i].first <= last:
                    r = runs[i]
                    if r.state is _AVAILABLE:
                        offset = max(r.first, lo)
                        if offset != first:
                            heapq.heapreplace(heap, (offset, last))
                        return offset
                    i += 1
            heapq.heappop(heap)
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch can acquire anything: a record is available again, or the window has room."""
        return self.next_fetch_offset() < self.end_offset or self.in_flight() < self.config.max_in_flight_records

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def next_lock_deadline(self) -> int | None:
        """When ``expire_locks`` next has something to do (for the caller's timer)."""
        heap, runs = self._locks, self._runs
        while heap:
            deadline, first, last = heap[0]
            lo = max(first, self.start_offset)
            i = self._index(lo)
            while i < len(runs) and runs[i].first <= last:
                r = runs[i]
                if r.state is _ACQUIRED and r.deadline == deadline:
                    offset = max(r.first, lo)
                    if offset > first:  # what went before is done: the entry narrows
                        heapq.heapreplace(heap, (deadline, offset, last))
                    return deadline
                i += 1
            heapq.heappop(heap)
        return None

    def locks_due(self, now: int) -> int:
        """How many acquired records' locks have run out by ``now`` (what ``expire_locks`` gives back)."""
        return sum(r.last - r.first + 1 for r in self._runs if r.state is _ACQUIRED and r.deadline <= now)

    def holds(self, member: str) -> bool:
        """Whether ``member`` has any record acquired here."""
        return any(r.state is _ACQUIRED and r.member == member for r in self._runs)

    def acquired_by(self, member: str) -> list[int]:
        return [
            o for r in self._runs if r.state is _ACQUIRED and r.member == member for o in range(r.first, r.last + 1)
        ]

    def durable_picture(self) -> tuple[int, int, tuple[tuple[int, int, int], ...]]:
        """What the records written so far must replay to (``DurableShareState.picture``): offsets
        whose durable form is AVAILABLE with count 0 are never written (no state means that)."""
        offsets = tuple(
            (o, *d)
            for r in self._runs
            if r.last >= self.start_offset and (d := r.durable()) != (0, 0)
            for o in range(max(r.first, self.start_offset), r.last + 1)
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
        """Acquire for ``member`` the records of ``fetched`` (the batches a fetch from ``fetch_offset``,
        by default the first batch's offset, returned, in offset order) that are available or new,
        at most ``max_records``; new records only while the window is below
        ``max_in_flight_records``. Offsets in ``archive`` are never handed out: records of aborted
        transactions under ``share.isolation.level=read_committed`` and control records; they are
        archived. An available record the fetch skipped over (compacted away) is archived too.

        ``batch_optimized`` (ShareFetch v1, v2's ShareAcquireMode 0): both limits are soft, as in
        Kafka, whose acquisition ends at the end of the fetched batch holding its last record
        (``lastOffsetFromBatchWithRequestOffset``): a batch begun is acquired to its end. The
        answer carries whole batches anyway, so a client would otherwise read, and throw away,
        the rest of a batch it got only a part of. Records near the delivery-count limit keep
        their hard lots.

        The data path reads from ``next_fetch_offset()`` (after ``update_log_start_offset`` when
        the log's start has passed it): offsets the fetch returned nothing for are taken to hold
        no record, as Kafka does.

        The walk goes run by run (a stretch of new offsets, of one available run, inside or
        outside ``archive``): the first offset of each takes every decision an offset can take
        (the limits, the delivery-count throttle), the rest of the stretch then only counts
        against the limits, so a stretch is handed out, archived or stopped in one step."""
        batches = sorted((b for b in fetched if b.last >= b.first), key=lambda b: b.first)
        if max_records <= 0 or not batches:
            return Acquired((), None)
        cfg = self.config
        before = self.start_offset
        changed: _Changed = []
        out: list[AcquiredRecords] = []
        acquired = 0
        first_acquired = last_acquired = -1
        skip = _RangeSet(archive)
        lock_until = now + cfg.record_lock_duration_ms
        room = cfg.max_in_flight_records - self.in_flight()
        # What replay accepts as one batch bounds the window whatever the configuration or the
        # batch-optimized rounding says.
        span_room = MAX_BATCH_SPAN - self.in_flight()
        limit = max_records
        throttled = False  # this fetch hands out records near the delivery-count limit
        throttle_from, count_limit = cfg.throttle_delivery_count, cfg.delivery_count_limit
        opt = batch_optimized

        # Records the log no longer has: available ones between the fetch offset and the data.
        lo = batches[0].first if fetch_offset is None else fetch_offset
        self._archive_missing(max(lo, self.start_offset), batches, changed)

        stop = False
        for batch in batches:
            # Batch-optimized: once this batch gave a record, the limits no longer stop it.
            begun = False
            pos = max(batch.first, self.start_offset)
            while pos <= batch.last:
                # Nothing more is acquired or archived once the limit holds (see the loop's end).
                if acquired >= limit and not (begun and opt and not throttled):
                    stop = True
                    break
                end = self.end_offset
                new = pos >= end
                if new:
                    seg_last, count = batch.last, 0
                else:
                    i = self._index(pos)
                    r = self._runs[i] if i < len(self._runs) else None
                    if r is None or r.first > pos:
                        # A gap that held no record when first fetched.
                        pos = min(end, batch.last + 1) if r is None else r.first
                        continue
                    seg_last = min(r.last, batch.last)
                    if r.state is not _AVAILABLE:
                        pos = seg_last + 1
                        continue
                    count = r.delivery_count
                inside, edge = skip.span(pos)
                seg_last = min(seg_last, edge)
                archived = inside or count >= count_limit
                # The stretch's first offset.
                if new and (throttled or span_room <= 0 or (room <= 0 and not (begun and opt))):
                    stop = True
                    break
                if not archived:
                    if count >= throttle_from:
                        if not throttled:
                            if acquired:
                                stop = True  # records near the limit go out in a lot of their own, later
                                break
                            throttled = True
                            limit = max(1, max_records >> (count - throttle_from + 1))
                    elif throttled:
                        stop = True
                        break
                    acquired += 1
                    begun = True
                # The rest of the stretch: only the limits can stop it now.
                take = seg_last - pos
                if not archived and not (begun and opt and not throttled):
                    take = min(take, limit - acquired)
                if new:
                    take = 0 if throttled else min(take, span_room - 1)
                    if not (begun and opt):
                        take = min(take, room - 1)
                take = max(0, take)
                last = pos + take
                if not archived:
                    acquired += take
                if new:
                    room -= take + 1
                    span_room -= take + 1
                    self.end_offset = last + 1
                    if archived:
                        self._runs.append(_Run(pos, last, _ARCHIVED, 0))
                        changed.append((pos, last, int(_ARCHIVED), 0))
                    else:
                        self._runs.append(_Run(pos, last, _ACQUIRED, 1, member, lock_until))
                    self._merge(len(self._runs) - 2, len(self._runs))
                else:
                    j, k = self._cut(pos, last)
                    for r in self._runs[j:k]:
                        if archived:
                            r.state = _ARCHIVED
                        else:
                            r.state = _ACQUIRED
                            r.delivery_count += 1
                            r.member = member
                            r.deadline = lock_until
                    if archived:
                        changed.append((pos, last, int(_ARCHIVED), count))
                    self._merge(j - 1, k + 1)
                if not archived:
                    # Consecutive offsets with the same delivery count: one AcquiredRecords.
                    delivered = count + 1
                    if out and last_acquired + 1 == pos and out[-1].delivery_count == delivered:
                        out[-1] = AcquiredRecords(out[-1].first_offset, last, delivered)
                    else:
                        out.append(AcquiredRecords(pos, last, delivered))
                    if first_acquired < 0:
                        first_acquired = pos
                    last_acquired = last
                if last < seg_last:
                    stop = True  # a limit cut the stretch
                    break
                pos = last + 1
            if stop:
                break
        if acquired:
            # One lock entry for all of them (offsets between that this fetch did not acquire
            # fail the entry's check when it is due: another deadline, or not acquired).
            heapq.heappush(self._locks, (lock_until, first_acquired, last_acquired))
        self._advance_start()
        return Acquired(tuple(out), self._change(changed, before))

    def _archive_missing(self, lo: int, batches: Sequence[OffsetRange], changed: _Changed) -> None:
        hi = min(batches[-1].last, self.end_offset - 1)
        if lo > hi:
            return
        # Only the available runs in range are looked at, not every offset of the window a fetch
        # from a stale offset spans (with several members on one partition most fetches start
        # below the end: another took it).
        present = _RangeSet(batches)
        missing: list[tuple[int, int]] = []
        runs = self._runs
        i = self._index(lo)
        while i < len(runs) and runs[i].first <= hi:
            r = runs[i]
            if r.state is _AVAILABLE:
                missing += present.outside(max(r.first, lo), min(r.last, hi))
            i += 1
        for first, last in missing:
            j, k = self._cut(first, last)
            for r in runs[j:k]:
                changed.append((r.first, r.last, int(_ARCHIVED), r.delivery_count))
                r.state = _ARCHIVED
            self._merge(j - 1, k + 1)

    # --- acknowledging -------------------------------------------------------------------------
    def acknowledge(self, member: str, batches: Sequence[AcknowledgementBatch], now: int) -> Acknowledged:
        """Apply a member's acknowledgements, all or nothing, with the errors of Kafka 4.2's
        ``SharePartition.acknowledge`` (its sub-map lookup, then each record): INVALID_REQUEST for
        a malformed batch list or a range past anything ever acquired; INVALID_RECORD_STATE when
        nothing is in flight at all (Kafka finds no cached batch), or an offset is not acquired by
        ``member`` (never acquired, acquired by another member, its lock expired, already
        acknowledged, or acknowledged by the range before it in this same list: Kafka's record is
        then in a state transition). Offsets below SPSO are skipped (they are done already)."""
        error = validate_acknowledgements(batches, self.config.renew_enabled)
        if error is not ErrorCode.NONE:
            return Acknowledged(error)
        runs = self._runs
        plan: list[tuple[int, int, int]] = []  # first, last, acknowledge type
        previous: AcknowledgementBatch | None = None
        for batch in batches:
            prior, previous = previous, batch
            if batch.last_offset < self.start_offset:
                continue
            if self.end_offset == self.start_offset:
                return Acknowledged(ErrorCode.INVALID_RECORD_STATE)  # no record in flight
            if batch.last_offset >= self.end_offset:
                return Acknowledged(ErrorCode.INVALID_REQUEST)  # past anything ever acquired
            lo = max(batch.first_offset, self.start_offset)
            i = self._index(lo)
            if (
                prior is not None
                and lo == prior.last_offset
                and prior.types[-1] != AcknowledgeType.RENEW
                and i < len(runs)
                and runs[i].first <= lo
            ):
                # The offset the range shares with the one before (validation lets a range begin
                # at the previous one's last offset) was acknowledged by it: not acquired any more.
                return Acknowledged(ErrorCode.INVALID_RECORD_STATE)
            while i < len(runs) and runs[i].first <= batch.last_offset:
                r = runs[i]  # offsets in no run hold no record: nothing to acknowledge
                if r.state is not _ACQUIRED or r.member != member:
                    return Acknowledged(ErrorCode.INVALID_RECORD_STATE)
                i += 1
            if len(batch.types) == 1:
                plan.append((lo, batch.last_offset, batch.types[0]))
                continue
            # One type per offset: runs of the same type.
            types, base = batch.types, batch.first_offset
            first = lo
            for offset in range(lo + 1, batch.last_offset + 2):
                if offset > batch.last_offset or types[offset - base] != types[first - base]:
                    plan.append((first, offset - 1, types[first - base]))
                    first = offset
        before = self.start_offset
        changed: _Changed = []
        for first, last, ack in plan:
            j, k = self._cut(first, last)
            if j == k:
                continue
            if ack == AcknowledgeType.RENEW:
                deadline = now + self.config.record_lock_duration_ms
                for r in runs[j:k]:
                    r.deadline = deadline
                heapq.heappush(self._locks, (deadline, runs[j].first, runs[k - 1].last))
            else:
                self._release(j, k, _ACK_TARGET[ack], changed)
            self._merge(j - 1, k + 1)
        self._advance_start()
        return Acknowledged(ErrorCode.NONE, self._change(changed, before))

    # --- releasing -----------------------------------------------------------------------------
    def expire_locks(self, now: int) -> ShareStateChange | None:
        """Locks that ran out by ``now`` give their records back: available again with the same
        delivery count, or archived when the count reached the limit."""
        before = self.start_offset
        changed: _Changed = []
        heap, runs = self._locks, self._runs
        while heap and heap[0][0] <= now:
            deadline, first, last = heapq.heappop(heap)
            lo = max(first, self.start_offset)
            due: list[tuple[int, int]] = []
            i = self._index(lo)
            while i < len(runs) and runs[i].first <= last:
                r = runs[i]
                if r.state is _ACQUIRED and r.deadline == deadline:
                    due.append((max(r.first, lo), min(r.last, last)))
                i += 1
            for a, b in due:
                j, k = self._cut(a, b)
                self._release(j, k, _AVAILABLE, changed)
                self._merge(j - 1, k + 1)
        self._advance_start()
        return self._change(changed, before)

    def release_member(self, member: str) -> ShareStateChange | None:
        """The member left (or its share session closed): its records go back as a lock expiry
        would leave them. Kafka 4.2 keeps the delivery count (KAFKA-19972): a consumer that crashes
        on a record cannot get it redelivered forever."""
        before = self.start_offset
        changed: _Changed = []
        runs = self._runs
        held = [(r.first, r.last) for r in runs if r.state is _ACQUIRED and r.member == member]
        for a, b in held:
            j, k = self._cut(a, b)
            self._release(j, k, _AVAILABLE, changed)
            self._merge(j - 1, k + 1)
        self._advance_start()
        return self._change(changed, before)

    def update_log_start_offset(self, log_start_offset: int) -> ShareStateChange | None:
        """The log's start moved past SPSO (retention, DeleteRecords): what lay below is gone, acquired
        or not; acknowledgements of it are then skipped as below SPSO."""
        if log_start_offset <= self.start_offset:
            return None
        before = self.start_offset
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        del self._runs[: self._split_at(log_start_offset)]
        self._advance_start()
        return self._change([], before)

    def _release(self, j: int, k: int, target: RecordState, changed: _Changed) -> None:
        """Runs ``j..k-1`` (acquired) go to ``target``; AVAILABLE at the delivery-count limit is ARCHIVED."""
        limit = self.config.delivery_count_limit
        for r in self._runs[j:k]:
            state = _ARCHIVED if target is _AVAILABLE and r.delivery_count >= limit else target
            r.state = state
            r.member = None
            r.deadline = 0
            # The durable form was (AVAILABLE, count - 1): it changes whatever the target.
            changed.append((r.first, r.last, int(state), r.delivery_count))
            if state is _AVAILABLE:
                heapq.heappush(self._available, (r.first, r.last))

    # --- bookkeeping ---------------------------------------------------------------------------
    def _index(self, offset: int) -> int:
        """The index of the run holding ``offset``, else of the first run after it."""
        runs = self._runs
        i = bisect_right(runs, offset, key=_first_of) - 1
        if i >= 0 and runs[i].last >= offset:
            return i
        return i + 1

    def _cut(self, first: int, last: int) -> tuple[int, int]:
        """Split runs so that none straddles ``first`` or ``last``; the runs within them are ``j..k-1``."""
        j = self._split_at(first)
        return j, self._split_at(last + 1)

    def _split_at(self, offset: int) -> int:
        """Make ``offset`` begin a run if a run holds it; answers the index of the first run at or after it."""
        runs = self._runs
        i = bisect_right(runs, offset, key=_first_of) - 1
        if i >= 0:
            r = runs[i]
            if r.first < offset <= r.last:
                runs.insert(i + 1, _Run(offset, r.last, r.state, r.delivery_count, r.member, r.deadline))
                r.last = offset - 1
            elif r.first == offset:
                return i
        return i + 1

    def _merge(self, lo: int, hi: int) -> None:
        """Join adjacent alike runs among indices ``lo..hi`` (clamped), so that splits do not pile up."""
        runs = self._runs
        lo, hi = max(lo, 0), min(hi, len(runs) - 1)
        if hi <= lo:
            return
        kept = [runs[lo]]
        for r in runs[lo + 1 : hi + 1]:
            prev = kept[-1]
            if prev.last + 1 == r.first and prev.alike(r):
                prev.last = r.last
            else:
                kept.append(r)
        if len(kept) != hi - lo + 1:
            runs[lo : hi + 1] = kept

    def _advance_start(self) -> None:
        """SPSO moves up over done records and offsets that hold no record; what is below it is dropped."""
        start, end, runs = self.start_offset, self.end_offset, self._runs
        done = 0
        while start < end:
            if done == len(runs):
                start = end  # no record left: the rest held none
                break
            r = runs[done]
            if r.first > start:
                start = r.first  # a gap (no record was ever fetched there)
                continue
            if r.state not in _TERMINAL:
                break
            start = r.last + 1
            done += 1
        if done:
            del runs[:done]
        self.start_offset = start

    def _change(self, changed: _Changed, start_before: int) -> ShareStateChange | None:
        """The offsets whose durable state changed in the operation (at most once each), and SPSO."""
        start = self.start_offset
        if not changed and start == start_before:
            return None
        kept = sorted((max(a, start), b, s, c) for a, b, s, c in changed if b >= start)
        merged = merge_ranges(kept)
        if not merged and start == start_before:
            return None
        return ShareStateChange(start, tuple(merged), self.state_epoch)


class _RangeSet:
    """Membership in a few offset ranges."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[OffsetRange]) -> None:
        self._ranges = sorted((r.first, r.last) for r in ranges if r.last >= r.first)

    def span(self, offset: int) -> tuple[bool, int]:
        """Whether ``offset`` is in the set, and the last offset from it on with the same answer."""
        covered = offset - 1  # the ranges cover offset..covered without a hole
        for first, last in self._ranges:
            if first <= covered + 1:
                covered = max(covered, last)
                continue
            if covered >= offset:
                return True, covered
            return False, first - 1
        return (True, covered) if covered >= offset else (False, 1 << 62)

    def outside(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of ``lo..hi`` in no range."""
        out: list[tuple[int, int]] = []
        at = lo
        for first, last in self._ranges:
            if last < at:
                continue
            if first > hi:
                break
            if first > at:
                out.append((at, first - 1))
            at = max(at, last + 1)
            if at > hi:
                break
        if at <= hi:
            out.append((at, hi))
        return out
