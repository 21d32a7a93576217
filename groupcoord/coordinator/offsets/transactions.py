"""Transactional offsets (TxnOffsetCommit): staged per producer until the cluster decides.

Kafka's OffsetMetadataManager keeps ``pendingTransactionalOffsets`` per producer id and applies
them when the transaction coordinator's marker reaches ``__consumer_offsets``
(``replayEndTransactionMarker``). The sidecar's log has a single writer, so the cluster's markers
cannot land in it; instead each TxnOffsetCommit writes one record of the client's own transaction
to the shard's partition of the transaction topic (``groupcoord.coordinator.txn``) and stages the offsets here
as a ``PendingTxnOffsets`` record that names where that record sits (``txn_offset``). The first
marker of the producer after ``txn_offset`` in that partition decides: ``resolve`` turns a COMMIT
into ordinary OffsetCommit records (carrying the producer id) and drops the staged records either
way. Everything here is pure and deterministic: replay order alone decides the state.

Ordering (Kafka: "we always keep the most recent committed offset when we have a mix of
transactional and regular offset commits"): a plain commit of a partition written after a staged
offset of that partition wins over it, so the staged one is marked superseded and never applied.
The mark is written on the staged record itself (``overtaking_records``, in the plain commit's
batch): compaction may remove the plain commit's record once a later OffsetCommit of the partition
(another producer's committed transaction) shadows it, and a load must still see the mark. Logs
written before that field existed get the mark from replaying the plain commit, as before.
Kafka compares record offsets of staged offsets from different producers too; here two producers'
transactions committing the same partition of one group apply in the order their markers were
resolved (two live producers committing one group's partition are zombies of each other, which the
cluster's fencing already stops).

Deletion (Kafka's OffsetMetadataManager.replay of a tombstone: "remove all the pending offset
commits related to the tombstone"): OffsetDelete, DeleteGroups and a deleted topic write a
tombstone for every partition with a committed *or* a staged offset, and a staged offset of such a
partition is removed, so the transaction's COMMIT leaves the partition without an offset. The
removal is written on the staged records themselves (``deleting_records``, in the tombstones'
batch), for the same reason as the mark above: compaction drops tombstones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    OffsetCommitKey,
    OffsetCommitValue,
    PendingTxnOffset,
    PendingTxnOffsetsKey,
    PendingTxnOffsetsValue,
    TxnProducerKey,
    TxnProducerValue,
)


@dataclass(slots=True)
class StagedCommit:
    """One replayed PendingTxnOffsets record; ``superseded`` holds the (topic, partition) a plain
    commit replayed later has overtaken."""

    key: PendingTxnOffsetsKey
    value: PendingTxnOffsetsValue
    superseded: set[tuple[str, int]] = field(default_factory=set)

    def overtaken_by(self, group: str, tp: tuple[str, int]) -> bool:
        """Whether a plain commit of ``tp`` in ``group`` newly overtakes an offset staged here."""
        return (
            self.key.group == group
            and tp not in self.superseded
            and any((o.topic, o.partition) == tp for o in self.value.offsets)
        )


class TxnOffsetsState:
    """Staged transactional offsets of one shard and the producers' sequences."""

    def __init__(self) -> None:
        # producer id -> txn_offset -> group -> staged commit
        self.pending: dict[int, dict[tuple[int, str], StagedCommit]] = {}
        # group -> (topic, partition) -> producer ids with a staged offset there
        self.open_by_partition: dict[str, dict[tuple[str, int], set[int]]] = {}
        self.producers: dict[int, TxnProducerValue] = {}

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type == RecordType.TXN_PRODUCER:
            if record.value is None:
                self.producers.pop(record.key.producer_id, None)
            else:
                self.producers[record.key.producer_id] = record.value
            return
        if record.type == RecordType.OFFSET_COMMIT:
            self._plain_commit(record)
            return
        if record.type != RecordType.PENDING_TXN_OFFSETS:
            return
        key: PendingTxnOffsetsKey = record.key
        slot = (key.txn_offset, key.group)
        staged = self.pending.setdefault(key.producer_id, {})
        staged.pop(slot, None)
        if record.value is not None:
            offsets = record.value.offsets
            staged[slot] = StagedCommit(
                key, record.value, {(offsets[i].topic, offsets[i].partition) for i in record.value.superseded}
            )
        if not staged:
            del self.pending[key.producer_id]
        self._reindex(key.group)

    def _plain_commit(self, record: CoordinatorRecord) -> None:
        """A plain commit replayed after staged offsets of the same partition overtakes them; a
        value a committed transaction wrote does not (its marker is that ordering). A deletion's
        batch carries the staged records it changed (``deleting_records``)."""
        key: OffsetCommitKey = record.key
        if record.value is None or record.value.producer_id >= 0:
            return
        tp = (key.topic, key.partition)
        for producer_id in self.open_by_partition.get(key.group, {}).get(tp, ()):
            for commit in self.pending.get(producer_id, {}).values():
                if commit.overtaken_by(key.group, tp):
                    commit.superseded.add(tp)

    def _reindex(self, group: str) -> None:
        opened: dict[tuple[str, int], set[int]] = {}
        for producer_id, staged in self.pending.items():
            for commit in staged.values():
                if commit.key.group == group:
                    for o in commit.value.offsets:
                        opened.setdefault((o.topic, o.partition), set()).add(producer_id)
        if opened:
            self.open_by_partition[group] = opened
        else:
            self.open_by_partition.pop(group, None)

    # --- reads -----------------------------------------------------------------------------

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """Kafka's hasPendingTransactionalOffsets (OffsetFetch require_stable, expiry)."""
        return bool(self.open_by_partition.get(group, {}).get((topic, partition)))

    def group_has_pending(self, group: str) -> bool:
        return bool(self.open_by_partition.get(group))

    def pending_partitions(self, group: str) -> list[tuple[str, int]]:
        """The (topic, partition)s of ``group`` with a staged offset, sorted."""
        return sorted(self.open_by_partition.get(group, ()))

    def pending_of_topic(self, topic: str, topic_id: str | None) -> list[tuple[str, int]]:
        """(group, partition) of every staged offset of ``topic``'s incarnation ``topic_id`` (an
        offset staged without an id goes with the name, as a committed one does), sorted."""
        found: set[tuple[str, int]] = set()
        for staged in self.pending.values():
            for commit in staged.values():
                for o in commit.value.offsets:
                    if o.topic == topic and (topic_id is None or o.topic_id is None or o.topic_id == topic_id):
                        found.add((commit.key.group, o.partition))
        return sorted(found)

    def commits_of(self, producer_id: int) -> list[StagedCommit]:
        """The producer's staged commits, in the order their records sit in the transaction topic."""
        return [c for _, c in sorted(self.pending.get(producer_id, {}).items(), key=lambda item: item[0])]

    def lowest_txn_offset(self) -> int | None:
        """Where a reader of the transaction topic must start to decide everything staged."""
        offsets = [slot[0] for staged in self.pending.values() for slot in staged]
        return min(offsets) if offsets else None

    def pending_groups(self) -> dict[str, int]:
        """group -> number of partitions with staged offsets (describe, metrics)."""
        return {g: len(tps) for g, tps in self.open_by_partition.items()}

    def snapshot(self) -> Any:
        return {
            "pending": {
                pid: {slot: (c.value, sorted(c.superseded)) for slot, c in staged.items()}
                for pid, staged in self.pending.items()
            },
            "producers": dict(self.producers),
        }


