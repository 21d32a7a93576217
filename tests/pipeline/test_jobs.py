"""The pipeline jobs against a log written by a real coordinator, checked against that coordinator's answers."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from typer.testing import CliRunner

from groupcoord.cli.main import app
from groupcoord.pipeline.cluster import read_range, topic_names, watermarks
from groupcoord.pipeline.jobs import audit, history, lag, load_log, snapshot_tables, with_status, write_tables
from groupcoord.records import CoordinatorRecord, RecordType, encode, encode_key, encode_value
from groupcoord.records.definitions import (
    ConsumerGroupMemberKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    LogSkipKey,
    LogSkipValue,
    TopicPartitions,
)
from tests.client_records import log_headers
from tests.clients.support import create_topic, wait_for
from tests.pipeline.conftest import DATA_PARTITIONS, LOG_PARTITIONS, PER_PARTITION, WrittenLog

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
runner = CliRunner()


def _admin(wl: WrittenLog) -> AdminClient:
    return AdminClient({"bootstrap.servers": wl.sidecar})


def _offset_fetch(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)[group]
    return {(tp.topic, tp.partition): tp.offset for tp in result.result(30).topic_partitions if tp.offset >= 0}


def _status_log(spark: SparkSession, wl: WrittenLog, topic: str | None = None):  # type: ignore[no-untyped-def]
    return with_status(load_log(spark, {"bootstrap.servers": wl.bootstrap}, topic or wl.log_topic))


@pytest.fixture(scope="module")
def real_log(spark: SparkSession, written_log: WrittenLog) -> Iterator[DataFrame]:
    """The coordinator's log with its statuses, read through the data source once and cached for
    the tests here that only read it. Each job scans its input several times (the status join,
    every table and check), and each scan of the source costs seconds however small the log (the
    watermark lookup, then a consumer per partition): uncached, these tests took ~90 s of CI.
    Reading through the source itself is what test_source.py and the CLI tests check."""
    status_log = _status_log(spark, written_log).persist()
    status_log.count()
    try:
        yield status_log
    finally:
        status_log.unpersist()


def test_snapshot_equals_what_the_coordinator_serves(
    spark: SparkSession, written_log: WrittenLog, real_log: DataFrame, tmp_path: Path
) -> None:
    wl = written_log
    counts = write_tables(
        snapshot_tables(spark, real_log, topic_names({"bootstrap.servers": wl.bootstrap})),
        str(tmp_path),
        "parquet",
    )
    assert set(counts) == {
        "offsets",
        "groups",
        "members",
        "target_assignments",
        "current_assignments",
        "pending_offsets",
        "share_partitions",
    }
    tables = {name: spark.read.parquet(str(tmp_path / name)).collect() for name in counts}
    admin = _admin(wl)
    groups = [wl.live_group, wl.gone_group, wl.classic_group]

    # Offsets: exactly what OffsetFetch answers, for every group.
    for g in groups:
        mine = {(r.topic, r.partition): r.committed_offset for r in tables["offsets"] if r.group_id == g}
        assert mine == _offset_fetch(admin, g), g
        assert len(mine) == DATA_PARTITIONS

    # Groups, members and assignments: what ConsumerGroupDescribe / DescribeGroups answer.
    described = {g: f.result(30) for g, f in admin.describe_consumer_groups(groups, request_timeout=30).items()}
    snap_groups = {r.group_id: r for r in tables["groups"] if r.group_id in groups}
    assert set(snap_groups) == set(groups)
    for g in groups:
        d = described[g]
        assert snap_groups[g].state.lower() == d.state.name.lower(), g
        assert snap_groups[g].members == len(d.members), g
        assert snap_groups[g].type == ("classic" if g == wl.classic_group else "consumer")
        members = {r.member_id for r in tables["members"] if r.group_id == g}
        assert members == {m.member_id for m in d.members}, g
        owned = {
            (r.member_id, r.topic, r.partition)
            for r in tables["current_assignments"]
            if r.group_id == g and not r.pending_revocation
        }
        assert owned == {
            (m.member_id, tp.topic, tp.partition) for m in d.members for tp in m.assignment.topic_partitions
        }, g
    live = snap_groups[wl.live_group]
    assert live.state == "Stable" and live.members == 2 and live.group_epoch == live.assignment_epoch
    # A group of committed offsets only: listed as the empty classic group the sidecar serves.
    (simple,) = [r for r in tables["groups"] if r.group_id == wl.simple_group]
    assert (simple.type, simple.state, simple.members, simple.protocol_type) == ("classic", "Empty", 0, "")
    assert {(r.partition, r.committed_offset) for r in tables["offsets"] if r.group_id == wl.simple_group} == {(0, 7)}
    assert _offset_fetch(admin, wl.simple_group) == {(wl.data_topic, 0): 7}
    (listed,) = [g for g in admin.list_consumer_groups().result(30).valid if g.group_id == wl.simple_group]
    assert listed.is_simple_consumer_group
    # A stable group's target assignment is what its members own.
    target = {(r.member_id, r.topic, r.partition) for r in tables["target_assignments"] if r.group_id == wl.live_group}
    owned_live = {
        (r.member_id, r.topic, r.partition) for r in tables["current_assignments"] if r.group_id == wl.live_group
    }
    assert target == owned_live and len(target) == DATA_PARTITIONS


def test_snapshot_cli_writes_csv(spark: SparkSession, written_log: WrittenLog, tmp_path: Path) -> None:
    wl = written_log
    result = runner.invoke(
        app,
        [
            "pipeline",
            "snapshot",
            "-b",
            wl.bootstrap,
            "--topic",
            wl.log_topic,
            "--out",
            str(tmp_path),
            "--format",
            "csv",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    tables = {t["table"]: t["rows"] for t in summary["items"]}
    assert tables["offsets"] >= 3 * DATA_PARTITIONS and summary["format"] == "csv" and summary["errors"] == []
    header = next((tmp_path / "offsets").glob("*.csv")).read_text().splitlines()[0]
    assert header.startswith("group_id,topic,partition,committed_offset")


def test_audit_passes_on_the_real_log(real_log: DataFrame) -> None:
    assert audit(real_log).collect() == []


def _copy_live_partition(wl: WrittenLog, name: str) -> tuple[str, Producer, list[CoordinatorRecord]]:
    """The live group's log partition copied whole into a new one-partition topic named after
    ``name``: (the topic, the producer that wrote it, to write more, the records copied in order)."""
    from groupcoord.coordinator.service.partitioning import partition_for
    from groupcoord.records import decode

    source = partition_for(wl.live_group, LOG_PARTITIONS)
    config = {"bootstrap.servers": wl.bootstrap}
    end = watermarks(config, [(wl.log_topic, source)])[(wl.log_topic, source)][1]
    topic = f"gc-pl-{name}-{uuid.uuid4().hex[:8]}"
    create_topic(wl.bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": wl.bootstrap, "enable.idempotence": True})
    records = []
    for msg in read_range(config, wl.log_topic, source, 0, end):
        producer.produce(topic, key=msg.key(), value=msg.value(), headers=msg.headers(), partition=0)
        records.append(decode(msg.key(), msg.value()))
    assert producer.flush(30) == 0
    return topic, producer, records


def _shard_epoch(records: list[CoordinatorRecord]) -> int:
    """The last shard epoch ``records`` (a log partition, in order) set."""
    epochs = [r.value.epoch for r in records if r.type == RecordType.SHARD_EPOCH and r.value is not None]
    return epochs[-1] if epochs else 0


def _forge(wl: WrittenLog) -> tuple[str, int, int]:
    """A copy of the live group's log partition plus two forged records; (topic, offset1, offset2)."""
    topic, producer, records = _copy_live_partition(wl, "forged")
    shard_epoch = _shard_epoch(records)
    group_epoch = 0
    target_of_a: ConsumerGroupTargetAssignmentMemberValue | None = None
    member_a = ""
    for rec in records:
        if rec.value is not None and getattr(rec.key, "group", None) == wl.live_group:
            if rec.type == RecordType.CONSUMER_GROUP_METADATA:
                group_epoch = rec.value.epoch
            if rec.type == RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER and rec.value.topic_partitions:
                target_of_a, member_a = rec.value, rec.key.member_id
    assert target_of_a is not None and group_epoch > 1
    offsets: list[int] = []

    def delivered(err: object, msg: object) -> None:
        assert err is None
        offsets.append(msg.offset())  # type: ignore[attr-defined]

    # 1. A member nobody has heard of is given the partitions member A already has.
    stolen = ConsumerGroupTargetAssignmentMemberValue(
        [TopicPartitions(tp.topic_id, tp.partitions) for tp in target_of_a.topic_partitions]
    )
    producer.produce(
        topic,
        key=encode_key(
            RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, ConsumerGroupMemberKey(wl.live_group, "forged-member")
        ),
        value=encode_value(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, stolen),
        headers=log_headers(shard_epoch, 0, 1),
        partition=0,
        on_delivery=delivered,
    )
    producer.flush(30)
    # 2. The group epoch goes back by one.
    producer.produce(
        topic,
        key=encode_key(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey(wl.live_group)),
        value=encode_value(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataValue(group_epoch - 1)),
        headers=log_headers(shard_epoch, 0, 1),
        partition=0,
        on_delivery=delivered,
    )
    assert producer.flush(30) == 0 and len(offsets) == 2
    assert member_a
    return topic, offsets[0], offsets[1]


