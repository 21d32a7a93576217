"""Scale past one process: 100-partition commits through 1, 2 and 3 ``groupcoord serve`` processes
sharing one log topic, beside the raw cluster of the same run (issue 26, item 6).

    python bench/scale_bench.py [--processes 1,2,3] [--groups 24] [--shards 12] [--seconds 10] [--bootstrap HOST:PORT]

For each process count, a fresh log topic (``--shards`` partitions) and that many serve processes
in one placement group (placement spreads the shards); once every group's commit is acknowledged,
``--lone-commits`` commits one at a time (``latency_one_at_a_time_ms``: what offsets_bench reports
as its latency), then ``--groups`` simple groups (generation -1, as tools and ``assign()``-ed
consumers commit) each send 100-partition OffsetCommits, ``--in-flight`` per group, each lane on
its own connection straight to the process that coordinates the group (FindCoordinator, as a
client does), for ``--seconds``. Every lane always has a request waiting, so ``latency_ms`` under
load is mostly queueing: about ``in_flight`` over the requests answered per second (Little's law),
not the time one commit takes. The requests are encoded before the clock starts, and an answer
is checked against the bytes of the answer acknowledging every partition (decoded only when it
differs), as the load generator runs on the cores it measures (``client_cpu_s`` is what it still
spent). Reported: offsets/s acknowledged over all processes, request latency p50/p99, and the CPU
seconds each serve process (and each of its threads: ``main`` is the event loop, which holds the
gateway, the group logic and the read-back) and the broker spent (read from /proc), so that the
cost of an offset in CPU can be added up for a sizing: the figure that carries over to a machine
with more cores than this one. The raw figure beside it is the cluster's own: the same records
(100 produced together, idempotent, acks=all, read back by a tailing consumer) by plain clients,
64 in flight, in the same run.
JSON to bench/results/scale.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from large_group_bench import Connection, cpu_seconds, thread_cpu
from offsets_bench import raw_commit_equivalent
from runtime_bench import ROOT, percentile

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request, encode_response
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.local_broker import LocalBroker, free_port

COMMIT_KEY, COMMIT_VERSION = 8, 9
FIND_KEY, FIND_VERSION = 10, 4
PARTITIONS_PER_COMMIT = 100
FRAMES_PER_LANE = 4
MOVING = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


@contextlib.contextmanager
def serves(bootstrap: str, log_topic: str, count: int, shards: int, logs: Path) -> Iterator[list[tuple[int, int]]]:
    """``count`` serve processes on one log topic: [(pid, port)]."""
    procs: list[tuple[subprocess.Popen[str], int]] = []
    env = {
        **os.environ,
        "GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": "6000",
        "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": "500",
    }
    try:
        for i in range(count):
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "groupcoord.cli.main", "serve", "-b", bootstrap,
                 "--listen", f"127.0.0.1:{port}", "--log-topic", log_topic, "--partitions", str(shards)],
                stdout=subprocess.PIPE, stderr=open(logs / f"serve-{count}-{i}.log", "w"),  # noqa: SIM115
                text=True, cwd=ROOT, env=env,
            )  # fmt: skip
            assert proc.stdout is not None and proc.stdout.readline().startswith("listening on")
            procs.append((proc, port))
        yield [(p.pid, port) for p, port in procs]
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def commit(group: str, topic: str, base: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=base + p)
                    for p in range(PARTITIONS_PER_COMMIT)
                ],
            )
        ],
    )


async def coordinator_of(ports: list[int], group: str) -> int:
    conn = await Connection.open(("127.0.0.1", ports[0]))
    try:
        found = await conn.call(FIND_KEY, FIND_VERSION, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
    finally:
        conn.close()
    assert isinstance(found, FindCoordinatorResponse)
    answer = found.coordinators[0]
    if answer.error_code:
        raise LookupError(answer.error_code)
    return answer.port


async def settle(ports: list[int], groups: list[str], topic: str, timeout: float) -> dict[str, int]:
    """Each group's coordinator port, once a commit of every group was acknowledged there."""
    deadline = time.monotonic() + timeout
    owners: dict[str, int] = {}
    for group in groups:
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group} not served")
            try:
                port = await coordinator_of(ports, group)
                conn = await Connection.open(("127.0.0.1", port))
                try:
                    answer = await conn.call(COMMIT_KEY, COMMIT_VERSION, commit(group, topic, 0))
                finally:
                    conn.close()
            except (LookupError, OSError):
                await asyncio.sleep(0.2)
                continue
            assert isinstance(answer, OffsetCommitResponse)
            codes = {p.error_code for t in answer.topics for p in t.partitions}
            if codes == {0}:
                owners[group] = port
                break
            assert codes <= MOVING, codes
            await asyncio.sleep(0.2)
    return owners


