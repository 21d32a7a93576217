"""Pipeline benchmark: Spark's ``snapshot`` of a coordinator log beside the coordinator's own load of it.

    python bench/pipeline_bench.py [--records 1000000] [--log-partitions 4] [--master local[2]]
                                   [--bootstrap HOST:PORT] [--out bench/results/pipeline.json]

One run, one broker, one log:
1. the log is written by the real coordinator (``CoordinatorRuntime`` + ``GroupCoordinatorService``,
   100-partition OffsetCommits, 64 in flight), ``--records`` records over ``--log-partitions`` shards,
   each key committed ten times (so a tenth of the records are the live state);
2. raw: a plain librdkafka consumer reads the whole topic (records/s): the floor for any reader;
3. the coordinator: a fresh runtime loads (replays) every shard of it, as on failover;
4. Spark: ``groupcoord.pipeline.jobs`` snapshot (read through the ``groupcoord`` data source, replay status,
   latest value per key, the five tables written as parquet), with ``--master`` (``local[2]``: the
   two cores of the machine this was written on). Session start is reported apart from the job.
Then the snapshot's offsets table is checked equal to the loaded coordinator's committed offsets,
so the bench also proves both readers agree on a large log.

Writes JSON (``bench/results/pipeline.json``). Not part of the test suite (a smoke test runs it
tiny: tests/pipeline/test_pipeline_bench.py): timings drift on shared machines, which is why every
figure stands beside the raw read of the same log in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from runtime_bench import cluster  # noqa: E402

from groupcoord.coordinator.group_shard import GroupCoordinatorShard  # noqa: E402
from groupcoord.coordinator.groups.context import RequestContext  # noqa: E402
from groupcoord.coordinator.messages.offset_commit import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.runtime.log import LogTopicSpec  # noqa: E402
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime  # noqa: E402
from groupcoord.coordinator.service.service import GroupCoordinatorService  # noqa: E402

PARTITIONS_PER_COMMIT = 100
TOPICS = 10
COMMITS_PER_KEY = 10
IN_FLIGHT = 64
# OffsetCommit v9, as a current client sends it.
COMMIT_CONTEXT = RequestContext(api_version=9)

Offsets = dict[tuple[str, str, int], int]


def commit_request(i: int, groups: int) -> OffsetCommitRequest:
    """The i-th commit: group ``i % groups``, topic ``(i // groups) % TOPICS``, 100 partitions at offset i."""
    return OffsetCommitRequest(
        group_id=f"bench-group-{i % groups}",
        topics=[
            OffsetCommitRequestTopic(
                name=f"bench-topic-{(i // groups) % TOPICS}",
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=i)
                    for p in range(PARTITIONS_PER_COMMIT)
                ],
            )
        ],
    )