def test_audit_names_forged_records(spark: SparkSession, written_log: WrittenLog) -> None:
    wl = written_log
    topic, stolen_at, backwards_at = _forge(wl)
    # Cached as real_log is: the audit scans its input several times (the CLI below reads uncached).
    forged = _status_log(spark, wl, topic).persist()
    found = {(v.check, v.group_id, v.offset) for v in audit(forged).collect()}
    forged.unpersist()
    # The epoch going back also leaves the members above their group's epoch: named at the same record.
    assert found == {
        ("partition-two-members", wl.live_group, stolen_at),
        ("epoch-backwards", wl.live_group, backwards_at),
        ("member-epoch-above-group", wl.live_group, backwards_at),
    }
    result = runner.invoke(app, ["pipeline", "audit", "-b", wl.bootstrap, "--topic", topic, "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert {(v["check"], v["offset"]) for v in report["items"]} == {
        ("partition-two-members", stolen_at),
        ("epoch-backwards", backwards_at),
        ("member-epoch-above-group", backwards_at),
    }


def test_jobs_read_a_log_skip_decision_as_a_load_does(
    spark: SparkSession, written_log: WrittenLog, tmp_path: Path
) -> None:
    """An unreadable record under the shard's epoch, then the decision ``log skip --execute``
    writes: the audit passes and the snapshot builds (before, every job failed on the decision)."""
    wl = written_log
    topic, producer, records = _copy_live_partition(wl, "skip")
    shard_epoch = _shard_epoch(records)
    garbage_at: list[int] = []
    # An OffsetCommit key type with a body that does not decode, written under the current epoch.
    garbage_key = int(RecordType.OFFSET_COMMIT).to_bytes(2, "big") + b"\xff\xfe"
    producer.produce(
        topic,
        key=garbage_key,
        value=b"\x00",
        headers=log_headers(shard_epoch, 0, 1),
        partition=0,
        on_delivery=lambda err, msg: garbage_at.append(msg.offset() or 0),
    )
    assert producer.flush(30) == 0 and len(garbage_at) == 1
    # Before the decision, the snapshot builds without that record and says so.
    result = runner.invoke(
        app, ["pipeline", "snapshot", "-b", wl.bootstrap, "--topic", topic, "--out", str(tmp_path / "a"), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["unreadable"] == 1
    said = " ".join(result.stderr.split())
    assert (
        f"1 log records could not be read and are left out of the tables, the first at partition 0 offset {garbage_at[0]}"
        in said
    )
    key, value = encode(
        CoordinatorRecord(
            RecordType.LOG_SKIP, LogSkipKey(garbage_at[0]), LogSkipValue(garbage_at[0], "test@host", 0, "garbage")
        )
    )
    producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0

    forged = _status_log(spark, wl, topic).persist()
    statuses = {r.offset: r.status for r in forged.select("offset", "status").collect()}
    assert statuses[garbage_at[0]] == "skipped" and statuses[garbage_at[0] + 1] == "runtime"
    result = runner.invoke(
        app, ["pipeline", "snapshot", "-b", wl.bootstrap, "--topic", topic, "--out", str(tmp_path / "b"), "--json"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["unreadable"] == 0, result.output
    assert audit(forged).collect() == []
    tables = snapshot_tables(spark, forged, {})
    assert tables["offsets"].count() > 0
    forged.unpersist()
    result = runner.invoke(app, ["pipeline", "audit", "-b", wl.bootstrap, "--topic", topic, "--json"])
    assert result.exit_code == 0, result.output


def test_lag_matches_offset_fetch_and_high_watermarks(
    spark: SparkSession, written_log: WrittenLog, real_log: DataFrame
) -> None:
    wl = written_log
    producer = Producer({"bootstrap.servers": wl.bootstrap})
    extra = {0: 3, 1: 1}
    for p, n in extra.items():
        for i in range(n):
            producer.produce(wl.data_topic, value=f"late-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    config = {"bootstrap.servers": wl.bootstrap}
    offsets = snapshot_tables(spark, real_log, {})["offsets"]
    result = lag(spark, offsets, config)
    admin = _admin(wl)
    for g in (wl.live_group, wl.gone_group, wl.classic_group):
        fetched = _offset_fetch(admin, g)
        expected = {
            (wl.data_topic, p): PER_PARTITION + extra.get(p, 0) - fetched[(wl.data_topic, p)]
            for p in range(DATA_PARTITIONS)
        }
        mine = {(r["topic"], r["partition"]): r["lag"] for r in result.rows if r["group_id"] == g}
        assert mine == expected, g
        total = next(t for t in result.totals if t["group_id"] == g)
        assert total["total_lag"] == sum(expected.values()) == sum(extra.values())


def test_history_of_a_group(written_log: WrittenLog, real_log: DataFrame) -> None:
    wl = written_log
    status_log = real_log
    events, commits = history(status_log, wl.gone_group, topic_names({"bootstrap.servers": wl.bootstrap}))
    kinds = [e["event"] for e in events]
    assert "epoch" in kinds and "target-assignment" in kinds
    # Partitions by topic name as Kafka writes them (orders-0), not a cut topic id; times in UTC.
    assigned = next(e["detail"] for e in events if e["event"] == "target-assignment")
    assert assigned.startswith(f"{wl.data_topic}-"), assigned
    assert all(e["time"].endswith("Z") for e in events) and all(c["minute"].endswith("Z") for c in commits)
    joined = [e for e in events if e["event"] == "member-joined"]
    left = [e for e in events if e["event"] == "member-left"]
    assert len(joined) == 1 and "gone-a" in joined[0]["detail"]
    assert len(left) == 1 and left[0]["member"] == joined[0]["member"]
    assert joined[0]["offset"] < left[0]["offset"]
    commit_records = status_log.where(
        (status_log.group_id == wl.gone_group) & (status_log.record_type == "OFFSET_COMMIT") & ~status_log.tombstone
    ).count()
    assert sum(c["commits"] for c in commits) == commit_records > 0
    result = runner.invoke(
        app, ["pipeline", "history", "--group", wl.classic_group, "-b", wl.bootstrap, "--topic", wl.log_topic, "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert any(e["event"] == "generation" for e in report["items"])


def test_import_commits_through_the_sidecar(written_log: WrittenLog, tmp_path: Path) -> None:
    wl = written_log
    group = f"gc-pl-import-{uuid.uuid4().hex[:8]}"
    wanted = {p: 10 + p for p in range(DATA_PARTITIONS)}
    source = tmp_path / "offsets.csv"
    source.write_text(
        "group,topic,partition,offset\n"
        + "".join(f"{group},{wl.data_topic},{p},{o}\n" for p, o in wanted.items())
        + f"{wl.live_group},{wl.data_topic},0,1\n"
    )
    admin = _admin(wl)
    dry = runner.invoke(app, ["pipeline", "import", "--from", str(source), "-s", wl.sidecar, "--json"])
    assert dry.exit_code == 1, dry.output  # the live group is refused
    plan = {g["group"]: g for g in json.loads(dry.stdout)["items"]}
    assert plan[group]["action"] == "would commit" and plan[group]["partitions"] == DATA_PARTITIONS
    assert plan[wl.live_group]["action"].startswith("refused")
    assert _offset_fetch(admin, group) == {}
    before_live = _offset_fetch(admin, wl.live_group)
    done = runner.invoke(
        app, ["pipeline", "import", "--from", str(source), "-s", wl.sidecar, "--execute", "--batch-size", "3"]
    )
    assert done.exit_code == 1, done.output  # still refusing the live group, the rest is committed
    assert "committed" in done.output, done.output
    wait_for(
        lambda: _offset_fetch(admin, group) == {(wl.data_topic, p): o for p, o in wanted.items()},
        10,
        "imported offsets",
    )
    assert _offset_fetch(admin, wl.live_group) == before_live


def test_import_refuses_a_group_naming_a_partition_the_cluster_lacks_and_writes_none_of_it(
    written_log: WrittenLog, tmp_path: Path
) -> None:
    """A partition the cluster does not have is named, in the dry run already, and the group's
    other offsets are not written either (an operator probe saw the dry run say "would commit,
    FAILED 0" and the execute fail after writing the good partition); the summary piped is
    whitespace-aligned columns, nothing cut."""
    wl = written_log
    group = f"gc-pl-import-failing-{uuid.uuid4().hex[:24]}"  # longer than a narrow table's column
    source = tmp_path / "offsets.csv"
    source.write_text(f"group,topic,partition,offset\n{group},{wl.data_topic},0,5\n{group},{wl.data_topic},97,5\n")
    dry = runner.invoke(app, ["pipeline", "import", "--from", str(source), "-s", wl.sidecar, "--json"])
    assert dry.exit_code == 1, dry.output
    (planned,) = json.loads(dry.stdout)["items"]
    assert planned["action"] == f"refused: no such topic or partition ({wl.data_topic}-97)", planned
    done = runner.invoke(app, ["pipeline", "import", "--from", str(source), "-s", wl.sidecar, "--execute", "--json"])
    assert done.exit_code == 1, done.output
    (report,) = json.loads(done.stdout)["items"]
    assert report["action"].startswith("refused: no such topic or partition"), report
    assert _offset_fetch(_admin(wl), group) == {}
    text = runner.invoke(app, ["pipeline", "import", "--from", str(source), "-s", wl.sidecar, "--execute"])
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["GROUP", "PARTITIONS", "ACTION", "FAILED"], text.stdout
    assert lines[1].split()[:3] == [group, "2", "refused:"], text.stdout
    assert f"{wl.data_topic}-97" in text.stdout


def test_import_reads_a_file_as_utf8_and_takes_no_bad_row_for_a_header(written_log: WrittenLog, tmp_path: Path) -> None:
    """Found by an operator probe: a binary file was a traceback, a one-line file with a bad
    offset was taken for a header (nothing imported, exit 0), and a byte-order mark became part
    of the first group id."""
    wl = written_log
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    read = runner.invoke(app, ["pipeline", "import", "--from", str(binary), "-s", wl.sidecar])
    assert read.exit_code != 0 and "cannot read it as UTF-8 text" in read.output, read.output
    assert read.exception is None or isinstance(read.exception, SystemExit), read.exception
    bad = tmp_path / "bad.csv"
    bad.write_text(f"g,{wl.data_topic},0,x\n")
    refused = runner.invoke(app, ["pipeline", "import", "--from", str(bad), "-s", wl.sidecar])
    assert refused.exit_code != 0 and "partition and offset must be numbers" in refused.output, refused.output
    group = f"gc-pl-import-bom-{uuid.uuid4().hex[:8]}"
    marked = tmp_path / "bom.csv"
    marked.write_bytes(f"{group},{wl.data_topic},0,3\n".encode("utf-8-sig"))  # no header: the mark is the group's
    dry = runner.invoke(app, ["pipeline", "import", "--from", str(marked), "-s", wl.sidecar, "--json"])
    assert dry.exit_code == 0, dry.output
    assert [g["group"] for g in json.loads(dry.stdout)["items"]] == [group]