def frames(group: str, topic: str, lane: int) -> list[bytes]:
    """A lane's commits, encoded before the clock starts: encoding a 100-partition request in
    Python costs the client about 1.6 us an offset, CPU the serve processes on the same cores
    then lack. A few bases, so consecutive commits of a lane move the offsets."""
    return [
        encode_request(RequestHeader(COMMIT_KEY, COMMIT_VERSION, 0, "bench-scale"), commit(group, topic, base))
        for base in (lane * 10_000_000 + k * PARTITIONS_PER_COMMIT for k in range(FRAMES_PER_LANE))
    ]


def acknowledging_answer(topic: str) -> bytes:
    """The answer to a lane's commit that acknowledges every partition, after its correlation
    id: an answer of these bytes needs no decoding to be counted."""
    answer = OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=topic,
                partitions=[OffsetCommitResponsePartition(partition_index=p) for p in range(PARTITIONS_PER_COMMIT)],
            )
        ]
    )
    return encode_response(COMMIT_KEY, COMMIT_VERSION, 0, answer)[8:]


def acknowledged(answer: Message) -> bool:
    assert isinstance(answer, OffsetCommitResponse)
    return all(p.error_code == 0 for t in answer.topics for p in t.partitions)


async def one_at_a_time(owners: dict[str, int], topic: str, count: int) -> dict[str, float]:
    """Latency of a lone commit (nothing else in flight): the figure offsets_bench reports as its
    latency, unlike ``load``'s, which at ``--in-flight`` per group is mostly queueing."""
    conns = {port: await Connection.open(("127.0.0.1", port)) for port in set(owners.values())}
    groups = list(owners.items())
    latencies = []
    try:
        for i in range(count):
            group, port = groups[i % len(groups)]
            t0 = time.perf_counter()
            assert acknowledged(await conns[port].call(COMMIT_KEY, COMMIT_VERSION, commit(group, topic, i)))
            latencies.append((time.perf_counter() - t0) * 1000)
    finally:
        for conn in conns.values():
            conn.close()
    return {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)}