# --- handlers (pure) -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sequence:
    """What the shard's next write for a producer to the transaction topic carries."""

    producer_epoch: int
    sequence: int


def next_sequence(state: TxnOffsetsState, producer_id: int, producer_epoch: int) -> Sequence:
    """Sequences are counted per producer id and epoch; a new epoch starts again at 0."""
    known = state.producers.get(producer_id)
    if known is None or known.producer_epoch != producer_epoch:
        return Sequence(producer_epoch, 0)
    return Sequence(producer_epoch, known.next_sequence)


def staging_records(
    group: str,
    producer_id: int,
    txn_offset: int,
    transactional_id: str,
    written: Sequence,
    offsets: Iterable[PendingTxnOffset],
    now_ms: int,
) -> list[CoordinatorRecord]:
    """The atomic batch that stages one TxnOffsetCommit whose transaction record landed at
    ``txn_offset`` with sequence ``written``."""
    return [
        CoordinatorRecord(
            RecordType.PENDING_TXN_OFFSETS,
            PendingTxnOffsetsKey(group, producer_id, txn_offset),
            PendingTxnOffsetsValue(transactional_id, written.producer_epoch, list(offsets), now_ms),
        ),
        CoordinatorRecord(
            RecordType.TXN_PRODUCER,
            TxnProducerKey(producer_id),
            TxnProducerValue(written.producer_epoch, written.sequence + 1, now_ms),
        ),
    ]


def resolve(
    state: TxnOffsetsState, producer_id: int, marker_offset: int, committed: bool, now_ms: int
) -> list[CoordinatorRecord]:
    """The records a transaction marker of ``producer_id`` at ``marker_offset`` of the transaction
    topic leads to: every staged commit of that producer before the marker is decided by it
    (Kafka's replayEndTransactionMarker). A COMMIT writes each staged offset a plain commit has not
    overtaken as an OffsetCommit record carrying the producer id (later staged commits of the same
    transaction win); COMMIT and ABORT alike drop the staged records. A marker with nothing staged
    before it writes nothing."""
    decided = [c for c in state.commits_of(producer_id) if c.key.txn_offset < marker_offset]
    if not decided:
        return []
    records: list[CoordinatorRecord] = []
    if committed:
        values: dict[tuple[str, str, int], OffsetCommitValue] = {}
        for commit in decided:
            for o in commit.value.offsets:
                if (o.topic, o.partition) in commit.superseded:
                    continue
                values[(commit.key.group, o.topic, o.partition)] = OffsetCommitValue(
                    offset=o.offset,
                    leader_epoch=o.leader_epoch,
                    metadata=o.metadata,
                    commit_timestamp=commit.value.commit_timestamp,
                    expire_timestamp=-1,
                    topic_id=o.topic_id,
                    producer_id=producer_id,
                )
        records += [
            CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(g, t, p), v) for (g, t, p), v in values.items()
        ]
    records += [CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, c.key, None) for c in decided]
    return records


