"""Many groups on one process: memory per group and per committed offset, load after failover
beside a bare read of the same log, and ListGroups/DescribeGroups over every group while a member
of another group heartbeats.

    python bench/many_groups_bench.py [--groups 100000] [--offsets-per-group 10] [--connections 32]

Phases, against one ``groupcoord serve`` process holding every group in one shard (``--partitions
1``, the worst case: the admin requests and the heartbeats share one shard's event loop):
- fill: one group commits through the sidecar (a simple group: generation -1, no member, as tools
  and ``assign()``-ed consumers commit); the process stops, and the log gets the other groups'
  commit records appended directly, each a copy of that commit's record of the same partition
  (its epoch and atomic-batch headers included) with its own group and offset: exactly what the process would have written, at the
  cluster's produce rate instead of the commit rate (which ``bench/offsets_bench.py`` measures);
  ``--fill wire`` commits every group through the sidecar instead. A new process then loads it;
- queries: a KIP-848 member of another group heartbeats every 20 ms (its own cadence, not the
  coordinator's interval) through a quiet phase and then while one client lists every group
  (ListGroups v5) and describes them all (DescribeGroups v5, 1,000 group ids a request);
  heartbeat p50/p99/max quiet and busy, the ListGroups answer time and size, the describe time;
- load: the serve process stops; a standby runtime in a fresh child process loads the shard
  (a failover), ``--rounds`` times, each round beside a bare consumer reading the same log with
  the same settings in a fresh child process of its own (the raw figure, same run). Both are
  measured alike: a fresh process whose client has connected and idled for a second before the
  clock starts, the same consumer settings, the same log (a load adds its two claim records),
  and their order alternates from round to round (the first reader of a round never always the
  same one); every round is reported with its ratio, and the figure is the median of the
  rounds' ratios, beside each side's CPU seconds (steadier than wall time on a shared machine).
  The child's RSS before and after the load gives memory per group and per committed offset
  (the same bytes, divided by groups and by offsets). ``--only-load LOG_TOPIC`` (with
  ``--bootstrap``) runs just these rounds on a log filled before.
JSON to bench/results/many_groups.json. Not part of the test suite: timings drift on shared
machines, which is why every figure stands beside its raw one.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from gc_pauses import pause_figures, read_pauses
from large_group_bench import HB_KEY, HB_VERSION, Connection, cpu_seconds
from loop_stalls import read_stalls
from rich.progress import Progress
from runtime_bench import ROOT, cluster, median_by, percentile, print_serve_tail, read_log_raw

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.coordinator.runtime.log import TAILER_SETTINGS, LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.local_broker import free_port
from groupcoord.records import RecordType, decode, encode

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


def fill_direct(bootstrap: str, log_topic: str, groups: int, per_group: int) -> dict[str, Any]:
    """Append every other group's commit records to the log, copies of the one the process wrote."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "many-bench-seed", **TAILER_SETTINGS})
    reader.assign([TopicPartition(log_topic, 0, 0)])
    # The seed commit's record of each partition, with its headers: one commit's records are one
    # atomic batch, so each copy keeps the batch header of its partition's place in it.
    seeds: dict[int, tuple[Any, Any]] = {}
    while True:
        msg = reader.poll(5.0)
        if msg is None or msg.error() is not None:
            break
        record = decode(msg.key(), msg.value())
        if record.type == RecordType.OFFSET_COMMIT:
            seeds[record.key.partition] = (record, msg.headers())
    reader.close()
    assert len(seeds) == per_group, "the seed commit is not in the log"
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    start = time.perf_counter()
    written = 0
    with Progress() as progress:
        task = progress.add_task("appending", total=groups)
        for i in range(1, groups):
            for p in range(per_group):
                record, headers = seeds[p]
                key, value = encode(
                    dataclasses.replace(
                        record,
                        key=dataclasses.replace(record.key, group=group_name(i), partition=p),
                        value=dataclasses.replace(record.value, offset=i + p),
                    )
                )
                while True:
                    try:
                        producer.produce(log_topic, value, key, partition=0, headers=headers)
                        break
                    except BufferError:
                        producer.poll(0.1)
                written += 1
            if i % 1000 == 0:
                producer.poll(0)
                progress.update(task, completed=i)
        assert producer.flush(120) == 0
    seconds = time.perf_counter() - start
    return {"appended_records": written, "seconds": seconds, "records_per_s": written / seconds}