async def write_log(config: dict[str, str], spec: LogTopicSpec, records: int, progress: Progress) -> Offsets:
    """Write about ``records`` records through the coordinator; return the offsets it acknowledged."""
    commits = max(1, records // PARTITIONS_PER_COMMIT)
    groups = max(1, commits // (COMMITS_PER_KEY * TOPICS))
    handlers = GroupCoordinatorShard()
    runtime = CoordinatorRuntime(config, spec, handlers, owner_id="pipeline-bench-writer")
    await runtime.start()
    await runtime.wait_loaded(120)
    service = GroupCoordinatorService(runtime, handlers)
    expected: Offsets = {}
    task = progress.add_task("coordinator writes the log", total=commits * PARTITIONS_PER_COMMIT)
    done = 0
    while done < commits:
        batch = [commit_request(i, groups) for i in range(done, min(done + IN_FLIGHT, commits))]
        responses = await asyncio.gather(*(service.commit_offsets(r, COMMIT_CONTEXT) for r in batch))
        for request, response in zip(batch, responses, strict=True):
            for answered in response.topics:
                for result in answered.partitions:
                    if result.error_code != 0:
                        raise RuntimeError(f"commit refused: {request.group_id} {answered.name} {result}")
            for asked in request.topics:
                for p in asked.partitions:
                    expected[(request.group_id, asked.name, p.partition_index)] = p.committed_offset
        done += len(batch)
        progress.update(task, completed=done * PARTITIONS_PER_COMMIT)
    await runtime.close()
    return expected


def raw_read(config: dict[str, str], topic: str, partitions: int, total: int, progress: Progress) -> dict[str, Any]:
    """Every record of the log topic through a plain consumer, values untouched, up to each
    partition's end (partition EOF: the local broker's ListOffsets "latest" is wrong)."""
    consumer = Consumer(
        {
            **config,
            "group.id": "pipeline-bench-raw",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 5,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    task = progress.add_task("raw consume", total=total)
    seen = 0
    start = time.perf_counter()
    remaining = set(range(partitions))
    while remaining:
        for msg in consumer.consume(5000, 1.0):
            error = msg.error()
            if error is None:
                seen += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                remaining.discard(msg.partition())
        progress.update(task, completed=seen)
    seconds = time.perf_counter() - start
    consumer.close()
    return {"records": seen, "seconds": seconds, "records_per_s": seen / seconds}


async def coordinator_load(config: dict[str, str], spec: LogTopicSpec) -> tuple[dict[str, Any], Offsets]:
    """A fresh runtime loads every shard, as a process taking over on failover does."""
    handlers = GroupCoordinatorShard()
    runtime = CoordinatorRuntime(config, spec, handlers, owner_id="pipeline-bench-loader")
    start = time.perf_counter()
    await runtime.start()
    reports = await runtime.wait_loaded(1800)
    seconds = time.perf_counter() - start
    loaded: Offsets = {}
    for shard in runtime.shards.values():
        for group, topics in shard.committed.offsets.offsets.items():
            for topic, partitions in topics.items():
                for partition, value in partitions.items():
                    loaded[(group, topic, partition)] = value.offset
    await runtime.close()
    records = sum(r.records for r in reports)
    return {
        "records": records,
        "seconds": seconds,
        "records_per_s": records / seconds,
        "per_shard_seconds": {r.partition: round(r.seconds, 3) for r in reports},
    }, loaded


def spark_snapshot(config: dict[str, str], topic: str, master: str, out_dir: str) -> tuple[dict[str, Any], Offsets]:
    from pyspark.sql import SparkSession

    from groupcoord.pipeline.cluster import topic_names
    from groupcoord.pipeline.jobs import load_log, snapshot_tables, with_status, write_tables
    from groupcoord.pipeline.source import session

    owned = SparkSession.getActiveSession() is None
    t0 = time.perf_counter()
    spark = session(master, app="groupcoord-pipeline-bench")
    session_seconds = time.perf_counter() - t0
    try:
        t1 = time.perf_counter()
        status_log = with_status(load_log(spark, config, topic)).persist()
        records = status_log.count()
        counts = write_tables(snapshot_tables(spark, status_log, topic_names(config)), out_dir, "parquet")
        job_seconds = time.perf_counter() - t1
        status_log.unpersist()
        rows = spark.read.parquet(f"{out_dir}/offsets").select("group_id", "topic", "partition", "committed_offset")
        snapshot = {(r.group_id, r.topic, r.partition): r.committed_offset for r in rows.toLocalIterator()}
    finally:
        if owned:
            spark.stop()
    return {
        "master": master,
        "records": records,
        "session_start_seconds": session_seconds,
        "job_seconds": job_seconds,
        "records_per_s": records / job_seconds,
        "tables": counts,
    }, snapshot


def run(bootstrap: str, label: str, records: int, log_partitions: int, master: str) -> dict[str, Any]:
    config = {"bootstrap.servers": bootstrap}
    spec = LogTopicSpec(name=f"bench-pipeline-log-{uuid.uuid4().hex[:8]}", partitions=log_partitions)
    with Progress(transient=True) as progress:
        written = asyncio.run(write_log(config, spec, records, progress))
        raw = raw_read(config, spec.name, log_partitions, records, progress)
    load, loaded = asyncio.run(coordinator_load(config, spec))
    print(f"spark snapshot with {master} ...", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as out_dir:
        spark, snapshot = spark_snapshot(config, spec.name, master, out_dir)
    agree = snapshot == loaded == written
    if not agree:
        raise SystemExit(
            f"readers disagree: snapshot {len(snapshot)} offsets, coordinator {len(loaded)}, written {len(written)}"
        )
    return {
        "broker": label,
        "log": {"topic": spec.name, "partitions": log_partitions, "records": raw["records"], "keys": len(written)},
        "raw_consume": raw,
        "coordinator_load": load,
        "spark_snapshot": spark,
        "snapshot_equals_coordinator": agree,
        "spark_job_vs_coordinator_load": spark["job_seconds"] / load["seconds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--log-partitions", type=int, default=4)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "pipeline.json"))
    args = parser.parse_args()
    with cluster(args.bootstrap) as (bootstrap, label):
        result = run(bootstrap, label, args.records, args.log_partitions, args.master)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
