"""Many groups on one process: memory per group and per committed offset, load after failover
beside a bare read of the same log, and ListGroups/DescribeGroups over every group while a member
of another group heartbeats.

    python bench/many_groups_bench.py [--groups 100000] [--offsets-per-group 10] [--connections 32]

Phases, against one ``groupcoord serve`` process holding every group in one shard (``--partitions
1``, the worst case: the admin requests and the heartbeats share one shard's event loop):
- fill: each group commits ``--offsets-per-group`` partitions in one OffsetCommit v9 (a simple
  group: generation -1, no member, as tools and ``assign()``-ed consumers commit); offsets/s;
- queries: a KIP-848 member of another group heartbeats every 100 ms (its own cadence, not the
  coordinator's interval) through a quiet phase and then while one client lists every group
  (ListGroups v5) and describes them all (DescribeGroups v5, 1,000 group ids a request);
  heartbeat p50/p99/max quiet and busy, the ListGroups answer time and size, the describe time;
- load: the serve process stops; a standby runtime in a fresh child process loads the shard
  (a failover), three times, each beside a bare consumer reading the same log with the same
  settings (the raw figure, same run); the child's RSS before and after the load gives memory per
  group and per committed offset (the same bytes, divided by groups and by offsets).
JSON to bench/results/many_groups.json. Not part of the test suite: timings drift on shared
machines, which is why every figure stands beside its raw one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from large_group_bench import HB_KEY, HB_VERSION, Connection, cpu_seconds
from rich.progress import Progress
from runtime_bench import ROOT, cluster, median_by, percentile, read_log_raw

from coordinator.errors import ErrorCode
from coordinator.group_shard import GroupCoordinatorShard
from coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from coordinator.runtime.log import LogTopicSpec
from coordinator.runtime.runtime import CoordinatorRuntime
from deploy.local_broker import free_port

COMMIT_KEY, COMMIT_VERSION = 8, 9
LIST_KEY, LIST_VERSION = 16, 5
DESCRIBE_KEY, DESCRIBE_VERSION = 15, 5
DESCRIBE_CHUNK = 1000
RETRIABLE = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


def rss_bytes(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def group_name(i: int) -> str:
    return f"many-{i:07d}"


async def fill(address: tuple[str, int], topic: str, groups: int, per_group: int, connections: int) -> dict[str, Any]:
    next_group = 0
    retries = 0

    async def worker(progress: Progress, task: Any) -> None:
        nonlocal next_group, retries
        conn = await Connection.open(address)
        try:
            while next_group < groups:
                i = next_group
                next_group += 1
                request = OffsetCommitRequest(
                    group_id=group_name(i),
                    topics=[
                        OffsetCommitRequestTopic(
                            name=topic,
                            partitions=[
                                OffsetCommitRequestPartition(partition_index=p, committed_offset=i + p)
                                for p in range(per_group)
                            ],
                        )
                    ],
                )
                while True:
                    response = await conn.call(COMMIT_KEY, COMMIT_VERSION, request)
                    assert isinstance(response, OffsetCommitResponse)
                    codes = {p.error_code for t in response.topics for p in t.partitions}
                    if codes == {0}:
                        break
                    assert codes <= set(RETRIABLE), codes
                    retries += 1
                    await asyncio.sleep(0.1)
                progress.update(task, advance=1)
        finally:
            conn.close()

    with Progress() as progress:
        task = progress.add_task("committing", total=groups)
        start = time.perf_counter()
        await asyncio.gather(*(worker(progress, task) for _ in range(connections)))
        seconds = time.perf_counter() - start
    return {
        "groups": groups,
        "offsets": groups * per_group,
        "seconds": seconds,
        "offsets_per_s": groups * per_group / seconds,
        "retried_requests": retries,
    }


class Prober:
    """One KIP-848 member of its own group, heartbeating every 100 ms, recording each latency."""

    def __init__(self, address: tuple[str, int], topic: str) -> None:
        self.address, self.topic = address, topic
        self.latencies_ms: list[float] = []
        self.stop = False

    async def run(self) -> None:
        conn = await Connection.open(self.address)
        member_id = uuid.uuid4().hex[:22]
        epoch = 0
        try:
            while not self.stop:
                body = ConsumerGroupHeartbeatRequest(
                    group_id="many-bench-probe",
                    member_id=member_id,
                    member_epoch=epoch,
                    rebalance_timeout_ms=60_000 if epoch == 0 else -1,
                    subscribed_topic_names=[self.topic] if epoch == 0 else None,
                    topic_partitions=[] if epoch == 0 else None,
                )
                start = time.perf_counter()
                response = await conn.call(HB_KEY, HB_VERSION, body)
                self.latencies_ms.append((time.perf_counter() - start) * 1000)
                assert isinstance(response, ConsumerGroupHeartbeatResponse)
                if response.error_code == 0:
                    epoch = response.member_epoch
                await asyncio.sleep(0.1)
        finally:
            conn.close()

    def take(self) -> dict[str, float]:
        taken, self.latencies_ms = self.latencies_ms, []
        return {
            "heartbeats": len(taken),
            "p50_ms": percentile(taken, 0.5),
            "p99_ms": percentile(taken, 0.99),
            "max_ms": max(taken),
        }


async def queries(address: tuple[str, int], topic: str, groups: int, quiet_seconds: float) -> dict[str, Any]:
    prober = Prober(address, topic)
    probing = asyncio.create_task(prober.run())
    await asyncio.sleep(quiet_seconds)
    quiet = prober.take()
    admin = await Connection.open(address)
    start = time.perf_counter()
    listed = await admin.call(LIST_KEY, LIST_VERSION, ListGroupsRequest())
    list_seconds = time.perf_counter() - start
    assert isinstance(listed, ListGroupsResponse) and listed.error_code == 0, listed
    names = sorted(g.group_id for g in listed.groups if g.group_id.startswith("many-0"))
    assert len(names) == groups, (len(names), groups)
    described = 0
    describe_start = time.perf_counter()
    for at in range(0, len(names), DESCRIBE_CHUNK):
        response = await admin.call(
            DESCRIBE_KEY, DESCRIBE_VERSION, DescribeGroupsRequest(groups=names[at : at + DESCRIBE_CHUNK])
        )
        assert isinstance(response, DescribeGroupsResponse)
        described += sum(1 for g in response.groups if g.error_code == 0)
    describe_seconds = time.perf_counter() - describe_start
    busy = prober.take()
    admin.close()
    prober.stop = True
    await probing
    return {
        "list_groups_seconds": list_seconds,
        "list_groups_listed": len(listed.groups),
        "describe_groups_seconds": describe_seconds,
        "describe_groups_described": described,
        "describe_groups_requests": -(-len(names) // DESCRIBE_CHUNK),
        "heartbeat_quiet": quiet,
        "heartbeat_during_list_and_describe": busy,
    }


async def child_load(bootstrap: str, log_topic: str) -> dict[str, Any]:
    """A standby runtime in this (fresh) process loads the shard; RSS before and after."""
    config = {"bootstrap.servers": bootstrap}
    standby = CoordinatorRuntime(
        config, LogTopicSpec(name=log_topic, partitions=1), GroupCoordinatorShard(), owner_id="bench-many"
    )
    await standby.start(partitions=[])
    await asyncio.sleep(1.0)
    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    standby.load_shard(0)
    (report,) = await standby.wait_loaded(900)
    seconds = time.perf_counter() - start
    gc.collect()
    after = rss_bytes()
    await standby.close()
    return {
        "records": report.records,
        "seconds": seconds,
        "records_per_s": report.records / seconds,
        "rss_before_bytes": before,
        "rss_after_bytes": after,
    }


def run_child_load(bootstrap: str, log_topic: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child-load", bootstrap, log_topic],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=1800,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--offsets-per-group", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--quiet-seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "many_groups.json"))
    parser.add_argument("--child-load", nargs=2, metavar=("BOOTSTRAP", "LOG_TOPIC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_load:
        print(json.dumps(asyncio.run(child_load(*args.child_load))))
        return
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"many-data-{uuid.uuid4().hex[:8]}"
        log_topic = f"many-log-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.offsets_per_group, 1)])[topic].result(120)
        port = free_port()
        address = ("127.0.0.1", port)
        serve_log = tempfile.TemporaryFile()  # noqa: SIM115 (closed once serve has stopped)
        env = {**os.environ, "GROUPCOORD_GATEWAY__MAX_CONNECTIONS": str(args.connections + 100)}
        serve = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "-b", bootstrap, "--listen", f"127.0.0.1:{port}",
             "--log-topic", log_topic, "--partitions", "1"],
            stdout=subprocess.PIPE, stderr=serve_log, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        try:
            assert serve.stdout is not None and serve.stdout.readline().startswith("listening on")
            time.sleep(2.0)
            serve_rss_empty = rss_bytes(serve.pid)
            cpu0 = cpu_seconds(serve.pid)
            filled = asyncio.run(fill(address, topic, args.groups, args.offsets_per_group, args.connections))
            filled["serve_cpu_seconds_per_offset"] = (cpu_seconds(serve.pid) - cpu0) / filled["offsets"]
            gc.collect()
            serve_rss_filled = rss_bytes(serve.pid)
            asked = asyncio.run(queries(address, topic, args.groups, args.quiet_seconds))
        except BaseException:
            serve_log.seek(0)
            print("serve's log (tail):", *serve_log.read().decode(errors="replace").splitlines()[-20:], sep="\n")
            raise
        finally:
            serve.terminate()
            serve.wait(60)
            serve_log.close()
        config = {"bootstrap.servers": bootstrap}
        raws, loads = [], []
        with Progress() as progress:
            task = progress.add_task("loading", total=args.rounds)
            for _ in range(args.rounds):
                raws.append(read_log_raw(config, log_topic))
                loads.append(run_child_load(bootstrap, log_topic))
                progress.update(task, advance=1)
    raw = median_by(raws, "records_per_s")
    load = median_by(loads, "records_per_s")
    grown = statistics.median(run["rss_after_bytes"] - run["rss_before_bytes"] for run in loads)
    offsets = args.groups * args.offsets_per_group
    out = {
        "benchmark": "many_groups",
        "broker": label,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": {k: v for k, v in vars(args).items() if k not in ("out", "bootstrap", "child_load")},
        "fill": filled,
        "queries": asked,
        "load": {
            "records": load["records"],
            "load_records_per_s": load["records_per_s"],
            "raw_read_of_the_same_log": raw,
            "load_over_raw_read": load["records_per_s"] / raw["records_per_s"],
            "runs": {"raw_read": raws, "failover_load": loads},
        },
        "memory": {
            "loaded_shard_rss_growth_bytes": grown,
            "bytes_per_committed_offset": grown / offsets,
            "bytes_per_group": grown / args.groups,
            "serve_rss_empty_bytes": serve_rss_empty,
            "serve_rss_after_fill_bytes": serve_rss_filled,
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