def start_serve(
    bootstrap: str,
    log_topic: str,
    port: int,
    connections: int,
    log: Any,
    tree: Path = ROOT,
    gc_log: Path | None = None,
    metrics_port: int | None = None,
    stall_log: Path | None = None,
) -> subprocess.Popen[str]:
    """``groupcoord serve`` of the code in ``tree`` (a checkout's root; this one by default),
    every collector pause logged to ``gc_log`` (``bench/gc_pauses.py``) when given, and every
    event-loop turn of 10 ms or more to ``stall_log`` (``bench/loop_stalls.py``) if given too."""
    env = {
        **os.environ,
        "GROUPCOORD_GATEWAY__MAX_CONNECTIONS": str(connections + 100),
        "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
    }
    if metrics_port is not None:
        env["GROUPCOORD_METRICS_LISTEN"] = f"127.0.0.1:{metrics_port}"
    runner = ["-m"] if gc_log is None else [str(ROOT / "bench" / "gc_pauses.py"), str(gc_log)]
    if gc_log is not None and stall_log is not None:
        runner += ["--stalls", str(stall_log)]
    serve = subprocess.Popen(
        [sys.executable, *runner, "groupcoord.cli.main", "serve", "-b", bootstrap, "--listen", f"127.0.0.1:{port}",
         "--log-topic", log_topic, "--partitions", "1"],
        stdout=subprocess.PIPE, stderr=log, text=True, cwd=tree, env=env,
    )  # fmt: skip
    assert serve.stdout is not None and serve.stdout.readline().startswith("listening on")
    return serve