def overtaking_records(
    state: TxnOffsetsState, group: str, written: Iterable[CoordinatorRecord]
) -> list[CoordinatorRecord]:
    """The staged records of ``group`` that the plain OffsetCommit records ``written`` overtake,
    rewritten with those partitions marked superseded: they go in the same batch, after them, so
    that the mark lasts as long as the staged offsets do, whatever compaction leaves of the plain
    commit (replaying the plain commit marks the same partitions: live and replayed agree)."""
    opened = state.open_by_partition.get(group)
    if not opened:
        return []
    overtaken: dict[tuple[int, int], set[tuple[str, int]]] = {}  # (producer, txn_offset) -> partitions
    for record in written:
        key: OffsetCommitKey = record.key
        if record.type != RecordType.OFFSET_COMMIT or record.value is None or record.value.producer_id >= 0:
            continue
        tp = (key.topic, key.partition)
        for producer_id in opened.get(tp, ()):
            for commit in state.pending[producer_id].values():
                if commit.overtaken_by(group, tp):
                    overtaken.setdefault((producer_id, commit.key.txn_offset), set()).add(tp)
    records: list[CoordinatorRecord] = []
    for (producer_id, txn_offset), partitions in sorted(overtaken.items()):
        commit = state.pending[producer_id][(txn_offset, group)]
        marked = commit.superseded | partitions
        indexes = [i for i, o in enumerate(commit.value.offsets) if (o.topic, o.partition) in marked]
        records.append(
            CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, commit.key, replace(commit.value, superseded=indexes))
        )
    return records


def deleting_records(state: TxnOffsetsState, written: Iterable[CoordinatorRecord]) -> list[CoordinatorRecord]:
    """The staged records holding an offset of a partition that the OffsetCommit tombstones in
    ``written`` delete, rewritten without it (a tombstone of the staged record when nothing is
    left): they go in the same batch, after the tombstones. Kafka removes a deleted partition's
    pending offsets at once (so OffsetFetch's require_stable no longer waits for the transaction)
    and its COMMIT then writes nothing there."""
    deleted: dict[str, set[tuple[str, int]]] = {}
    for record in written:
        if record.type == RecordType.OFFSET_COMMIT and record.value is None:
            key: OffsetCommitKey = record.key
            if (key.topic, key.partition) in state.open_by_partition.get(key.group, {}):
                deleted.setdefault(key.group, set()).add((key.topic, key.partition))
    records: list[CoordinatorRecord] = []
    for producer_id in sorted(state.pending):
        for (_, group), commit in sorted(state.pending[producer_id].items()):
            gone = deleted.get(group)
            offsets = commit.value.offsets
            if not gone or not any((o.topic, o.partition) in gone for o in offsets):
                continue
            kept = [i for i, o in enumerate(offsets) if (o.topic, o.partition) not in gone]
            if not kept:
                records.append(CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, commit.key, None))
                continue
            superseded = [
                n for n, i in enumerate(kept) if (offsets[i].topic, offsets[i].partition) in commit.superseded
            ]
            value = replace(commit.value, offsets=[offsets[i] for i in kept], superseded=superseded)
            records.append(CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, commit.key, value))
    return records


def expired_producers(state: TxnOffsetsState, now_ms: int, expiration_ms: int) -> list[CoordinatorRecord]:
    """Tombstones for the producers whose last staging is ``expiration_ms`` old and that have
    nothing staged any more (Kafka's transactional.id.expiration.ms: the cluster has forgotten
    such a producer's state by then, so its next transaction comes with a new epoch, whose
    sequence starts at 0 whether or not this shard remembers the old one)."""
    return [
        CoordinatorRecord(RecordType.TXN_PRODUCER, TxnProducerKey(producer_id), None)
        for producer_id, value in sorted(state.producers.items())
        if producer_id not in state.pending and now_ms - value.timestamp >= expiration_ms
    ]


def stale_epoch(state: TxnOffsetsState, producer_id: int, producer_epoch: int) -> ErrorCode:
    """A producer epoch older than one this shard already wrote for the producer is a zombie's
    (Kafka's ProducerAppendInfo.checkProducerEpoch: INVALID_PRODUCER_EPOCH); the cluster checks it
    too, this refuses it before anything is sent."""
    known = state.producers.get(producer_id)
    if known is not None and producer_epoch < known.producer_epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return ErrorCode.NONE
