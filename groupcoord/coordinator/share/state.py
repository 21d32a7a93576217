"""The durable state of share-partitions: ShareSnapshot / ShareUpdate records and their replay.

What survives a failover, per share-partition (group, topic, partition): the start offset (SPSO),
the state epoch, and for each offset at or above SPSO that has a state: its durable state
(AVAILABLE = not done, ACKNOWLEDGED, ARCHIVED; Kafka's ids 0/2/4) and its delivery count. An
acquisition is not written at all, as in Kafka (whose share coordinator is written to on
acknowledgements, releases and lock expiries, never on acquisition): what ends or gives back an
acquisition writes the record's state with the delivery count it took, so from then on the count
survives a failover and the delivery-count limit holds across failovers. After a load every lock
has expired; a record acquired and not yet acknowledged, released or expired is AVAILABLE again
with the count last written (its lost delivery is not counted, as in Kafka). An offset between
the start and the last written offset with no state is such a record, or holds none
(``SharePartition.load``). Which member holds a record and until when is never written.

Records (Kafka's share coordinator, on this project's compacted log):

* ``ShareSnapshot`` (key group/topic/partition): the whole state, with a ``snapshot_epoch``.
* ``ShareUpdate`` (key group/topic/partition/slot): a change on top of the snapshot of the same
  ``snapshot_epoch``: the new start offset and the offsets whose durable state changed. The
  ``slot`` is the update's index since the snapshot; after ``updates_per_snapshot`` updates the
  next write is a snapshot (snapshot epoch + 1) and its updates reuse the slots. Compaction thus
  keeps at most ``updates_per_snapshot`` + 1 records per share-partition, and never drops one that
  replay needs: every update of the current snapshot epoch is the newest value of its slot.

Replay keeps the newest snapshot and the newest update of each slot; the state is the snapshot
with the updates of its epoch applied in slot order (an update of another epoch is a leftover of
an older snapshot that compaction has not removed yet). The state is thus a function of the newest
value of each key, whatever order those are read in: the full log, the compacted log, and a load
whose restores re-append some keys' valid values at the end (after a zombie) agree.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter

from groupcoord.coordinator.share.partition_types import RecordState
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
)

# Kafka's share.coordinator.snapshot.update.records.per.snapshot is 500. Here the newest update
# of each slot is kept in memory (see ``replay``) and a load reads every one, so fewer: a snapshot
# is small anyway (SPSO and the in-flight window's states, merged into runs).
DEFAULT_UPDATES_PER_SNAPSHOT = 50

# The durable state ids: ACQUIRED is never written (see the module docstring).
DURABLE_STATES = frozenset({int(RecordState.AVAILABLE), int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)})


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareStateChange:
    """What one operation on a share-partition changed durably: the start offset after it and the
    offsets whose (durable state, delivery count) changed. ``reset`` replaces the whole state (a
    new share-partition, or its offsets reset): it is always written as a snapshot."""

    start_offset: int
    batches: tuple[ShareStateBatch, ...] = ()
    state_epoch: int = 0
    reset: bool = False


@dataclass(slots=True)
class DurableShareState:
    """One share-partition as the records have it."""

    start_offset: int
    state_epoch: int = 0
    snapshot_epoch: int = 0
    # The slot of the next update (one past the last update applied on the snapshot).
    updates: int = 0
    topic_id: str | None = None
    # (first, last, durable state id, delivery count) in offset order, not overlapping, all at or
    # above start_offset: ranges as written, so that replaying an update costs in its batches,
    # not in the offsets they span (an acknowledged fetch is thousands of offsets in one batch).
    runs: list[tuple[int, int, int, int]] = field(default_factory=list)

    @property
    def offsets(self) -> dict[int, tuple[int, int]]:
        """offset -> (durable state id, delivery count), one entry per offset (a copy: for tests,
        tools and checks that read offsets one by one; costs the window's size)."""
        return {o: (state, count) for first, last, state, count in self.runs for o in range(first, last + 1)}

    @property
    def end_offset(self) -> int:
        """One past the last offset with a state (SPEO, exclusive); the start offset if none."""
        return max(self.start_offset, self.runs[-1][1] + 1) if self.runs else self.start_offset

    def apply(self, start_offset: int, batches: Iterable[ShareStateBatch]) -> None:
        runs = self.runs
        if start_offset > self.start_offset:
            # Drop what the start passed, cut the range it lands in.
            del runs[: bisect_left(runs, start_offset, key=_last_of)]
            if runs and runs[0][0] < start_offset:
                runs[0] = (start_offset, *runs[0][1:])
            self.start_offset = start_offset
        for b in batches:
            first = max(b.first_offset, self.start_offset)
            if first > b.last_offset:
                continue
            last = b.last_offset
            i = bisect_left(runs, first, key=_last_of)  # the first range reaching first
            j = bisect_right(runs, last, key=_first_of)  # past the last range starting by last
            put = [(first, last, b.delivery_state, b.delivery_count)]
            if i < j and runs[i][0] < first:
                put.insert(0, (runs[i][0], first - 1, runs[i][2], runs[i][3]))
            if i < j and runs[j - 1][1] > last:
                put.append((last + 1, runs[j - 1][1], runs[j - 1][2], runs[j - 1][3]))
            runs[i:j] = put

    def max_count(self, first: int, last: int) -> int:
        """The highest delivery count written for an offset of ``first..last`` (0 if none)."""
        runs = self.runs
        i = bisect_left(runs, first, key=_last_of)
        j = bisect_right(runs, last, key=_first_of)
        return max((r[3] for r in runs[i:j]), default=0)

    def batches(self) -> list[ShareStateBatch]:
        """The runs of consecutive offsets with the same state and count, as a snapshot holds them."""
        return merge_ranges(self.runs)

    def picture(self) -> tuple[int, int, tuple[tuple[int, int, int], ...]]:
        """Comparable: state epoch, start offset and every offset's state (not the record bookkeeping,
        which differs between a compacted and a full log)."""
        return (
            self.state_epoch,
            self.start_offset,
            tuple((o, s, c) for first, last, s, c in self.runs for o in range(first, last + 1)),
        )


_first_of = itemgetter(0)
_last_of = itemgetter(1)


def merge_ranges(ranges: Iterable[tuple[int, int, int, int]]) -> list[ShareStateBatch]:
    """The batches of (first, last, state, count) ranges given in offset order and not overlapping:
    neighbours with the same state and count become one batch."""
    merged: list[ShareStateBatch] = []
    for first, last, state, count in ranges:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and prev.last_offset + 1 == first
            and prev.delivery_state == state
            and prev.delivery_count == count
        ):
            merged[-1] = ShareStateBatch(prev.first_offset, last, state, count)
        else:
            merged.append(ShareStateBatch(first, last, state, count))
    return merged