async def wait_served(address: tuple[str, int], timeout: float, known_group: str | None = None) -> float:
    """Seconds until the process serves: ListGroups answers without error and, when the log holds
    groups, ``known_group`` is described as loaded. A process that owns no shard yet lists nothing
    without an error, so a listing alone returned before the load had even begun."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        conn = await Connection.open(address)
        try:
            listed = await conn.call(LIST_KEY, LIST_VERSION, ListGroupsRequest(states_filter=["Dead"]))
            assert isinstance(listed, ListGroupsResponse)
            served = listed.error_code == 0
            if served and known_group is not None:
                described = await conn.call(DESCRIBE_KEY, DESCRIBE_VERSION, DescribeGroupsRequest(groups=[known_group]))
                assert isinstance(described, DescribeGroupsResponse)
                (group,) = described.groups
                served = group.error_code == 0 and group.group_state != "Dead"
        finally:
            conn.close()
        if served:
            return time.perf_counter() - start
        await asyncio.sleep(0.1)
    raise TimeoutError("the shard did not load")


class Prober:
    """One KIP-848 member of its own group, heartbeating every 100 ms, recording each latency."""

    def __init__(self, address: tuple[str, int], topic: str) -> None:
        self.address, self.topic = address, topic
        self.samples: list[tuple[float, float]] = []  # (wall-clock send time, latency ms)
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
                sent, start = time.time(), time.perf_counter()
                response = await conn.call(HB_KEY, HB_VERSION, body)
                self.samples.append((sent, (time.perf_counter() - start) * 1000))
                assert isinstance(response, ConsumerGroupHeartbeatResponse)
                if response.error_code == 0:
                    if epoch == 0:
                        print("joined", flush=True)
                    epoch = response.member_epoch
                await asyncio.sleep(0.02)
        finally:
            conn.close()


async def child_probe(host: str, port: int, topic: str) -> list[tuple[float, float]]:
    """The prober in a process of its own (so that decoding large admin answers in the bench's
    process never delays it), until its stdin closes."""
    prober = Prober((host, port), topic)
    probing = asyncio.create_task(prober.run())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    prober.stop = True
    await probing
    return prober.samples


def latency_figures(samples: list[tuple[float, float]], start: float, end: float) -> dict[str, float]:
    """Heartbeats sent in [start, end) or still waiting for their answer at ``start``."""
    taken = [ms for sent, ms in samples if start <= sent < end or sent < start < sent + ms / 1000]
    if not taken:
        return {"heartbeats": 0}
    return {
        "heartbeats": len(taken),
        "p50_ms": percentile(taken, 0.5),
        "p99_ms": percentile(taken, 0.99),
        "max_ms": max(taken),
    }


def scrape(port: int) -> tuple[float, float, float]:
    """One GET of ``/metrics``: (wall-clock start, seconds, the shard gauges' own collect seconds)."""
    start, clock = time.time(), time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as answer:
        text = answer.read().decode()
    seconds = time.perf_counter() - clock
    collect = [
        line.split()[-1] for line in text.splitlines() if line.startswith("groupcoord_shard_metrics_collect_seconds ")
    ]
    assert collect, "the scrape has no shard gauges"
    return start, seconds, float(collect[0])


async def queries(
    address: tuple[str, int], topic: str, groups: int, quiet_seconds: float, metrics_port: int | None, scrapes: int
) -> dict[str, Any]:
    probe = subprocess.Popen(
        [sys.executable, __file__, "--child-probe", address[0], str(address[1]), topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert probe.stdin is not None and probe.stdout is not None
    assert probe.stdout.readline().strip() == "joined"
    quiet_start = time.time()
    await asyncio.sleep(quiet_seconds)
    admin = await Connection.open(address)
    list_start = time.time()
    listed = await admin.call(LIST_KEY, LIST_VERSION, ListGroupsRequest())
    list_end = time.time()
    assert isinstance(listed, ListGroupsResponse) and listed.error_code == 0, listed
    names = sorted(g.group_id for g in listed.groups if g.group_id.startswith("many-0"))
    assert len(names) == groups, (len(names), groups)
    described = 0
    describe_seconds = 0.0
    describing: list[tuple[float, float]] = []
    for at in range(0, len(names), DESCRIBE_CHUNK):
        request = DescribeGroupsRequest(groups=names[at : at + DESCRIBE_CHUNK])
        start = time.time()
        response = await admin.call(DESCRIBE_KEY, DESCRIBE_VERSION, request)
        describing.append((start, time.time()))
        describe_seconds += describing[-1][1] - start
        assert isinstance(response, DescribeGroupsResponse)
        described += sum(1 for g in response.groups if g.error_code == 0)
    admin.close()
    # /metrics scraped while the heartbeats go on (a Prometheus scrape every few seconds).
    scraped: list[tuple[float, float, float]] = []
    for _ in range(scrapes if metrics_port is not None else 0):
        await asyncio.sleep(0.3)
        scraped.append(await asyncio.to_thread(scrape, metrics_port or 0))
    scraping = [(a, a + d) for a, d, _ in scraped]
    await asyncio.sleep(0.5)
    end = time.time()
    probe.stdin.close()
    samples = [tuple(s) for s in json.loads(probe.stdout.read())]
    probe.wait(30)
    during_describe = [s for s in samples if any(a <= s[0] < b or s[0] < a < s[0] + s[1] / 1000 for a, b in describing)]
    return {
        "list_groups_seconds": list_end - list_start,
        "list_groups_listed": len(listed.groups),
        "describe_groups_seconds": describe_seconds,
        "describe_groups_described": described,
        "describe_groups_requests": len(describing),
        "heartbeat_quiet": latency_figures(samples, quiet_start, list_start),
        "heartbeat_during_list": latency_figures(samples, list_start, list_end),
        "heartbeat_during_describe": latency_figures(during_describe, 0, float("inf")),
        "scrapes": [{"seconds": seconds, "shard_gauges_seconds": collect} for _, seconds, collect in scraped],
        "heartbeat_during_scrapes": latency_figures(
            [s for s in samples if any(a <= s[0] < a + d or s[0] < a < s[0] + s[1] / 1000 for a, d, _ in scraped)],
            0,
            float("inf"),
        ),
        "window": [quiet_start, end],
        "phases": {
            "quiet": [(quiet_start, list_start)],
            "list": [(list_start, list_end)],
            "describe": describing,
            "scrapes": scraping,
        },
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
    cpu = time.process_time()
    start = time.perf_counter()
    standby.load_shard(0)
    (report,) = await standby.wait_loaded(900)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    gc.collect()
    after = rss_bytes()
    await standby.close()
    return {
        "records": report.records,
        "seconds": seconds,
        "records_per_s": report.records / seconds,
        "cpu_seconds": cpu,
        "rss_before_bytes": before,
        "rss_after_bytes": after,
    }


def child_raw(bootstrap: str, log_topic: str) -> dict[str, Any]:
    """The bare read of the log in this (fresh) process, its client connected and idle for a
    second first, as the standby's is in ``child_load``."""
    return read_log_raw({"bootstrap.servers": bootstrap}, log_topic, settle_s=1.0)


def run_child(kind: str, bootstrap: str, log_topic: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, f"--child-{kind}", bootstrap, log_topic],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=1800,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def reload_memory(bootstrap: str, log_topic: str, tree: Path) -> dict[str, Any]:
    """``bench/reload_memory.py`` in a fresh process running the code of ``tree``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "reload_memory.py"), bootstrap, log_topic],
        capture_output=True, text=True, check=True, cwd=tree, timeout=1800, env=env,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def load_rounds(bootstrap: str, log_topic: str, rounds: int) -> list[dict[str, Any]]:
    """``rounds`` pairs of a failover load and a bare read of the same log, each in a fresh
    process, the bare read first in even rounds and second in odd ones."""
    out = []
    with Progress() as progress:
        task = progress.add_task("loading", total=rounds)
        for i in range(rounds):
            order = ("raw", "load") if i % 2 == 0 else ("load", "raw")
            runs = {kind: run_child(kind, bootstrap, log_topic) for kind in order}
            raw, load = runs["raw"], runs["load"]
            out.append(
                {
                    "order": "-".join(order),
                    "raw_read": raw,
                    "failover_load": load,
                    "load_over_raw_read": load["records_per_s"] / raw["records_per_s"],
                    # Records per CPU second, loaded over read.
                    "load_over_raw_read_cpu": (load["records"] / load["cpu_seconds"])
                    / (raw["records"] / raw["cpu_seconds"]),
                }
            )
            progress.update(task, advance=1)
    return out


def load_figures(rounds: list[dict[str, Any]], groups: int, offsets: int) -> dict[str, Any]:
    ratios = [r["load_over_raw_read"] for r in rounds]
    loads = [r["failover_load"] for r in rounds]
    raws = [r["raw_read"] for r in rounds]
    grown = statistics.median(run["rss_after_bytes"] - run["rss_before_bytes"] for run in loads)
    return {
        "load": {
            "records": median_by(loads, "records_per_s")["records"],
            "load_records_per_s": median_by(loads, "records_per_s")["records_per_s"],
            "raw_read_of_the_same_log": median_by(raws, "records_per_s"),
            # The median of the rounds' ratios (each load beside the bare read of its own round).
            "load_over_raw_read": statistics.median(ratios),
            "load_over_raw_read_min_max": [min(ratios), max(ratios)],
            "load_over_raw_read_cpu": statistics.median(r["load_over_raw_read_cpu"] for r in rounds),
            "rounds": rounds,
        },
        "memory": {
            "loaded_shard_rss_growth_bytes": grown,
            "bytes_per_committed_offset": grown / offsets,
            "bytes_per_group": grown / groups,
        },
    }


def stall_sites(stall: dict[str, Any]) -> list[str]:
    """The distinct places a stall's samples found the loop thread in, each as its innermost
    frames (the innermost last), most frequent first."""
    counts: dict[str, int] = {}
    for stack in stall["stacks"]:
        site = " > ".join(stack[-6:])
        counts[site] = counts.get(site, 0) + 1
    return [f"{n}x {site}" for site, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def stall_figures(stalls: list[dict[str, Any]], windows: list[tuple[float, float]]) -> dict[str, Any]:
    """The event-loop turns of 10 ms or more that overlap any of ``windows``."""
    inside = [s for s in stalls if any(s["start"] < b and a < s["start"] + s["ms"] / 1000 for a, b in windows)]
    return {
        "stalls": len(inside),
        "max_ms": max((s["ms"] for s in inside), default=0.0),
        # The loop thread's own CPU time in its longest turns (a turn long in wall time but short
        # in CPU time is the machine's, not the code's).
        "max_cpu_ms": max((s["cpu_ms"] for s in inside), default=0.0),
        "total_ms": sum(s["ms"] for s in inside),
        # The loop thread's CPU time in all its turns of 10 ms or more.
        "cpu_total_ms": sum(s["cpu_ms"] for s in inside),
        # Turns in which the loop thread itself ran 10 ms or more.
        "turns_over_10ms_cpu": sum(1 for s in inside if s["cpu_ms"] >= 10),
        # Turns of 15 ms or more, or of 10 ms or more of the loop thread's CPU: [seconds after
        # the phase began, ms, the loop thread's CPU ms, the process's CPU ms,
        # where the samples found the loop]
        "over_15ms": [
            [
                round(s["start"] - windows[0][0], 3),
                s["ms"],
                s["cpu_ms"],
                s.get("process_cpu_ms"),
                stall_sites(s)[:3],
            ]
            for s in inside
            if s["ms"] >= 15 or s["cpu_ms"] >= 10
        ],
    }


def tree_round(
    bootstrap: str, log_topic: str, topic: str, tree: Path, args: argparse.Namespace, rss_empty: int
) -> dict[str, Any]:
    """A fresh ``serve`` of ``tree`` loads the log; the query phase with its collector pauses
    logged, its RSS loaded and after the queries."""
    port, metrics_port = free_port(), free_port()
    address = ("127.0.0.1", port)
    fd, name = tempfile.mkstemp(suffix=".gc")
    os.close(fd)
    gc_log = Path(name)
    fd, name = tempfile.mkstemp(suffix=".stalls")
    os.close(fd)
    stall_log = Path(name)
    started = time.time()
    with tempfile.TemporaryFile() as log:
        serve = start_serve(bootstrap, log_topic, port, args.connections, log, tree, gc_log, metrics_port, stall_log)
        try:
            served_after = asyncio.run(wait_served(address, 1800, group_name(0)))
            time.sleep(1.0)  # what the load's end leaves (a first young collection) happens before the queries
            rss_loaded = rss_bytes(serve.pid)
            asked = asyncio.run(queries(address, topic, args.groups, args.quiet_seconds, metrics_port, args.scrapes))
            rss_after = rss_bytes(serve.pid)
        except BaseException:
            print_serve_tail(log)
            raise
        finally:
            serve.terminate()
            serve.wait(60)
    pauses = read_pauses(gc_log)
    gc_log.unlink()
    stalls = read_stalls(stall_log)
    stall_log.unlink()
    window_start, window_end = asked.pop("window")
    phases = asked.pop("phases")
    offsets = args.groups * args.offsets_per_group
    return {
        "served_after_seconds": served_after,
        **asked,
        "rss_loaded_bytes": rss_loaded,
        "rss_after_queries_bytes": rss_after,
        "rss_bytes_per_committed_offset": (rss_loaded - rss_empty) / offsets,
        "rss_bytes_per_group": (rss_loaded - rss_empty) / args.groups,
        "gc_during_queries": pause_figures(pauses, window_start, window_end),
        "gc_from_start": pause_figures(pauses, started, window_end),
        # The serve process's event loop: its turns of 10 ms or more in each phase.
        "loop_stalls": {phase: stall_figures(stalls, windows) for phase, windows in phases.items() if windows},
    }


def tree_rounds(
    bootstrap: str, log_topic: str, topic: str, args: argparse.Namespace, rss_empty: int
) -> dict[str, list[dict[str, Any]]]:
    """``--query-rounds`` rounds of ``tree_round`` for each of ``--trees``, the order of the
    trees reversed from one round to the next."""
    trees = [(name, Path(path)) for name, path in (t.split("=", 1) for t in args.trees)]
    out: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
    for i in range(args.query_rounds):
        for name, tree in trees if i % 2 == 0 else trees[::-1]:
            out[name].append(tree_round(bootstrap, log_topic, topic, tree, args, rss_empty))
            done = out[name][-1]
            print(
                f"round {i} {name}: hb p99 list {done['heartbeat_during_list'].get('p99_ms')}"
                f" describe {done['heartbeat_during_describe'].get('p99_ms')}"
                f" scrapes {done['heartbeat_during_scrapes'].get('p99_ms')}"
                f" stall max list {done['loop_stalls']['list']['max_ms']:.1f}"
                f" (cpu {done['loop_stalls']['list']['max_cpu_ms']:.1f})"
                f" describe {done['loop_stalls']['describe']['max_ms']:.1f}"
                f" (cpu {done['loop_stalls']['describe']['max_cpu_ms']:.1f}) ms"
                f" gc max {done['gc_during_queries']['max_ms']:.1f} ms",
                flush=True,
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--offsets-per-group", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--fill", choices=("direct", "wire"), default="direct")
    parser.add_argument("--quiet-seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument(
        "--trees",
        nargs="+",
        default=[f"this={ROOT}"],
        metavar="NAME=PATH",
        help="checkouts whose serve runs the query phase, alternating (e.g. main=/tmp/main this=.)",
    )
    parser.add_argument("--query-rounds", type=int, default=1, help="query phases per tree")
    parser.add_argument("--scrapes", type=int, default=5, help="/metrics scrapes in each query phase")
    parser.add_argument("--reload-check", action="store_true", help="RSS across 3 reloads and an unload, per tree")
    parser.add_argument("--only-load", metavar="LOG_TOPIC", default=None, help="only the load rounds, on this log")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "many_groups.json"))
    parser.add_argument("--child-load", nargs=2, metavar=("BOOTSTRAP", "LOG_TOPIC"), help=argparse.SUPPRESS)
    parser.add_argument("--child-raw", nargs=2, metavar=("BOOTSTRAP", "LOG_TOPIC"), help=argparse.SUPPRESS)
    parser.add_argument("--child-probe", nargs=3, metavar=("HOST", "PORT", "TOPIC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_probe:
        host, port, topic = args.child_probe
        print(json.dumps(asyncio.run(child_probe(host, int(port), topic))))
        return
    if args.child_load:
        print(json.dumps(asyncio.run(child_load(*args.child_load))))
        return
    if args.child_raw:
        print(json.dumps(child_raw(*args.child_raw)))
        return
    offsets = args.groups * args.offsets_per_group
    params = {
        k: v
        for k, v in vars(args).items()
        if k not in ("out", "bootstrap", "child_load", "child_raw", "child_probe", "trees")
    }
    if args.only_load:
        if args.bootstrap is None:
            parser.error("--only-load needs --bootstrap (the cluster holding the log)")
        out = {"benchmark": "many_groups", "broker": args.bootstrap, "params": params}
        out.update(load_figures(load_rounds(args.bootstrap, args.only_load, args.rounds), args.groups, offsets))
        print(json.dumps(out, indent=2))
        return
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"many-data-{uuid.uuid4().hex[:8]}"
        log_topic = f"many-log-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.offsets_per_group, 1)])[topic].result(120)
        port = free_port()
        address = ("127.0.0.1", port)
        serve_log = tempfile.TemporaryFile()  # noqa: SIM115 (closed once serve has stopped)
        serve = start_serve(bootstrap, log_topic, port, args.connections, serve_log)
        try:
            asyncio.run(wait_served(address, 120))
            serve_rss_empty = rss_bytes(serve.pid)
            cpu0 = cpu_seconds(serve.pid)
            filled = asyncio.run(
                fill(
                    address,
                    topic,
                    1 if args.fill == "direct" else args.groups,
                    args.offsets_per_group,
                    args.connections,
                )
            )
            filled["serve_cpu_seconds_per_offset"] = (cpu_seconds(serve.pid) - cpu0) / filled["offsets"]
            serve.terminate()
            serve.wait(60)
            if args.fill == "direct":
                filled["direct"] = fill_direct(bootstrap, log_topic, args.groups, args.offsets_per_group)
        except BaseException:
            print_serve_tail(serve_log)
            raise
        finally:
            serve.terminate()
            serve.wait(60)
            serve_log.close()
        by_tree = tree_rounds(bootstrap, log_topic, topic, args, serve_rss_empty)
        reloads = (
            {
                name: reload_memory(bootstrap, log_topic, Path(path))
                for name, path in (t.split("=", 1) for t in args.trees)
            }
            if args.reload_check
            else None
        )
        rounds = load_rounds(bootstrap, log_topic, args.rounds)
    figures = load_figures(rounds, args.groups, offsets) if rounds else {"load": None, "memory": {}}
    out = {
        "benchmark": "many_groups",
        "broker": label,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": params,
        "fill": filled,
        # Each tree's query phases (a fresh serve loading the log each), in round order.
        "queries_by_tree": by_tree,
        "memory_across_reloads_by_tree": reloads,
        "load": figures["load"],
        "memory": {
            **figures["memory"],
            "serve_rss_empty_bytes": serve_rss_empty,
            "serve_rss_with_every_group_bytes": {
                name: [r["rss_loaded_bytes"] for r in runs] for name, runs in by_tree.items()
            },
        },
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
