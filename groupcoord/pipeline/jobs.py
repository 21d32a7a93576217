"""The pipeline jobs as Spark computations (the ``groupcoord pipeline`` commands print their results).

The command line is the CLI's (``groupcoord/cli/pipeline.py``: ``python -m groupcoord.cli.pipeline snapshot -b KAFKA:9092
--out DIR``, or the same arguments after ``spark-submit groupcoord/cli/pipeline.py``); this module imports
nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from groupcoord.pipeline.audit import AUDIT_COLUMNS, VIOLATION_SCHEMA, audit_iter
from groupcoord.pipeline.cluster import ClusterError, watermarks
from groupcoord.pipeline.replay import STATUS_COLUMNS, STATUS_SCHEMA, statuses_iter
from groupcoord.pipeline.rows import member_epochs, of_type, value_field
from groupcoord.pipeline.share import (
    DEFAULT_DELIVERY_COUNT_LIMIT,
    ShareHistory,
    share_audit,
    share_membership,
    share_partitions,
)
from groupcoord.records import RecordType

TABLES = (
    "offsets",
    "groups",
    "members",
    "target_assignments",
    "current_assignments",
    "pending_offsets",
    "share_partitions",
)


def load_log(spark: SparkSession, config: Mapping[str, str], topic: str) -> DataFrame:
    reader = spark.read.format("groupcoord").option("topic", topic)
    for key, value in config.items():
        reader = reader.option("bootstrap.servers" if key == "bootstrap.servers" else f"kafka.{key}", value)
    return reader.load()


def with_status(log: DataFrame) -> DataFrame:
    """Every log row with its replay status (``groupcoord.pipeline.replay``) and atomic-batch start offset."""
    slim = log.select(
        "partition",
        "offset",
        "record_type_id",
        "shard_epoch",
        "batch_index",
        "batch_count",
        "tombstone",
        F.col("value.shard_epoch.epoch").alias("se_epoch"),
        F.col("value.batch_abort.first_offset").alias("abort_first"),
        F.col("value.batch_abort.last_offset").alias("abort_last"),
        F.col("value.log_skip.offset").alias("skip_offset"),
        "error",
    )
    assert slim.columns == STATUS_COLUMNS
    status = slim.groupBy("partition").applyInPandas(statuses_iter, STATUS_SCHEMA)
    return log.join(status, ["partition", "offset"])


def live_latest(status_log: DataFrame) -> DataFrame:
    """The latest applied record of every key, tombstones dropped: the state a coordinator serves."""
    applied = status_log.where(F.col("status") == "applied")
    key = [
        "partition",
        "record_type_id",
        "group_id",
        "member_id",
        "topic",
        "topic_partition",
        "regex",
        "producer_id",
        "txn_offset",
        "slot",
    ]
    w = Window.partitionBy(*key).orderBy(F.col("offset").desc())
    latest = applied.withColumn("_rn", F.row_number().over(w)).where(F.col("_rn") == 1).drop("_rn")
    return latest.where(~F.col("tombstone"))


def _ms(col: Column) -> Column:
    return F.when(col > 0, F.timestamp_millis(col))


def _names(spark: SparkSession, names: Mapping[str, str]) -> DataFrame:
    return spark.createDataFrame(list(names.items()) or [("", "")], "topic_id string, topic string")


def snapshot_tables(spark: SparkSession, status_log: DataFrame, names: Mapping[str, str]) -> dict[str, DataFrame]:
    """The snapshot tables (see README: what each column means)."""
    live = live_latest(status_log).persist()
    topics = _names(spark, names)
    oc = F.col("value.offset_commit")
    offsets = live.where(of_type(RecordType.OFFSET_COMMIT)).select(
        "group_id",
        "topic",
        F.col("topic_partition").alias("partition"),
        oc.offset.alias("committed_offset"),
        oc.leader_epoch.alias("leader_epoch"),
        oc.metadata.alias("metadata"),
        _ms(oc.commit_timestamp).alias("commit_timestamp"),
        _ms(oc.expire_timestamp).alias("expire_timestamp"),
        F.col("partition").alias("log_partition"),
        F.col("offset").alias("log_offset"),
    )

    mm = F.col("value.consumer_group_member_metadata")
    meta = live.where(of_type(RecordType.CONSUMER_GROUP_MEMBER_METADATA)).select(
        "partition",
        "group_id",
        "member_id",
        mm.instance_id.alias("instance_id"),
        mm.client_id.alias("client_id"),
        mm.client_host.alias("client_host"),
        mm.rack_id.alias("rack_id"),
        mm.rebalance_timeout_ms.alias("rebalance_timeout_ms"),
        mm.subscribed_topic_names.alias("subscribed_topic_names"),
        mm.subscribed_topic_regex.alias("subscribed_topic_regex"),
        mm.server_assignor.alias("server_assignor"),
        mm.classic_member_metadata.isNotNull().alias("classic_protocol"),
    )
    ca = F.col("value.consumer_group_current_member_assignment")
    current = live.where(of_type(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT))
    epochs = member_epochs(current, ca)
    consumer_members = (
        meta.join(epochs, ["partition", "group_id", "member_id"], "full_outer")
        .withColumn("member_epoch", F.coalesce("member_epoch", F.lit(0)))
        .withColumn("previous_member_epoch", F.coalesce("previous_member_epoch", F.lit(0)))
        .withColumn("member_state", F.coalesce("member_state", F.lit(0)))
    )
    gm = F.col("value.group_metadata")
    classic = live.where(of_type(RecordType.GROUP_METADATA))
    classic_members = classic.select("partition", "group_id", F.explode(gm.members).alias("m")).select(
        "partition",
        "group_id",
        F.col("m.member_id").alias("member_id"),
        F.col("m.group_instance_id").alias("instance_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("client_host"),
        F.col("m.session_timeout_ms").alias("session_timeout_ms"),
        F.col("m.rebalance_timeout_ms").alias("rebalance_timeout_ms"),
    )
    members = (
        consumer_members.withColumn("type", F.lit("consumer"))
        .unionByName(classic_members.withColumn("type", F.lit("classic")), allowMissingColumns=True)
        .select(
            "group_id",
            "member_id",
            "type",
            "instance_id",
            "client_id",
            "client_host",
            "rack_id",
            "rebalance_timeout_ms",
            "session_timeout_ms",
            "subscribed_topic_names",
            "subscribed_topic_regex",
            "server_assignor",
            "classic_protocol",
            "member_epoch",
            "previous_member_epoch",
            "member_state",
            F.col("partition").alias("log_partition"),
        )
    ).persist()

    tam = F.col("value.consumer_group_target_assignment_metadata")
    assignment_epoch = live.where(of_type(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA)).select(
        "partition", "group_id", tam.assignment_epoch.alias("assignment_epoch")
    )
    member_stats = (
        members.where(F.col("type") == "consumer")
        .groupBy(F.col("log_partition").alias("partition"), "group_id")
        .agg(
            F.count("*").alias("members"),
            F.collect_list(F.struct("member_epoch", "member_state")).alias("_m"),
        )
    )
    cg = live.where(of_type(RecordType.CONSUMER_GROUP_METADATA)).select(
        "partition", "group_id", F.col("value.consumer_group_metadata.epoch").alias("group_epoch")
    )
    consumer_groups = (
        cg.join(assignment_epoch, ["partition", "group_id"], "left")
        .join(member_stats, ["partition", "group_id"], "left")
        .withColumn("assignment_epoch", F.coalesce("assignment_epoch", F.lit(0)))
        .withColumn("members", F.coalesce("members", F.lit(0)))
        .withColumn(
            "_unreconciled",
            F.coalesce(
                F.size(
                    F.filter(
                        "_m",
                        lambda m: (m.member_state != 0) | (m.member_epoch != F.col("assignment_epoch")),
                    )
                ),
                F.lit(0),
            ),
        )
        .withColumn(
            "state",
            F.when(F.col("members") == 0, "Empty")
            .when(F.col("group_epoch") > F.col("assignment_epoch"), "Assigning")
            .when(F.col("_unreconciled") > 0, "Reconciling")
            .otherwise("Stable"),
        )
        .select(
            "group_id",
            F.lit("consumer").alias("type"),
            "state",
            "group_epoch",
            "assignment_epoch",
            "members",
            F.lit(None).cast("string").alias("protocol_type"),
            F.lit(None).cast("string").alias("protocol"),
            F.lit(None).cast("string").alias("leader"),
            F.col("partition").alias("log_partition"),
        )
    )
    classic_groups = classic.select(
        "group_id",
        F.lit("classic").alias("type"),
        F.when(F.size(gm.members) == 0, "Empty").otherwise("Stable").alias("state"),
        gm.generation.alias("group_epoch"),
        F.lit(None).cast("int").alias("assignment_epoch"),
        F.size(gm.members).alias("members"),
        gm.protocol_type.alias("protocol_type"),
        gm.protocol.alias("protocol"),
        gm.leader.alias("leader"),
        F.col("partition").alias("log_partition"),
    )
    share = share_membership(live, topics)
    # A group that only ever had offsets committed (an admin tool, an assign()-ed consumer, a
    # transaction's TxnOffsetCommit) has no metadata record: the coordinator serves it as an
    # empty classic group with no protocol type, as Kafka does (ListGroups, DescribeGroups), and
    # so the snapshot lists it.
    described = consumer_groups.select("group_id").unionByName(classic_groups.select("group_id"))
    simple_groups = (
        live.where(of_type(RecordType.OFFSET_COMMIT) | of_type(RecordType.PENDING_TXN_OFFSETS))
        .select("group_id", F.col("partition").alias("log_partition"))
        .distinct()
        .join(described.unionByName(share["groups"].select("group_id")), "group_id", "left_anti")
        .select(
            "group_id",
            F.lit("classic").alias("type"),
            F.lit("Empty").alias("state"),
            F.lit(0).cast("int").alias("group_epoch"),
            F.lit(None).cast("int").alias("assignment_epoch"),
            F.lit(0).cast("int").alias("members"),
            F.lit("").alias("protocol_type"),
            F.lit(None).cast("string").alias("protocol"),
            F.lit(None).cast("string").alias("leader"),
            "log_partition",
        )
    )
    groups = consumer_groups.unionByName(classic_groups).unionByName(simple_groups)

    tm = F.col("value.consumer_group_target_assignment_member")
    target = (
        live.where(of_type(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER))
        .select("group_id", "member_id", F.explode(tm.topic_partitions).alias("tp"))
        .select(
            "group_id",
            "member_id",
            F.col("tp.topic_id").alias("topic_id"),
            F.explode("tp.partitions").alias("partition"),
        )
        .join(F.broadcast(topics), "topic_id", "left")
        .select("group_id", "member_id", "topic_id", "topic", "partition")
    )

    def owned(field: str, pending: bool) -> DataFrame:
        return (
            current.select(
                "group_id", "member_id", ca.member_epoch.alias("member_epoch"), F.explode(ca[field]).alias("tp")
            )
            .select(
                "group_id",
                "member_id",
                "member_epoch",
                F.col("tp.topic_id").alias("topic_id"),
                F.col("tp.assignment_epochs").alias("_epochs"),
                F.posexplode("tp.partitions").alias("_pos", "partition"),
            )
            .withColumn(
                "assignment_epoch",
                F.when(
                    F.size("_epochs") > F.col("_pos"), F.element_at("_epochs", (F.col("_pos") + 1).cast("int"))
                ).otherwise(F.col("member_epoch")),
            )
            .withColumn("pending_revocation", F.lit(pending))
        )

    current_assignments = (
        owned("assigned_partitions", False)
        .unionByName(owned("partitions_pending_revocation", True))
        .join(F.broadcast(topics), "topic_id", "left")
        .select("group_id", "member_id", "topic_id", "topic", "partition", "assignment_epoch", "pending_revocation")
    )
    return {
        "offsets": offsets,
        "groups": groups.unionByName(share["groups"]),
        "members": members.unionByName(share["members"], allowMissingColumns=True),
        "target_assignments": target.unionByName(share["target_assignments"]),
        "current_assignments": current_assignments.unionByName(share["current_assignments"]),
        "pending_offsets": pending_offsets(live),
        "share_partitions": share_partitions(status_log, live),
    }


# A staged offset's fields (PendingTxnOffset) and their column names in the snapshot.
_PENDING_OFFSET_FIELDS = (
    ("topic", "topic"),
    ("partition", "partition"),
    ("offset", "pending_offset"),
    ("leader_epoch", "leader_epoch"),
    ("metadata", "metadata"),
)


def pending_offsets(live: DataFrame) -> DataFrame:
    """Transactional offsets staged and not decided yet (PendingTxnOffsets records without their
    tombstone): invisible to OffsetFetch until the producer's transaction commits. One row per
    partition; ``txn_offset`` is where the transaction's record sits in the transaction topic
    (``<log topic>-txn``, partition ``log_partition``), before which its marker will land."""
    staged = F.col("value.pending_txn_offsets")
    return (
        live.where(of_type(RecordType.PENDING_TXN_OFFSETS))
        .select(
            "group_id",
            "producer_id",
            staged.producer_epoch.alias("producer_epoch"),
            staged.transactional_id.alias("transactional_id"),
            "txn_offset",
            _ms(staged.commit_timestamp).alias("commit_timestamp"),
            F.col("partition").alias("log_partition"),
            F.col("offset").alias("log_offset"),
            F.explode(staged.offsets).alias("o"),
        )
        .select(
            "group_id",
            *(F.col(f"o.{field}").alias(name) for field, name in _PENDING_OFFSET_FIELDS),
            "producer_id",
            "producer_epoch",
            "transactional_id",
            "txn_offset",
            "commit_timestamp",
            "log_partition",
            "log_offset",
        )
    )


def _flat_for_csv(df: DataFrame) -> DataFrame:
    """CSV has no arrays or structs: such columns become JSON text."""
    cols = [
        F.to_json(F.col(f.name)).alias(f.name)
        if isinstance(f.dataType, (ArrayType, StructType, MapType))
        else F.col(f.name)
        for f in df.schema.fields
    ]
    return df.select(*cols)


def write_tables(tables: Mapping[str, DataFrame], out: str, fmt: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in TABLES:
        df = tables[name].persist()
        counts[name] = df.count()
        target = f"{out.rstrip('/')}/{name}"
        if fmt == "csv":
            _flat_for_csv(df).coalesce(1).write.mode("overwrite").option("header", True).csv(target)
        else:
            df.write.mode("overwrite").parquet(target)
        df.unpersist()
    return counts


def audit(status_log: DataFrame, share_delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT) -> DataFrame:
    """Every invariant violation (``groupcoord.pipeline.audit``, and ``groupcoord.pipeline.share`` for
    share-partition state), ordered by log partition and offset. ``share_delivery_count_limit`` is the
    sidecar's ``group.share.delivery.count.limit``: a group's own ``share.delivery.count.limit`` in
    the log overrides it."""
    tp = F.col("value.consumer_group_target_assignment_member.topic_partitions")
    slim = status_log.select(
        "partition",
        "offset",
        "status",
        "batch_start",
        "record_type_id",
        "tombstone",
        "group_id",
        "member_id",
        F.col("value.consumer_group_metadata.epoch").alias("cg_epoch"),
        F.col("value.group_metadata.generation").alias("generation"),
        F.col("value.consumer_group_current_member_assignment.member_epoch").alias("member_epoch"),
        F.flatten(
            F.transform(
                tp, lambda t: F.transform(t.partitions, lambda p: F.concat_ws(":", t.topic_id, p.cast("string")))
            )
        ).alias("target"),
        "error",
    )
    assert slim.columns == AUDIT_COLUMNS
    groups = slim.groupBy("partition").applyInPandas(audit_iter, VIOLATION_SCHEMA)
    shares = share_audit(status_log, live_latest(status_log), share_delivery_count_limit)
    return groups.unionByName(shares).orderBy("partition", "offset")


@dataclass(frozen=True)
class LagResult:
    rows: list[dict[str, Any]]
    totals: list[dict[str, Any]]


def lag(spark: SparkSession, offsets: DataFrame, config: Mapping[str, str]) -> LagResult:
    """Committed offsets against the data topics' high watermarks (from fetch responses)."""
    offsets = offsets.persist()
    wanted = [(r.topic, int(r.partition)) for r in offsets.select("topic", "partition").distinct().collect()]
    try:
        marks = watermarks(config, wanted)
    except ClusterError:
        # A deleted topic fails the whole fetch; fall back to one partition at a time.
        marks = {}
        for tp in wanted:
            try:
                marks.update(watermarks(config, [tp], timeout=10))
            except ClusterError:
                continue
    ends = spark.createDataFrame(
        [(t, p, hi) for (t, p), (_, hi) in marks.items()] or [("", -1, 0)],
        "topic string, partition int, end_offset long",
    )
    joined = (
        offsets.join(F.broadcast(ends), ["topic", "partition"], "left")
        .withColumn("lag", F.greatest(F.col("end_offset") - F.col("committed_offset"), F.lit(0)))
        .select("group_id", "topic", "partition", "committed_offset", "end_offset", "lag")
        .orderBy("group_id", "topic", "partition")
    )
    totals = (
        joined.groupBy("group_id")
        .agg(F.count("*").alias("partitions"), F.sum("lag").alias("total_lag"))
        .orderBy("group_id")
    )
    return LagResult([r.asDict() for r in joined.collect()], [r.asDict() for r in totals.collect()])


