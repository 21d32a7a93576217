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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

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
    # offset -> (durable state id, delivery count), offsets >= start_offset only.
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def end_offset(self) -> int:
        """One past the last offset with a state (SPEO, exclusive); the start offset if none."""
        return max(self.start_offset, max(self.offsets, default=-1) + 1)

    def apply(self, start_offset: int, batches: Iterable[ShareStateBatch]) -> None:
        if start_offset > self.start_offset:
            offsets = self.offsets
            if start_offset - self.start_offset < len(offsets):
                # The usual step (acknowledged records done): drop the offsets passed, not a
                # rebuild of the whole in-flight window for each update replayed.
                for offset in range(self.start_offset, start_offset):
                    offsets.pop(offset, None)
            else:
                self.offsets = {o: s for o, s in offsets.items() if o >= start_offset}
            self.start_offset = start_offset
        for b in batches:
            for offset in range(max(b.first_offset, self.start_offset), b.last_offset + 1):
                self.offsets[offset] = (b.delivery_state, b.delivery_count)

    def batches(self) -> list[ShareStateBatch]:
        return list(merge_batches(sorted(self.offsets.items())))

    def picture(self) -> tuple[int, int, tuple[tuple[int, int, int], ...]]:
        """Comparable: state epoch, start offset and every offset's state (not the record bookkeeping,
        which differs between a compacted and a full log)."""
        return (self.state_epoch, self.start_offset, tuple((o, s, c) for o, (s, c) in sorted(self.offsets.items())))


def merge_batches(offsets: Iterable[tuple[int, tuple[int, int]]]) -> Iterator[ShareStateBatch]:
    """Runs of consecutive offsets (given in ascending order) with the same state and count."""
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
                merged = DurableShareState(current.start_offset, current.state_epoch, offsets=dict(current.offsets))
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
