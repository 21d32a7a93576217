"""Share groups (KIP-932) in the pipeline jobs: share-partition state, share membership, their
audit checks and their events in a group's history.

Share-partition state is what ShareSnapshot (62) and ShareUpdate (63) records replay to. The
replay is the coordinator's own (``ShareStateStore``, fed the applied records of one
share-partition in offset order), so the snapshot table holds exactly the start offset, state
epoch and in-flight states a coordinator that loaded the log would serve. Membership records
(10-14) have the consumer records' shapes and become ``type = 'share'`` rows of the groups,
members and assignment tables.

Audit checks (each violation named by check, group, log partition and offset of the record):

- ``share-ranges-overlap``: a record's state batches overlap (or one ends before it starts): the
  offsets they share would have two states;
- ``share-range-below-start``: a snapshot has a state below its own start offset (everything
  below the start offset is done and has no state);
- ``share-start-backwards``: the start offset goes back within one state epoch (only a reset,
  AlterShareGroupOffsets, may move it back, and it writes a new state epoch);
- ``share-state-epoch-backwards``: a snapshot's state epoch is below the share-partition's;
- ``share-delivery-count-over-limit``: a record delivered again beyond the group's
  ``share.delivery.count.limit`` (at that point of the log) without being archived;
- ``share-state-not-initialized`` / ``share-initialized-without-state``: at the end of the log,
  record 15 (ShareGroupStatePartitionMetadata) of a group and its share-partition state disagree
  (the coordinator writes both in one atomic batch).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from groupcoord.coordinator.groups.group_config import SHARE_DELIVERY_COUNT_LIMIT
from groupcoord.coordinator.share.partition_types import RecordState
from groupcoord.coordinator.share.state import DurableShareState, SharePartitionKey, ShareStateStore
from groupcoord.pipeline.rows import member_epochs, of_type
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareUpdateKey,
    ShareUpdateValue,
)

# Kafka's default group.share.delivery.count.limit (the sidecar's broker-level default too).
DEFAULT_DELIVERY_COUNT_LIMIT = 5

_SNAPSHOT = int(RecordType.SHARE_SNAPSHOT)
_UPDATE = int(RecordType.SHARE_UPDATE)
_CONFIG = int(RecordType.GROUP_CONFIG)
_STATE_NAMES = {int(s): s.name.lower() for s in RecordState}

# The columns the pandas walks read (state batches and configs as JSON text: plain Python there).
SHARE_COLUMNS = [
    "partition",
    "offset",
    "record_type_id",
    "tombstone",
    "group_id",
    "topic",
    "topic_partition",
    "slot",
    "snapshot_epoch",
    "state_epoch",
    "start_offset",
    "topic_id",
    "batches",
    "configs",
]
_STATE_ROW_SCHEMA = (
    "group_id string, topic string, partition int, topic_id string, start_offset long, end_offset long,"
    " state_epoch int, first_offset long, last_offset long, state string, delivery_count int,"
    " log_partition int, log_offset long"
)


def _share_columns(status_log: DataFrame, types: Iterable[RecordType]) -> DataFrame:
    snap, upd = F.col("value.share_snapshot"), F.col("value.share_update")
    return status_log.where(
        (F.col("status") == "applied") & F.col("record_type_id").isin([int(t) for t in types])
    ).select(
        "partition",
        "offset",
        "record_type_id",
        "tombstone",
        "group_id",
        "topic",
        "topic_partition",
        "slot",
        F.coalesce(snap.snapshot_epoch, upd.snapshot_epoch).alias("snapshot_epoch"),
        snap.state_epoch.alias("state_epoch"),
        F.coalesce(snap.start_offset, upd.start_offset).alias("start_offset"),
        snap.topic_id.alias("topic_id"),
        F.to_json(F.coalesce(snap.state_batches, upd.state_batches)).alias("batches"),
        F.to_json(F.col("value.group_config.configs")).alias("configs"),
    )


def _int(value: Any) -> int:
    return 0 if value is None or pd.isna(value) else int(value)


def _batches(text: Any) -> list[ShareStateBatch]:
    if text is None or (not isinstance(text, str) and pd.isna(text)):
        return []
    return [
        ShareStateBatch(
            int(b["first_offset"]), int(b["last_offset"]), int(b["delivery_state"]), int(b["delivery_count"])
        )
        for b in json.loads(text)
    ]


def _record(row: Any) -> CoordinatorRecord:
    """The share record a row stands for, as the coordinator's replay takes it."""
    group, topic, p = str(row.group_id), str(row.topic), int(row.topic_partition)
    if int(row.record_type_id) == _SNAPSHOT:
        value = (
            None
            if row.tombstone
            else ShareSnapshotValue(
                _int(row.snapshot_epoch),
                _int(row.state_epoch),
                _int(row.start_offset),
                _batches(row.batches),
                None if row.topic_id is None or pd.isna(row.topic_id) else str(row.topic_id),
            )
        )
        return CoordinatorRecord(RecordType.SHARE_SNAPSHOT, ShareSnapshotKey(group, topic, p), value)
    update = (
        None
        if row.tombstone
        else ShareUpdateValue(_int(row.snapshot_epoch), _int(row.start_offset), _batches(row.batches))
    )
    return CoordinatorRecord(RecordType.SHARE_UPDATE, ShareUpdateKey(group, topic, p, _int(row.slot)), update)