def combine_changes(first: ShareStateChange | None, then: ShareStateChange | None) -> ShareStateChange | None:
    """One change that replays as ``first`` followed by ``then`` (two operations on one
    share-partition in one write, e.g. a ShareFetch's acknowledgements and its acquisition): the
    later start offset, ``then``'s offsets over ``first``'s, ranges only (no per-offset work)."""
    if first is None:
        return then
    if then is None:
        return first
    start = max(first.start_offset, then.start_offset)
    covered = [(b.first_offset, b.last_offset) for b in then.batches]
    kept: list[ShareStateBatch] = []
    for b in first.batches:
        lo = max(b.first_offset, start)
        for c_first, c_last in covered:
            if lo > b.last_offset:
                break
            if c_last < lo or c_first > b.last_offset:
                continue
            if c_first > lo:
                kept.append(ShareStateBatch(lo, c_first - 1, b.delivery_state, b.delivery_count))
            lo = c_last + 1
        if lo <= b.last_offset:
            kept.append(ShareStateBatch(lo, b.last_offset, b.delivery_state, b.delivery_count))
    runs = sorted([*kept, *(b for b in then.batches if b.last_offset >= start)], key=lambda b: b.first_offset)
    merged: list[ShareStateBatch] = []
    for b in runs:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and prev.last_offset + 1 == b.first_offset
            and (prev.delivery_state, prev.delivery_count) == (b.delivery_state, b.delivery_count)
        ):
            merged[-1] = ShareStateBatch(prev.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        else:
            merged.append(b)
    return ShareStateChange(start, tuple(merged), then.state_epoch, first.reset or then.reset)


class ShareStateStore:
    """Every share-partition's durable state in one shard, rebuilt only through ``replay``."""

    def __init__(self, updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT) -> None:
        self.updates_per_snapshot = updates_per_snapshot
        self.partitions: dict[SharePartitionKey, DurableShareState] = {}
        # The newest value of each key, which the state is computed from.
        self._snapshots: dict[SharePartitionKey, ShareSnapshotValue] = {}
        self._slots: dict[SharePartitionKey, dict[int, ShareUpdateValue]] = {}

    def get(self, key: SharePartitionKey) -> DurableShareState | None:
        return self.partitions.get(key)

    # --- writing ---------------------------------------------------------------------------
    def records_for(
        self, key: SharePartitionKey, change: ShareStateChange, topic_id: str | None = None
    ) -> list[CoordinatorRecord]:
        """The record that makes ``change`` durable: a snapshot for a new share-partition, a reset,
        or every ``updates_per_snapshot`` updates; an update otherwise. Nothing is applied here:
        the caller replays the record (as for every other record of the shard)."""
        current = self.partitions.get(key)
        snap_key = ShareSnapshotKey(key.group, key.topic, key.partition)
        if current is None or change.reset or current.updates >= self.updates_per_snapshot:
            if current is None or change.reset:
                merged = DurableShareState(change.start_offset, change.state_epoch)
            else:
                merged = DurableShareState(current.start_offset, current.state_epoch, runs=list(current.runs))
            merged.apply(change.start_offset, change.batches)
            value = ShareSnapshotValue(
                snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                state_epoch=merged.state_epoch,
                start_offset=merged.start_offset,
                state_batches=merged.batches(),
                topic_id=topic_id if topic_id is not None or current is None else current.topic_id,
            )
            return [CoordinatorRecord(RecordType.SHARE_SNAPSHOT, snap_key, value)]
        update_key = ShareUpdateKey(key.group, key.topic, key.partition, current.updates)
        update = ShareUpdateValue(current.snapshot_epoch, change.start_offset, list(change.batches))
        return [CoordinatorRecord(RecordType.SHARE_UPDATE, update_key, update)]

    def delete_records(self, key: SharePartitionKey) -> list[CoordinatorRecord]:
        """Tombstones for the share-partition's snapshot and every update slot it may have used."""
        slots = max(self.updates_per_snapshot, self.partitions[key].updates if key in self.partitions else 0)
        out = [
            CoordinatorRecord(RecordType.SHARE_SNAPSHOT, ShareSnapshotKey(key.group, key.topic, key.partition), None)
        ]
        out += [
            CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey(key.group, key.topic, key.partition, s), None)
            for s in range(slots)
        ]
        return out

    # --- replay ----------------------------------------------------------------------------
    def replay(self, record: CoordinatorRecord) -> None:
        """Keep the newest snapshot and update of each key; the state is the snapshot with the
        updates of its epoch applied in slot order. It is thus a function of the newest value of
        each key whatever order they are read in: a compacted log, and a load that re-appends
        some keys' valid values at the end (the runtime's restores after a zombie), give the
        same state as the full log."""
        k = record.key
        key = SharePartitionKey(k.group, k.topic, k.partition)
        if record.type == RecordType.SHARE_SNAPSHOT:
            if record.value is None:
                self._snapshots.pop(key, None)
            else:
                self._snapshots[key] = record.value
            self._rebuild(key)
        elif record.type == RecordType.SHARE_UPDATE:
            slots = self._slots.setdefault(key, {})
            u: ShareUpdateValue | None = record.value
            old = slots.pop(k.slot, None)
            if u is not None:
                slots[k.slot] = u
            elif not slots:
                del self._slots[key]
            current = self.partitions.get(key)
            if current is None:
                return
            if u is not None and u.snapshot_epoch == current.snapshot_epoch and k.slot == current.updates:
                current.apply(u.start_offset, _valid(u.state_batches))  # the next one, as written
                current.updates += 1
            elif (u is not None and u.snapshot_epoch == current.snapshot_epoch) or (
                old is not None and old.snapshot_epoch == current.snapshot_epoch
            ):
                self._rebuild(key)

    def _rebuild(self, key: SharePartitionKey) -> None:
        v = self._snapshots.get(key)
        if v is None:
            self.partitions.pop(key, None)
            return
        state = DurableShareState(v.start_offset, v.state_epoch, v.snapshot_epoch, 0, v.topic_id)
        state.apply(v.start_offset, _valid(v.state_batches))
        for slot, u in sorted(self._slots.get(key, {}).items()):
            if u.snapshot_epoch == v.snapshot_epoch:
                state.apply(u.start_offset, _valid(u.state_batches))
                state.updates = slot + 1
        self.partitions[key] = state

    def picture(self) -> dict[SharePartitionKey, tuple[int, int, tuple[tuple[int, int, int], ...]]]:
        return {k: v.picture() for k, v in sorted(self.partitions.items(), key=lambda kv: repr(kv[0]))}


# A batch wider than this cannot come from this writer (``SharePartition.acquire`` keeps the
# in-flight window below it; Kafka's max.record.locks is at most 10,000): replaying one would only
# cost memory, so it is dropped.
MAX_BATCH_SPAN = 1 << 17


def _valid(batches: Iterable[ShareStateBatch]) -> Iterator[ShareStateBatch]:
    for b in batches:
        if b.delivery_state in DURABLE_STATES and 0 <= b.last_offset - b.first_offset < MAX_BATCH_SPAN:
            yield b