async def load(owners: dict[str, int], topic: str, in_flight: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    offsets = 0
    errors = 0
    lanes = [(group, port, lane) for group, port in owners.items() for lane in range(in_flight)]
    encoded = {(group, lane): frames(group, topic, lane) for group, _, lane in lanes}
    conns = [await Connection.open(("127.0.0.1", port)) for _, port, _ in lanes]
    expected = acknowledging_answer(topic)
    deadline = time.perf_counter() + seconds

    async def worker(conn: Connection, ring: list[bytes]) -> None:
        nonlocal offsets, errors
        sent = 0
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            payload = await conn.call_raw(ring[sent % len(ring)])
            sent += 1
            if payload[4:] == expected or acknowledged(decode_response(COMMIT_KEY, COMMIT_VERSION, payload)[1]):
                offsets += PARTITIONS_PER_COMMIT
                latencies.append((time.perf_counter() - t0) * 1000)
            else:
                errors += 1

    start = time.perf_counter()
    try:
        await asyncio.gather(
            *(worker(conn, encoded[group, lane]) for conn, (group, _, lane) in zip(conns, lanes, strict=True))
        )
    finally:
        for conn in conns:
            conn.close()
    elapsed = time.perf_counter() - start
    return {
        "offsets_per_s": offsets / elapsed,
        "in_flight": len(lanes),
        # Little's law: with every lane always waiting, latency ~ in flight / requests per second.
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
        "refused_requests": errors,
        "seconds": elapsed,
    }


def run(bootstrap: str, broker_pid: int | None, count: int, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    log_topic = f"bench-scale-{count}-{uuid.uuid4().hex[:6]}"
    groups = [f"scale-{count}-{i}" for i in range(args.groups)]
    with serves(bootstrap, log_topic, count, args.shards, logs) as procs:
        ports = [port for _, port in procs]
        owners = asyncio.run(settle(ports, groups, args.topic, 120))
        load_before = os.getloadavg()[0]
        lone = asyncio.run(one_at_a_time(owners, args.topic, args.lone_commits))
        watched = [pid for pid, _ in procs] + ([broker_pid] if broker_pid is not None else [])
        before = {pid: cpu_seconds(pid) for pid in watched}
        threads_before = {pid: thread_cpu(pid) for pid, _ in procs}
        client_before = time.process_time()
        figures = asyncio.run(load(owners, args.topic, args.in_flight, args.seconds))
        used = {pid: cpu_seconds(pid) - t for pid, t in before.items()}
        client_cpu = time.process_time() - client_before
        load_after = os.getloadavg()[0]
        threads_used = [
            {name: round(t - threads_before[pid].get(name, 0.0), 2) for name, t in thread_cpu(pid).items()}
            for pid, _ in procs
        ]
    serve_cpu = [used[pid] for pid, _ in procs]
    offsets = figures["offsets_per_s"] * figures["seconds"]
    by_port = {port: sum(1 for p in owners.values() if p == port) for port in ports}
    return {
        "processes": count,
        **figures,
        # The machine's 1-minute load average around the step: on shared cores the throughput is
        # how much CPU the processes got; the CPU per offset moves less.
        "load_average": [round(load_before, 2), round(load_after, 2)],
        "groups_per_process": sorted(by_port.values(), reverse=True),
        "latency_one_at_a_time_ms": lone,
        "serve_cpu_s": serve_cpu,
        "serve_thread_cpu_s": threads_used,
        "broker_cpu_s": used[broker_pid] if broker_pid is not None else None,
        # The load generator shares the machine's cores: its CPU is what the serve processes lacked.
        "client_cpu_s": client_cpu,
        "client_cpu_us_per_offset": client_cpu / offsets * 1e6 if offsets else None,
        "serve_cpu_us_per_offset": sum(serve_cpu) / offsets * 1e6 if offsets else None,
        "broker_cpu_us_per_offset": used[broker_pid] / offsets * 1e6 if offsets and broker_pid is not None else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", default="1,2,3")
    parser.add_argument("--groups", type=int, default=24)
    parser.add_argument("--shards", type=int, default=12)
    parser.add_argument("--in-flight", type=int, default=3, help="requests in flight per group")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--lone-commits", type=int, default=200, help="commits one at a time, for the latency")
    parser.add_argument("--bootstrap", default=None, help="a cluster to use instead of a local broker")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale.json"))
    args = parser.parse_args()
    counts = [int(x) for x in args.processes.split(",")]
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        if args.bootstrap is None:
            broker = stack.enter_context(LocalBroker(port=free_port()))
            assert broker.process is not None
            bootstrap, broker_pid, label = broker.bootstrap, broker.process.pid, "tansu (local)"
        else:  # a cluster elsewhere: its CPU is not ours to read
            bootstrap, broker_pid, label = args.bootstrap, None, args.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        args.topic = f"bench-scale-{uuid.uuid4().hex[:6]}"  # what the groups commit offsets of
        admin.create_topics([NewTopic(args.topic, PARTITIONS_PER_COMMIT, 1)])[args.topic].result()
        results = []
        raw = []
        for count in counts:
            # The raw figure beside each step, so drift over the run hits both alike.
            raw.append(raw_commit_equivalent(bootstrap, PARTITIONS_PER_COMMIT, args.seconds))
            step = run(bootstrap, broker_pid, count, args, Path(tmp))
            step["vs_raw"] = step["offsets_per_s"] / raw[-1]["records_per_s"]
            results.append(step)
            print(json.dumps(step), flush=True)
    out = {
        "broker": label,
        "cores": os.cpu_count(),
        "settings": vars(args),
        "raw": raw,
        "groupcoord": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