# --- snapshot --------------------------------------------------------------------------------


def _state_rows(pdf: pd.DataFrame) -> pd.DataFrame:
    """One share-partition's applied records replayed: its state, one row per run of offsets with
    the same state and delivery count (one row without a run when nothing is in flight)."""
    store = ShareStateStore()
    pdf = pdf.sort_values("offset")
    for row in pdf.itertuples(index=False):
        store.replay(_record(row))
    out: list[tuple[Any, ...]] = []
    last = pdf.iloc[-1] if len(pdf) else None
    for key, state in store.partitions.items():
        head = (key.group, key.topic, key.partition, state.topic_id, state.start_offset, state.end_offset)
        tail = (int(last["partition"]), int(last["offset"])) if last is not None else (None, None)
        runs: list[ShareStateBatch | None] = [*state.batches()] or [None]
        for b in runs:
            cells = (
                (None, None, None, None)
                if b is None
                else (
                    b.first_offset,
                    b.last_offset,
                    _STATE_NAMES.get(b.delivery_state, str(b.delivery_state)),
                    b.delivery_count,
                )
            )
            out.append((*head, state.state_epoch, *cells, *tail))
    columns = [c.split()[0] for c in _STATE_ROW_SCHEMA.split(",")]
    return pd.DataFrame(out, columns=columns)


def _state_iter(key: Any, pdf: pd.DataFrame) -> pd.DataFrame:
    return _state_rows(pdf)


def initialized(live: DataFrame) -> DataFrame:
    """The share-partitions record 15 (ShareGroupStatePartitionMetadata) lists as having state:
    group_id, topic, partition, and where that record is (log_partition, log_offset)."""
    v = F.col("value.share_group_state_partition_metadata")
    return (
        live.where(of_type(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA))
        .select("group_id", "partition", "offset", F.explode(v.initialized_topics).alias("t"))
        .select(
            "group_id",
            F.col("t.topic_name").alias("topic"),
            F.explode("t.partitions").alias("partition"),
            F.col("partition").alias("log_partition"),
            F.col("offset").alias("log_offset"),
        )
    )


def share_partitions(status_log: DataFrame, live: DataFrame) -> DataFrame:
    """The share-partition state table: start offset (SPSO), end offset (SPEO, one past the last
    offset with a state), state epoch, the in-flight runs above the start offset (``in_flight``:
    first and last offset, state ``available``/``acknowledged``/``archived``, delivery count; an
    acquisition is not written, so a record acquired now shows as last written, or not at all), and
    whether the group's record 15 lists it (``initialized``)."""
    listed = initialized(live).select("group_id", "topic", "partition", F.lit(True).alias("initialized"))
    return (
        _share_states(status_log)
        .join(listed, ["group_id", "topic", "partition"], "left")
        .fillna(False, ["initialized"])
    )


