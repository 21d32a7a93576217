"""Committed partition offsets per second for one coordinator, beside the raw broker.

    python bench/offsets_bench.py [--seconds 10] [--bootstrap HOST:PORT] [--event-loop auto|uvloop|asyncio]
        [--partitions 1 100] [--out PATH]

For single-partition and 100-partition OffsetCommit requests: throughput (partition offsets/s)
with 64 requests in flight, and p50/p99 latency of one request at a time. The raw broker's
produce -> consume round trip is measured in the same run, and so is the raw equivalent of each
commit shape (``raw.commit_equivalent``): what the records behind the commits cost the cluster
alone. A commit of N partitions is N records appended in one batch (idempotent, acks=all) and
acknowledged once read back; the raw figure is the same done with plain clients: 64 "requests"
in flight, each N records of the same size produced together to one partition and complete once a
tailing consumer has read the last of them back; and one at a time for the latency. The
coordinator runs on the event loop ``serve`` would (``--event-loop``, as the setting; ``auto``:
uvloop when installed); each figure carries ``x_raw``, its throughput over the raw equivalent's,
and ``serve_cpu_us_per_offset``: the CPU time this process spent while the commits were in flight
(``process``: every thread, the Kafka clients' included; ``loop_thread``: the event loop's, which
holds the handlers, the encoding and the read-back) over the offsets acknowledged. Unlike
throughput, it hardly moves with what else runs on the machine, so it is the figure to compare
two versions by (interleaved runs). The requests are made on the loop thread too (about 1 us an
offset). JSON to bench/results/offsets.json (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from runtime_bench import ROOT, cluster, percentile, raw_figures, write_results

from groupcoord.coordinator.gateway.event_loop import EVENT_LOOPS, loop_factory
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.runtime.log import LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.service.service import GroupCoordinatorService

# OffsetCommit v9, as a current client sends it.
COMMIT_CONTEXT = RequestContext(api_version=9)
IN_FLIGHT = 64
# About the sizes of an encoded OffsetCommit record's key and value.
RAW_KEY = b"k" * 24
RAW_VALUE = b"v" * 60


def raw_commit_equivalent(bootstrap: str, partitions: int, seconds: float) -> dict[str, Any]:
    """The records behind ``partitions``-partition commits, produced and read back by plain clients."""
    topic = f"bench-rawcommit-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 0})
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-raw", "fetch.wait.max.ms": 5, "fetch.min.bytes": 1}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    next_id = 0
    waiting: set[bytes] = set()

    def send() -> bytes:
        # One "request": its records go out together; the last one's value says which request.
        nonlocal next_id
        next_id += 1
        marker = b"%d" % next_id
        for p in range(partitions):
            while True:
                try:
                    producer.produce(
                        topic, key=RAW_KEY, value=marker if p == partitions - 1 else RAW_VALUE, partition=0
                    )
                    break
                except BufferError:
                    producer.poll(0.001)
        producer.poll(0)
        waiting.add(marker)
        return marker

    def read_back(until: set[bytes], timeout: float) -> set[bytes | None]:
        done: set[bytes | None] = set()
        # poll returns as soon as one record is there; consume(..., 0) then takes what else is.
        first = consumer.poll(timeout)
        for msg in [first, *consumer.consume(10_000, 0)] if first is not None else []:
            if msg.error() is None and msg.value() in until:
                done.add(msg.value())
        producer.poll(0)
        return done

    # One at a time first (it also makes sure the consumer is at the end of the partition).
    latencies = []
    for _ in range(200):
        t0 = time.perf_counter()
        marker = send()
        while marker in waiting:
            waiting -= read_back(waiting, 0.05)
        latencies.append((time.perf_counter() - t0) * 1000)
    records = 0
    start = time.perf_counter()
    deadline = start + seconds
    for _ in range(IN_FLIGHT):
        send()
    while waiting:
        done = read_back(waiting, 0.005)
        waiting -= done
        records += len(done) * partitions
        if time.perf_counter() < deadline:
            for _ in done:
                send()
    elapsed = time.perf_counter() - start
    producer.flush(10)
    consumer.close()
    return {
        "records_per_request": partitions,
        "records_per_s": records / elapsed,
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
    }


def request(i: int, partitions: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=f"bench-{i % 50}",
        topics=[
            OffsetCommitRequestTopic(
                name="t",
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=i) for p in range(partitions)
                ],
            )
        ],
    )


async def measure(service: GroupCoordinatorService, partitions: int, seconds: float) -> dict[str, Any]:
    latencies = []
    for i in range(200):
        t0 = time.perf_counter()
        await service.commit_offsets(request(i, partitions), COMMIT_CONTEXT)
        latencies.append((time.perf_counter() - t0) * 1000)
    done = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    cpu_start, loop_cpu_start = time.process_time(), time.thread_time()
    i = 0

    async def worker() -> None:
        nonlocal done, i
        while time.perf_counter() < deadline:
            i += 1
            await service.commit_offsets(request(i, partitions), COMMIT_CONTEXT)
            done += partitions

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    elapsed = time.perf_counter() - start
    # This coroutine runs on the loop thread: thread_time() is that thread's CPU.
    cpu, loop_cpu = time.process_time() - cpu_start, time.thread_time() - loop_cpu_start
    return {
        "partitions_per_request": partitions,
        "offsets_per_s": done / elapsed,
        "requests_per_s": done / partitions / elapsed,
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
        "serve_cpu_us_per_offset": {"process": cpu / max(done, 1) * 1e6, "loop_thread": loop_cpu / max(done, 1) * 1e6},
    }


async def ours(bootstrap: str, seconds: float, shapes: list[int]) -> list[dict[str, Any]]:
    handlers = GroupCoordinatorShard()
    runtime: Any = CoordinatorRuntime(
        {"bootstrap.servers": bootstrap}, LogTopicSpec(name=f"bench-{uuid.uuid4().hex[:8]}", partitions=1), handlers
    )
    await runtime.start()
    await runtime.wait_loaded(60)
    service = GroupCoordinatorService(runtime, handlers)
    try:
        return [await measure(service, partitions, seconds) for partitions in shapes]
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--event-loop", choices=EVENT_LOOPS, default="auto")
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 100], help="the commit shapes measured")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "offsets.json"))
    args = parser.parse_args()
    factory = loop_factory(args.event_loop)
    with cluster(args.bootstrap) as (bootstrap, label):
        raw = raw_figures(bootstrap, 5000, 300)
        raw["commit_equivalent"] = [raw_commit_equivalent(bootstrap, n, args.seconds) for n in args.partitions]
        with asyncio.Runner(loop_factory=factory) as runner:
            result = runner.run(ours(bootstrap, args.seconds, args.partitions))
    for figure, equivalent in zip(result, raw["commit_equivalent"], strict=True):
        figure["event_loop"] = "uvloop" if factory is not None else "asyncio"
        figure["x_raw"] = figure["offsets_per_s"] / equivalent["records_per_s"]
    write_results(args.out, label, raw, result)


if __name__ == "__main__":
    main()