def utc_text(ms: int | None) -> str | None:
    """Epoch milliseconds as UTC ISO-8601 with a Z. Taken as milliseconds from Spark, since a
    collected TimestampType is a naive datetime in this process's local zone."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def partition_names(topic_partitions: Any, names: Mapping[str, str]) -> list[str]:
    """``orders-0`` (Kafka's way of naming a partition) for each partition of an assignment; a
    topic id no topic of the cluster has (deleted) as its first 8 characters, ``AaIUJCwU:0``."""
    return sorted(
        f"{names[tp.topic_id]}-{p}" if tp.topic_id in names else f"{tp.topic_id[:8]}:{p}"
        for tp in topic_partitions
        for p in tp.partitions
    )


def history(
    status_log: DataFrame, group: str, names: Mapping[str, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(events, commits per minute) of one group, from the records a coordinator applies; ``names``
    (topic id -> name, ``cluster.topic_names``) names the assigned partitions."""
    names = names or {}
    rows = status_log.where((F.col("group_id") == group) & (F.col("status") == "applied"))
    rows = rows.withColumn("_ms", F.unix_millis("timestamp")).persist()
    per_minute = (
        rows.where(of_type(RecordType.OFFSET_COMMIT) & ~F.col("tombstone"))
        .groupBy(F.unix_millis(F.window("timestamp", "1 minute").start).alias("minute"))
        .agg(F.count("*").alias("commits"), F.countDistinct("topic", "topic_partition").alias("partitions"))
        .orderBy("minute")
    )
    commits = [
        {"minute": utc_text(r.minute), "commits": r.commits, "partitions": r.partitions} for r in per_minute.collect()
    ]
    # On a COMMIT marker the shard writes the producer's offsets (OffsetCommit records carrying its
    # id) in the same atomic batch as the tombstones of what the marker decided; on ABORT only the
    # tombstones (groupcoord/coordinator/offsets/transactions.py).
    oc = F.col("value.offset_commit")
    applied_by = {
        (int(r.batch_start), int(r.pid))
        for r in rows.where(of_type(RecordType.OFFSET_COMMIT) & ~F.col("tombstone") & (oc.producer_id >= 0))
        .select("batch_start", oc.producer_id.alias("pid"))
        .distinct()
        .collect()
    }
    events: list[dict[str, Any]] = []
    members: set[str] = set()
    targets: dict[str, list[str]] = {}
    epoch: int | None = None
    generation: int | None = None
    share = ShareHistory()
    ordered = rows.where(~of_type(RecordType.OFFSET_COMMIT)).orderBy("offset").collect()
    for r in ordered:
        when = utc_text(r["_ms"])

        def note(kind: str, detail: str, member: str | None = None, r: Any = r, when: Any = when) -> None:
            events.append(
                {
                    "time": when,
                    "partition": r.partition,
                    "offset": r.offset,
                    "event": kind,
                    "member": member,
                    "detail": detail,
                }
            )

        t = RecordType(r.record_type_id)
        if t in _GROUP_EPOCH:
            kind = _GROUP_EPOCH[t]
            if r.tombstone:
                note("group-deleted", f"{kind} group removed")
                epoch = None
            else:
                new = r.value[value_field(t)].epoch
                if new != epoch:
                    note("epoch", f"group epoch {epoch if epoch is not None else '-'} -> {new}")
                epoch = new
        elif t == RecordType.GROUP_METADATA:
            if r.tombstone:
                note("group-deleted", "classic group removed")
                generation = None
                continue
            v = r.value.group_metadata
            if v.generation != generation:
                note(
                    "generation", f"generation {v.generation} ({v.protocol or 'no protocol'}, {len(v.members)} members)"
                )
            generation = v.generation
            now = {m.member_id for m in v.members}
            for m in sorted(now - members):
                note("member-joined", "classic member", m)
            for m in sorted(members - now):
                note("member-left", "classic member", m)
            members = now
        elif t in _MEMBER_METADATA:
            if r.tombstone:
                if r.member_id in members:
                    note("member-left", "", r.member_id)
                    members.discard(r.member_id)
            elif r.member_id not in members:
                v = r.value[value_field(t)]
                which = "share member, " if t == RecordType.SHARE_GROUP_MEMBER_METADATA else ""
                note("member-joined", f"{which}client {v.client_id} at {v.client_host}", r.member_id)
                members.add(r.member_id)
        elif t in _TARGET_MEMBER:
            parts = [] if r.tombstone else partition_names(r.value[value_field(t)].topic_partitions, names)
            if targets.get(r.member_id) != parts:
                note("target-assignment", ", ".join(parts) or "(none)", r.member_id)
                targets[r.member_id] = parts
        elif t == RecordType.PENDING_TXN_OFFSETS:
            txn_event(r, note, applied_by)
        elif t in _TARGET_METADATA and not r.tombstone:
            note("assignment-epoch", f"target assignment at epoch {r.value[value_field(t)].assignment_epoch}")
        elif t in (RecordType.SHARE_SNAPSHOT, RecordType.SHARE_UPDATE):
            share.event(r, note)
    rows.unpersist()
    return events, commits


# The records of KIP-848 consumer groups and of share groups that history reads alike (the share
# records have the consumer records' shapes), and the group type each one names.
_GROUP_EPOCH = {RecordType.CONSUMER_GROUP_METADATA: "consumer", RecordType.SHARE_GROUP_METADATA: "share"}
_MEMBER_METADATA = (RecordType.CONSUMER_GROUP_MEMBER_METADATA, RecordType.SHARE_GROUP_MEMBER_METADATA)
_TARGET_MEMBER = (RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER)
_TARGET_METADATA = (
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
)


def txn_event(r: Any, note: Callable[..., None], applied_by: set[tuple[int, int]]) -> None:
    """A transactional commit in a group's history: staged, then committed or aborted when the
    marker's outcome was written (one event per staged record)."""
    where = f"transaction record at {r.txn_offset}"
    if not r.tombstone:
        v = r.value.pending_txn_offsets
        offsets = ", ".join(f"{o.topic}-{o.partition}={o.offset}" for o in v.offsets)
        note("txn-staged", f"producer {r.producer_id} epoch {v.producer_epoch} ({v.transactional_id}): {offsets}")
    elif (int(r.batch_start), int(r.producer_id)) in applied_by:
        note("txn-committed", f"producer {r.producer_id}, {where}: offsets applied")
    else:
        # Also what a COMMIT whose every offset a later plain commit overtook looks like.
        note("txn-aborted", f"producer {r.producer_id}, {where}: offsets dropped")