def _share_states(status_log: DataFrame) -> DataFrame:
    rows = _share_columns(status_log, (RecordType.SHARE_SNAPSHOT, RecordType.SHARE_UPDATE))
    assert rows.columns == SHARE_COLUMNS
    runs = rows.groupBy("group_id", "topic", "topic_partition").applyInPandas(_state_iter, _STATE_ROW_SCHEMA)
    run = F.struct("first_offset", "last_offset", "state", "delivery_count")
    return (
        runs.groupBy(
            "group_id", "topic", "partition", "topic_id", "start_offset", "end_offset", "state_epoch", "log_partition"
        )
        .agg(
            F.array_sort(F.collect_list(F.when(F.col("first_offset").isNotNull(), run))).alias("in_flight"),
            F.max("log_offset").alias("log_offset"),
        )
        .select(
            "group_id",
            "topic",
            "partition",
            "topic_id",
            "start_offset",
            "end_offset",
            "state_epoch",
            "in_flight",
            "log_partition",
            "log_offset",
        )
    )


def share_membership(live: DataFrame, topics: DataFrame) -> dict[str, DataFrame]:
    """Share groups, their members and assignments from the latest applied records (``live``), in
    the shapes of the groups, members, target_assignments and current_assignments tables. A share
    group is Empty without members and Stable with them, as Kafka's ShareGroup is."""
    mm = F.col("value.share_group_member_metadata")
    meta = live.where(of_type(RecordType.SHARE_GROUP_MEMBER_METADATA)).select(
        "partition",
        "group_id",
        "member_id",
        mm.client_id.alias("client_id"),
        mm.client_host.alias("client_host"),
        mm.rack_id.alias("rack_id"),
        mm.subscribed_topic_names.alias("subscribed_topic_names"),
    )
    ca = F.col("value.share_group_current_member_assignment")
    current = live.where(of_type(RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT))
    epochs = member_epochs(current, ca)
    members = (
        meta.join(epochs, ["partition", "group_id", "member_id"], "full_outer")
        .select(
            "group_id",
            "member_id",
            F.lit("share").alias("type"),
            "client_id",
            "client_host",
            "rack_id",
            "subscribed_topic_names",
            F.coalesce("member_epoch", F.lit(0)).alias("member_epoch"),
            F.coalesce("previous_member_epoch", F.lit(0)).alias("previous_member_epoch"),
            F.coalesce("member_state", F.lit(0)).alias("member_state"),
            F.col("partition").alias("log_partition"),
        )
        .persist()
    )
    counts = members.groupBy(F.col("log_partition").alias("partition"), "group_id").agg(F.count("*").alias("members"))
    tam = F.col("value.share_group_target_assignment_metadata")
    assignment_epoch = live.where(of_type(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA)).select(
        "partition", "group_id", tam.assignment_epoch.alias("assignment_epoch")
    )
    groups = (
        live.where(of_type(RecordType.SHARE_GROUP_METADATA))
        .select("partition", "group_id", F.col("value.share_group_metadata.epoch").alias("group_epoch"))
        .join(assignment_epoch, ["partition", "group_id"], "left")
        .join(counts, ["partition", "group_id"], "left")
        .withColumn("members", F.coalesce("members", F.lit(0)))
        .select(
            "group_id",
            F.lit("share").alias("type"),
            F.when(F.col("members") == 0, "Empty").otherwise("Stable").alias("state"),
            "group_epoch",
            F.coalesce("assignment_epoch", F.lit(0)).alias("assignment_epoch"),
            "members",
            F.lit(None).cast("string").alias("protocol_type"),
            F.lit(None).cast("string").alias("protocol"),
            F.lit(None).cast("string").alias("leader"),
            F.col("partition").alias("log_partition"),
        )
    )

    def partitions(rows: DataFrame, field: Column, extra: list[Column]) -> DataFrame:
        return (
            rows.select("group_id", "member_id", *extra, F.explode(field).alias("tp"))
            .select("*", F.col("tp.topic_id").alias("topic_id"), F.explode("tp.partitions").alias("partition"))
            .drop("tp")
            .join(F.broadcast(topics), "topic_id", "left")
        )

    tm = F.col("value.share_group_target_assignment_member.topic_partitions")
    target = partitions(live.where(of_type(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER)), tm, []).select(
        "group_id", "member_id", "topic_id", "topic", "partition"
    )
    # Every member may hold every partition; no revocation step, no per-partition epochs.
    assigned = partitions(current, ca.assigned_partitions, [ca.member_epoch.alias("assignment_epoch")]).select(
        "group_id",
        "member_id",
        "topic_id",
        "topic",
        "partition",
        "assignment_epoch",
        F.lit(False).alias("pending_revocation"),
    )
    return {"groups": groups, "members": members, "target_assignments": target, "current_assignments": assigned}


