"""The share data path's operations on one shard: pure handlers ``(state, now) -> Result``.

The shard that owns a group holds its share-partitions (Kafka's share coordinator keys them by
group:topic:partition; here the group's shard is that coordinator). ``ShareDataState`` is the
shard's part: the replayed ``ShareStateStore`` (durable, in ``snapshot()``) and the live
``SharePartition`` of each share-partition touched since the load (transient: which member holds
which record until when; a load starts with none, i.e. every lock expired).

Every operation works on the live partitions and returns the records of what changed durably
(``ShareStateStore.records_for``); the runtime replays them and answers once they are read back,
as for every other write. The records of one operation go in one batch. No I/O, no clock: the
caller (``service/share_data.py``) fetches from the cluster and passes the batches and the time in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.runtime.api import CancelTimer, Result, ScheduleTimer, TimerOp
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import (
    DurableShareState,
    SharePartitionKey,
    ShareStateChange,
    ShareStateStore,
    combine_changes,
)
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareTopicPartitions,
)

SHARE_STATE_RECORD_TYPES = frozenset(
    {RecordType.SHARE_SNAPSHOT, RecordType.SHARE_UPDATE, RecordType.SHARE_GROUP_STATE_PARTITION_METADATA}
)

# group -> topic name -> (topic id, partitions with state): record 15 as replayed.
Initialized = dict[str, dict[str, tuple[str | None, frozenset[int]]]]


@dataclass(frozen=True, slots=True)
class ShareLockExpiry:
    """Timer event: the earliest record lock of a share-partition runs out."""

    key: SharePartitionKey


def lock_timer_key(key: SharePartitionKey) -> str:
    return f"share-lock\x00{key.group}\x00{key.topic}\x00{key.partition}"


class ShareDataState:
    """The share-partitions of one shard: durable store (replayed) and live partitions (transient)."""

    def __init__(self) -> None:
        self.store = ShareStateStore()
        self.live: dict[SharePartitionKey, SharePartition] = {}
        # Told of every share-partition an operation left with records to acquire (released,
        # a lock expired, acknowledged out of the in-flight window, just created): the data path
        # wakes the ShareFetches waiting for it. Transient, set on the live state by the data
        # path; it may only schedule (the operation is still running).
        self.listener: Callable[[SharePartitionKey], None] | None = None
        self.initialized: Initialized = {}

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type == RecordType.SHARE_GROUP_STATE_PARTITION_METADATA:
            v: ShareGroupStatePartitionMetadataValue | None = record.value
            if v is None:
                self.initialized.pop(record.key.group, None)
            else:
                self.initialized[record.key.group] = {
                    t.topic_name: (t.topic_id, frozenset(t.partitions)) for t in v.initialized_topics
                }
            return
        self.store.replay(record)
        k = record.key
        key = SharePartitionKey(k.group, k.topic, k.partition)
        if self.store.get(key) is None:
            # Deleted (tombstones): the live partition goes with it.
            self.live.pop(key, None)

    def snapshot(self) -> Any:
        initialized = {
            g: {t: sorted(ps) for t, (_, ps) in sorted(ts.items())} for g, ts in sorted(self.initialized.items())
        }
        return {"partitions": self.store.picture(), "initialized": initialized}

    def partitions_of(self, group: str) -> list[tuple[SharePartitionKey, SharePartition]]:
        return sorted(((k, sp) for k, sp in self.live.items() if k.group == group), key=lambda kv: repr(kv[0]))


@dataclass(slots=True)
class _Changes:
    """Collects the changes and lock timers of one operation over several share-partitions: one
    record per share-partition, whatever the operation did to it (its changes are combined), so
    its record's slot is numbered from the store as the runtime left it (the runtime replays the
    records afterwards)."""

    state: ShareDataState
    records: list[CoordinatorRecord] = field(default_factory=list)
    timers: list[TimerOp] = field(default_factory=list)
    _touched: dict[SharePartitionKey, tuple[SharePartition, ShareStateChange | None, str | None]] = field(
        default_factory=dict
    )

    def add(
        self, key: SharePartitionKey, sp: SharePartition, change: ShareStateChange | None, topic_id: str | None = None
    ) -> None:
        before = self._touched.get(key)
        if before is not None:
            change = combine_changes(before[1], change)
            topic_id = topic_id if topic_id is not None else before[2]
        self._touched[key] = (sp, change, topic_id)

    def result(self, response: Any) -> Result[Any]:
        listener = self.state.listener
        # The share-partitions' records first, then any the operation added itself (record 15).
        records: list[CoordinatorRecord] = []
        for key, (sp, change, topic_id) in self._touched.items():
            if change is not None:
                records += self.state.store.records_for(key, change, topic_id)
            deadline = sp.next_lock_deadline()
            if deadline is None:
                self.timers.append(CancelTimer(lock_timer_key(key)))
            else:
                self.timers.append(ScheduleTimer(lock_timer_key(key), deadline, ShareLockExpiry(key)))
            if listener is not None and sp.can_acquire():
                listener(key)
        self._touched.clear()
        self.records[:0] = records
        return Result(response, self.records, self.timers)


def partition_metadata_record(
    state: ShareDataState,
    group: str,
    added: Iterable[tuple[SharePartitionKey, str | None]] = (),
    removed_topics: Iterable[str] = (),
) -> list[CoordinatorRecord]:
    """Record 15 (ShareGroupStatePartitionMetadata) after share-partitions got state (``added``,
    with their topic ids) or topics lost theirs; nothing when that changes nothing. Kafka writes
    the topics as initializing, asks its share coordinator, then writes them as initialized; here
    the state and this record go in one atomic batch, so they are initialized at once."""
    current = state.initialized.get(group, {})
    topics = {t: (tid, set(ps)) for t, (tid, ps) in current.items() if t not in set(removed_topics)}
    for key, topic_id in added:
        tid, ps = topics.setdefault(key.topic, (topic_id, set()))
        topics[key.topic] = (tid or topic_id, ps | {key.partition})
    if {t: (tid, frozenset(ps)) for t, (tid, ps) in topics.items()} == current:
        return []
    value = ShareGroupStatePartitionMetadataValue(
        initialized_topics=[ShareTopicPartitions(tid, t, sorted(ps)) for t, (tid, ps) in sorted(topics.items())]
    )
    record_key = ShareGroupStatePartitionMetadataKey(group)
    return [CoordinatorRecord(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA, record_key, value)]


# --- initialising -----------------------------------------------------------------------------


def needs_start(state: ShareDataState, key: SharePartitionKey) -> bool:
    """Whether the share-partition has neither live nor durable state: its start offset must be
    looked up (``share.auto.offset.reset``) before ``ensure`` can create it."""
    return key not in state.live and state.store.get(key) is None


def ensure(
    state: ShareDataState,
    partitions: Sequence[tuple[SharePartitionKey, SharePartitionConfig, str | None, int | None]],
) -> Result[None]:
    """Make each share-partition live: loaded from its durable state (every lock expired), or
    created at the given start offset (``None``: it needs one and has none: skipped). Returns the
    records of the creations and of the archivals a load does."""
    changes = _Changes(state)
    created: list[tuple[SharePartitionKey, str | None]] = []
    for key, config, topic_id, start in partitions:
        if key in state.live:
            continue
        durable = state.store.get(key)
        if durable is not None:
            sp, change = SharePartition.load(config, durable)
        elif start is not None:
            sp, change = SharePartition.create(config, start)
            created.append((key, topic_id))
        else:
            continue
        state.live[key] = sp
        changes.add(key, sp, change, topic_id)
    for group in sorted({k.group for k, _ in created}):
        changes.records += partition_metadata_record(state, group, [(k, t) for k, t in created if k.group == group])
    return changes.result(None)


def fetch_offsets(
    state: ShareDataState, keys: Iterable[SharePartitionKey]
) -> dict[SharePartitionKey, tuple[int, bool]]:
    """Where to fetch each live share-partition that can acquire something from, and whether
    that is its end (only new records can be had there: the log's fetch may wait for them).
    Read-only."""
    out = {}
    for key in keys:
        sp = state.live.get(key)
        if sp is not None and sp.can_acquire():
            offset = sp.next_fetch_offset()
            out[key] = (offset, offset >= sp.end_offset)
    return out


def has_available(state: ShareDataState, keys: Iterable[SharePartitionKey]) -> bool:
    """Whether a live share-partition has records below its end to acquire (released, a lock
    expired): not only new ones from the log. Read-only."""
    for key in keys:
        sp = state.live.get(key)
        if sp is not None and sp.next_fetch_offset() < sp.end_offset:
            return True
    return False


# --- acquiring and acknowledging --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fetched:
    """What a fetch of one share-partition from the log returned: its batches (offset ranges) from
    ``fetch_offset``, and the offsets never to deliver (control records, aborted transactions)."""

    key: SharePartitionKey
    fetch_offset: int
    batches: tuple[OffsetRange, ...]
    archive: tuple[OffsetRange, ...] = ()
    log_start_offset: int | None = None


def configure(sp: SharePartition, config: SharePartitionConfig | None) -> None:
    """Run ``sp`` under the group's configs of now (``None``: as it is). Kafka's SharePartition
    reads the group's configs where it uses them (the lock duration at each acquisition, the
    delivery-count limit at each release, the record-lock limit at each fetch), so a change
    applies to share-partitions already live: each operation here passes the configs it read."""
    if config is not None and sp.config is not config and sp.config != config:
        sp.config = config


def acquire(
    state: ShareDataState,
    member: str,
    fetched: Sequence[Fetched],
    max_records: int,
    now: int,
    batch_optimized: bool = False,
    config: SharePartitionConfig | None = None,
) -> Result[dict[SharePartitionKey, tuple[AcquiredRecords, ...]]]:
    """Acquire for ``member`` what the fetches returned, at most ``max_records`` over all (a soft
    limit when ``batch_optimized``: a fetched batch begun is acquired to its end,
    ``SharePartition.acquire``). Writes only the archivals it did (aborted, gone from the log, at
    the limit) and a start offset moved over them: an acquisition itself is not written
    (``partition`` module docstring)."""
    changes = _Changes(state)
    return changes.result(_acquire(changes, member, fetched, max_records, now, batch_optimized, config))


def _acquire(
    changes: _Changes,
    member: str,
    fetched: Sequence[Fetched],
    max_records: int,
    now: int,
    batch_optimized: bool = False,
    config: SharePartitionConfig | None = None,
) -> dict[SharePartitionKey, tuple[AcquiredRecords, ...]]:
    got: dict[SharePartitionKey, tuple[AcquiredRecords, ...]] = {}
    remaining = max_records
    for f in fetched:
        sp = changes.state.live.get(f.key)
        if sp is None:
            continue
        configure(sp, config)
        if not f.batches:
            # Nothing fetched; the log's start may have passed the share-partition's (retention,
            # DeleteRecords: the fetch was out of range): move with it.
            if f.log_start_offset is not None and f.log_start_offset > sp.start_offset:
                changes.add(f.key, sp, sp.update_log_start_offset(f.log_start_offset))
            continue
        if remaining <= 0:
            continue
        result = sp.acquire(
            member,
            f.batches,
            remaining,
            now,
            archive=f.archive,
            fetch_offset=f.fetch_offset,
            batch_optimized=batch_optimized,
        )
        changes.add(f.key, sp, result.change)
        if result.records:
            got[f.key] = result.records
            remaining -= result.count
    return got


Acks = Sequence[tuple[SharePartitionKey, SharePartitionConfig, Sequence[AcknowledgementBatch]]]


def acknowledge(state: ShareDataState, member: str, acks: Acks, now: int) -> Result[dict[SharePartitionKey, ErrorCode]]:
    """Apply a member's acknowledgements, each share-partition all or nothing. An empty list
    changes nothing (NONE). A share-partition with no live state (no fetch has made it live since
    the shard's load: a load expires every lock) is UNKNOWN_TOPIC_OR_PARTITION, as Kafka 4.2's
    ``SharePartitionManager.acknowledge`` answers a share-partition not in its cache (one this
    broker has not fetched since it became the leader)."""
    changes = _Changes(state)
    return changes.result(_acknowledge(changes, member, acks, now))


def _acknowledge(changes: _Changes, member: str, acks: Acks, now: int) -> dict[SharePartitionKey, ErrorCode]:
    errors: dict[SharePartitionKey, ErrorCode] = {}
    for key, config, batches in acks:
        if not batches:
            errors[key] = ErrorCode.NONE
            continue
        sp = changes.state.live.get(key)
        if sp is None:
            errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        configure(sp, config)
        result = sp.acknowledge(member, batches, now)
        errors[key] = result.error
        if result.error is ErrorCode.NONE:
            changes.add(key, sp, result.change)
    return errors


def release_member(
    state: ShareDataState,
    group: str,
    member: str,
    keys: Iterable[SharePartitionKey] | None = None,
    config: SharePartitionConfig | None = None,
) -> Result[None]:
    """The member's records go back (AVAILABLE, or ARCHIVED at the delivery-count limit): it left
    the group, its session timed out, or it closed its share session (``keys``: that session's
    share-partitions; ``None``: all of the group's)."""
    changes = _Changes(state)
    chosen = state.partitions_of(group) if keys is None else [(k, state.live[k]) for k in keys if k in state.live]
    for key, sp in chosen:
        if sp.holds(member):
            configure(sp, config)
            changes.add(key, sp, sp.release_member(member))
    return changes.result(None)


def release_records(
    state: ShareDataState, group: str, member: str, config: SharePartitionConfig | None = None
) -> Sequence[CoordinatorRecord]:
    """``release_member`` for a membership handler that appends the records to its own."""
    return release_member(state, group, member, None, config).records


def delete_group_state(state: ShareDataState, group: str) -> list[CoordinatorRecord]:
    """Tombstones for every share-partition of a deleted group (replayed, they drop the live ones)
    and for its record 15."""
    keys = sorted((k for k in state.store.partitions if k.group == group), key=repr)
    records = [r for k in keys for r in state.store.delete_records(k)]
    if group in state.initialized:
        key = ShareGroupStatePartitionMetadataKey(group)
        records.append(CoordinatorRecord(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA, key, None))
    return records


def expire_locks(
    state: ShareDataState, key: SharePartitionKey, now: int, config: SharePartitionConfig | None = None
) -> Result[int]:
    """The share-partition's locks that ran out by ``now``; answers how many records they held
    (for the runtime's metrics: Kafka's acquisition lock timeouts)."""
    changes = _Changes(state)
    sp = state.live.get(key)
    expired = 0
    if sp is not None:
        configure(sp, config)
        expired = sp.locks_due(now)
        changes.add(key, sp, sp.expire_locks(now))
    return changes.result(expired)


# --- administration (Describe/Alter/DeleteShareGroupOffsets) ------------------------------------


def durable_partitions(state: ShareDataState, group: str) -> dict[SharePartitionKey, DurableShareState]:
    """The group's share-partitions as their records have them (what the admin APIs report)."""
    return {k: v for k, v in state.store.partitions.items() if k.group == group}


def reset_start_offsets(
    state: ShareDataState, starts: Sequence[tuple[SharePartitionKey, int, str | None]]
) -> Result[None]:
    """AlterShareGroupOffsets on an empty group: each share-partition starts afresh at the given
    offset (a snapshot with a new state epoch, no in-flight state), as Kafka's
    InitializeShareGroupState. The live partition goes: the next fetch loads the new state."""
    changes = _Changes(state)
    for key, start, topic_id in starts:
        current = state.store.get(key)
        epoch = 0 if current is None else current.state_epoch + 1
        changes.records += state.store.records_for(key, ShareStateChange(start, (), epoch, reset=True), topic_id)
        state.live.pop(key, None)
        changes.timers.append(CancelTimer(lock_timer_key(key)))
    for group in sorted({k.group for k, _, _ in starts}):
        added = [(k, topic_id) for k, _, topic_id in starts if k.group == group]
        changes.records += partition_metadata_record(state, group, added)
    return changes.result(None)


def delete_topics_state(state: ShareDataState, group: str, topics: Iterable[str]) -> Result[None]:
    """DeleteShareGroupOffsets: tombstones for the share-partitions of the named topics."""
    wanted = set(topics)
    keys = sorted((k for k in state.store.partitions if k.group == group and k.topic in wanted), key=repr)
    records = [r for k in keys for r in state.store.delete_records(k)]
    records += partition_metadata_record(state, group, removed_topics=wanted)
    timers: list[TimerOp] = [CancelTimer(lock_timer_key(k)) for k in keys]
    return Result(None, records, timers)


def deleted_topics_state(state: ShareDataState, topics: Iterable[tuple[str, str]]) -> Result[None]:
    """A topic incarnation (name, topic id) was deleted from the cluster: tombstones for every
    group's share-partitions of it, and record 15 without it, as Kafka 4.2 deletes the share state
    of deleted topics. A share-partition of the same name holding another incarnation's id (the
    topic re-created, its new share-partitions made already) is kept; one holding no id is taken to
    be of the deleted one."""
    records: list[CoordinatorRecord] = []
    keys: list[SharePartitionKey] = []
    removed: dict[str, set[str]] = {}  # group -> topic names leaving its record 15
    for name, topic_id in topics:
        mine = sorted(
            (
                k
                for k, durable in state.store.partitions.items()
                if k.topic == name and durable.topic_id in (None, topic_id)
            ),
            key=repr,
        )
        keys += mine
        records += [r for k in mine for r in state.store.delete_records(k)]
        for group, initialized in state.initialized.items():
            held = initialized.get(name)
            if held is not None and held[0] in (None, topic_id):
                removed.setdefault(group, set()).add(name)
    for group, names in sorted(removed.items()):
        records += partition_metadata_record(state, group, removed_topics=names)
    timers: list[TimerOp] = [CancelTimer(lock_timer_key(k)) for k in keys]
    return Result(None, records, timers)
