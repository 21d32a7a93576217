"""The ``groupcoord`` Spark data source over a log written by a real coordinator under real clients."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from groupcoord.pipeline.cluster import read_range, watermarks
from groupcoord.records import RecordType, encode_key, encode_value
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue
from tests.client_records import log_headers
from tests.clients.support import create_topic
from tests.pipeline.conftest import LOG_PARTITIONS, WrittenLog

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _load(spark: SparkSession, wl: WrittenLog, **options: str):  # type: ignore[no-untyped-def]
    reader = spark.read.format("groupcoord").option("bootstrap.servers", wl.bootstrap).option("topic", wl.log_topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_reads_every_record_typed(spark: SparkSession, written_log: WrittenLog) -> None:
    wl = written_log
    # Cached by the collect, which reads through the source: the per-group queries below then
    # check the same rows' typed values without a scan of the source each (seconds apiece).
    df = _load(spark, wl).persist()
    rows = df.collect()
    # Every record of the topic, read independently with a plain consumer.
    marks = watermarks({"bootstrap.servers": wl.bootstrap}, [(wl.log_topic, p) for p in range(LOG_PARTITIONS)])
    direct = {
        (p, m.offset())
        for p in range(LOG_PARTITIONS)
        for m in read_range({"bootstrap.servers": wl.bootstrap}, wl.log_topic, p, 0, marks[(wl.log_topic, p)][1])
    }
    assert {(r.partition, r.offset) for r in rows} == direct
    assert len(rows) == len(direct)
    assert all(r.error is None for r in rows)
    types = {r.record_type for r in rows}
    assert {"SHARD_EPOCH", "OFFSET_COMMIT", "CONSUMER_GROUP_METADATA", "GROUP_METADATA"} <= types
    # Every record the runtime writes carries its shard epoch; the owner of each used shard wrote 1.
    assert all(r.shard_epoch >= 1 for r in rows)
    epochs = [r for r in rows if r.record_type == "SHARD_EPOCH"]
    assert epochs and all(r.value.shard_epoch.epoch == r.shard_epoch for r in epochs)
    # Batches written by one handler carry index/count markers.
    assert any(r.batch_count is not None and r.batch_count > 1 for r in rows)
    # Typed values: the latest commit per key equals what the clients committed.
    for group, committed in wl.committed.items():
        latest = (
            df.where((F.col("record_type") == "OFFSET_COMMIT") & (F.col("group_id") == group))
            .orderBy("offset")
            .select("topic_partition", "value.offset_commit.offset")
            .collect()
        )
        assert latest, group
        last = {r.topic_partition: r.offset for r in latest}
        assert last == committed
    # Tombstones have no value struct; live records exactly one field of it.
    for r in rows:
        set_fields = [v for v in r.value if v is not None] if r.value is not None else []
        assert len(set_fields) == (0 if r.tombstone else 1)
    df.unpersist()


def test_splits_and_offset_ranges(spark: SparkSession, written_log: WrittenLog) -> None:
    wl = written_log
    whole = {(r.partition, r.offset) for r in _load(spark, wl).select("partition", "offset").collect()}
    # The sidecar keeps writing (a share group's state, say): the split read stops where this one did.
    ends = {str(q): 1 + max((o for p, o in whole if p == q), default=-1) for q in range(LOG_PARTITIONS)}
    split = _load(spark, wl, maxRecordsPerSplit="7", endingOffsets=json.dumps(ends))
    assert split.rdd.getNumPartitions() > LOG_PARTITIONS
    assert {(r.partition, r.offset) for r in split.select("partition", "offset").collect()} == whole
    p = next(iter(sorted(whole)))[0]
    ranged = _load(spark, wl, startingOffsets=f'{{"{p}": 2}}', endingOffsets=f'{{"{p}": 5}}')
    got = {(r.partition, r.offset) for r in ranged.where(F.col("partition") == p).collect()}
    assert got == {(q, o) for q, o in whole if q == p and 2 <= o < 5}


def test_unreadable_records_become_flagged_rows(spark: SparkSession, bootstrap: str) -> None:
    topic = f"gc-pl-bad-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    good_key = encode_key(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0))
    good_value = encode_value(RecordType.OFFSET_COMMIT, OffsetCommitValue(offset=7))
    producer.produce(topic, key=good_key, value=good_value, headers=log_headers(1, 0, 1), partition=0)
    producer.produce(topic, key=b"\x00\x01garbage", value=b"\x00\x01\x00\x01zz", partition=0)
    producer.produce(topic, key=b"\x7f\x7f", value=None, partition=0)
    producer.produce(topic, key=good_key, value=good_value, headers=[("gc.b", b"\x00\x00\x00\x05\x00\x00\x00\x02")])
    assert producer.flush(30) == 0
    rows = (
        (spark.read.format("groupcoord").option("bootstrap.servers", bootstrap).option("topic", topic).load())
        .orderBy("offset")
        .collect()
    )
    assert [r.error is None for r in rows] == [True, False, False, False]
    assert rows[0].value.offset_commit.offset == 7
    assert "bad key body" in rows[1].error and rows[1].raw_key == b"\x00\x01garbage"
    assert "unknown record type" in rows[2].error
    assert "bad batch header" in rows[3].error
    assert all(r.record_type == "UNREADABLE" for r in rows[1:])


def test_bad_options_fail_with_one_line(spark: SparkSession, bootstrap: str) -> None:
    with pytest.raises(Exception, match="startingOffsets"):
        spark.read.format("groupcoord").option("bootstrap.servers", bootstrap).option(
            "startingOffsets", "yesterday"
        ).load().count()


def test_an_embedded_session_uses_two_shuffle_partitions_per_core() -> None:
    from groupcoord.pipeline.source import local_shuffle_partitions

    assert local_shuffle_partitions("local[2]") == 4
    assert local_shuffle_partitions("local[4,3]") == 8  # local[N, maxFailures]
    assert local_shuffle_partitions("local") == 2
    assert local_shuffle_partitions("local[*]") == 2 * (os.cpu_count() or 1)
    # A cluster (or spark-submit's own master) keeps the operator's setting.
    assert local_shuffle_partitions("spark://host:7077") is None
    assert local_shuffle_partitions(None) is None


def test_a_running_session_keeps_its_shuffle_partitions(spark: SparkSession) -> None:
    """A job started in a process that runs a session already (a notebook, these tests) uses that
    session as it is: getOrCreate would otherwise resize it to the job's master."""
    from groupcoord.pipeline.source import session

    before = spark.conf.get("spark.sql.shuffle.partitions")
    assert before != "16"  # (what local[8] would set)
    assert session("local[8]").conf.get("spark.sql.shuffle.partitions") == before