# --- audit ----------------------------------------------------------------------------------


class _ShareAudit:
    def __init__(self, partition: int, delivery_count_limit: int) -> None:
        self.partition = partition
        self.default_limit = delivery_count_limit
        self.limits: dict[str, int] = {}
        self.store = ShareStateStore()
        self.out: list[tuple[str, str | None, int, int, str]] = []

    def violation(self, check: str, group: str, offset: int, detail: str) -> None:
        self.out.append((check, group, self.partition, offset, detail))

    def record(self, row: Any) -> None:
        group, offset, type_id = str(row.group_id), int(row.offset), int(row.record_type_id)
        if type_id == _CONFIG:
            configs = (
                {} if row.tombstone or row.configs is None else {c["name"]: c["value"] for c in json.loads(row.configs)}
            )
            if SHARE_DELIVERY_COUNT_LIMIT in configs:
                self.limits[group] = int(configs[SHARE_DELIVERY_COUNT_LIMIT])
            else:
                self.limits.pop(group, None)
            return
        record = _record(row)
        key = SharePartitionKey(group, str(row.topic), int(row.topic_partition))
        before = self.store.get(key)
        if record.value is not None:
            self._check(record, key, before, offset)
        self.store.replay(record)

    def _check(
        self, record: CoordinatorRecord, key: SharePartitionKey, before: DurableShareState | None, at: int
    ) -> None:
        v: Any = record.value
        where = f"{key.topic}-{key.partition}"
        batches = sorted(v.state_batches, key=lambda b: (b.first_offset, b.last_offset))
        for i, b in enumerate(batches):
            if b.first_offset > b.last_offset or (i and b.first_offset <= batches[i - 1].last_offset):
                self.violation(
                    "share-ranges-overlap",
                    key.group,
                    at,
                    f"{where}: state batch {b.first_offset}-{b.last_offset} overlaps"
                    + (f" {batches[i - 1].first_offset}-{batches[i - 1].last_offset}" if i else " itself"),
                )
        snapshot = isinstance(v, ShareSnapshotValue)
        if snapshot and batches and batches[0].first_offset < v.start_offset:
            self.violation(
                "share-range-below-start",
                key.group,
                at,
                f"{where}: state of offset {batches[0].first_offset} below start offset {v.start_offset}",
            )
        if before is None:
            return
        if snapshot and v.state_epoch < before.state_epoch:
            self.violation(
                "share-state-epoch-backwards",
                key.group,
                at,
                f"{where}: state epoch {before.state_epoch} -> {v.state_epoch}",
            )
        applies = snapshot or (v.snapshot_epoch == before.snapshot_epoch and record.key.slot == before.updates)
        same_epoch = not snapshot or v.state_epoch == before.state_epoch
        if applies and same_epoch and v.start_offset < before.start_offset:
            self.violation(
                "share-start-backwards",
                key.group,
                at,
                f"{where}: start offset {before.start_offset} -> {v.start_offset} in state epoch {before.state_epoch}",
            )
        limit = self.limits.get(key.group, self.default_limit)
        for b in batches:
            if b.delivery_state == int(RecordState.ARCHIVED) or b.delivery_count <= limit:
                continue
            # Only a new delivery counts: a limit lowered since leaves earlier counts above it.
            earlier = before.max_count(b.first_offset, b.last_offset)
            if b.delivery_count > earlier:
                self.violation(
                    "share-delivery-count-over-limit",
                    key.group,
                    at,
                    f"{where}: offsets {b.first_offset}-{b.last_offset} delivered {b.delivery_count} times"
                    f" ({_STATE_NAMES.get(b.delivery_state, b.delivery_state)}), limit {limit}",
                )


def share_audit(
    status_log: DataFrame, live: DataFrame, delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
) -> DataFrame:
    """The share checks of the module docstring over every applied share record, per log
    partition, and record 15 against the state the log ends with."""
    from groupcoord.pipeline.audit import VIOLATION_SCHEMA

    rows = _share_columns(status_log, (RecordType.SHARE_SNAPSHOT, RecordType.SHARE_UPDATE, RecordType.GROUP_CONFIG))
    assert rows.columns == SHARE_COLUMNS

    def walk(key: Any, pdf: pd.DataFrame) -> pd.DataFrame:
        audit = _ShareAudit(int(pdf["partition"].iloc[0]) if len(pdf) else 0, delivery_count_limit)
        for row in pdf.sort_values("offset").itertuples(index=False):
            audit.record(row)
        columns = ["check", "group_id", "partition", "offset", "detail"]
        return pd.DataFrame(audit.out, columns=columns).astype({"partition": "int32", "offset": "int64"})

    walked = rows.groupBy("partition").applyInPandas(walk, VIOLATION_SCHEMA)
    return walked.unionByName(_initialized_mismatches(status_log, live))


def _initialized_mismatches(status_log: DataFrame, live: DataFrame) -> DataFrame:
    keys = ["group_id", "topic", "partition"]
    states = _share_states(status_log).select(*keys, "log_partition", "log_offset")
    listed = initialized(live)
    where = F.concat_ws("-", "topic", F.col("partition").cast("string"))
    unlisted = states.join(listed.select(*keys), keys, "left_anti").select(
        F.lit("share-state-not-initialized").alias("check"),
        "group_id",
        F.col("log_partition").alias("partition"),
        F.col("log_offset").alias("offset"),
        F.concat(where, F.lit(": has share-partition state, but record 15 of its group does not list it")).alias(
            "detail"
        ),
    )
    stateless = listed.join(states.select(*keys), keys, "left_anti").select(
        F.lit("share-initialized-without-state").alias("check"),
        "group_id",
        F.col("log_partition").alias("partition"),
        F.col("log_offset").alias("offset"),
        F.concat(where, F.lit(": listed by record 15, but has no share-partition state")).alias("detail"),
    )
    return unlisted.unionByName(stateless)


# --- history --------------------------------------------------------------------------------


class ShareHistory:
    """A share group's share-partition events, from its records in offset order: state initialized
    (a new share-partition, its start offset resolved from share.auto.offset.reset), reset (a new
    state epoch: AlterShareGroupOffsets), deleted (DeleteShareGroupOffsets, group deletion), and
    records archived (rejected, or at the delivery-count limit). Acquisitions and acknowledgements
    are not listed one by one: a busy queue writes one record per fetch. A record archived at the
    head of the window is not named either: its record moves the start offset past it and keeps
    no state below it (as Kafka's share state), so an ACCEPT and a REJECT there read alike."""

    def __init__(self) -> None:
        self.epochs: dict[tuple[str, int], int] = {}

    def event(self, r: Any, note: Callable[..., None]) -> None:
        where = f"{r.topic}-{r.topic_partition}"
        tp = (str(r.topic), int(r.topic_partition))
        if r.record_type_id == _SNAPSHOT:
            if r.tombstone:
                if self.epochs.pop(tp, None) is not None:
                    note("share-deleted", f"{where}: share-partition state deleted")
                return
            v = r.value.share_snapshot
            old = self.epochs.get(tp)
            if old is None:
                note("share-initialized", f"{where}: starts at offset {v.start_offset} (state epoch {v.state_epoch})")
            elif v.state_epoch != old:
                note("share-reset", f"{where}: reset to offset {v.start_offset} (state epoch {old} -> {v.state_epoch})")
            self.epochs[tp] = v.state_epoch
            batches = v.state_batches
        elif r.record_type_id == _UPDATE and not r.tombstone:
            batches = r.value.share_update.state_batches
        else:
            return
        archived = [b for b in batches if b.delivery_state == int(RecordState.ARCHIVED) and b.delivery_count > 0]
        if r.record_type_id == _UPDATE and archived:
            runs = ", ".join(
                f"{b.first_offset}"
                + (f"-{b.last_offset}" if b.last_offset != b.first_offset else "")
                + f" (delivery count {b.delivery_count})"
                for b in archived
            )
            note("share-archived", f"{where}: {runs}")
