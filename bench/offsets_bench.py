"""Committed partition offsets per second for one coordinator, beside the raw broker.

    python bench/offsets_bench.py [--seconds 10] [--bootstrap HOST:PORT]

For single-partition and 100-partition OffsetCommit requests: throughput (partition offsets/s)
with 64 requests in flight, and p50/p99 latency of one request at a time. The raw broker's
produce -> consume round trip is measured in the same run. JSON to bench/results/offsets.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from runtime_bench import ROOT, cluster, percentile, raw_figures, write_results

from coordinator.group_shard import GroupCoordinatorShard
from coordinator.groups.context import RequestContext
from coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from coordinator.runtime.log import LogTopicSpec
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.service.service import GroupCoordinatorService

# OffsetCommit v9, as a current client sends it.
COMMIT_CONTEXT = RequestContext(api_version=9)


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
    i = 0

    async def worker() -> None:
        nonlocal done, i
        while time.perf_counter() < deadline:
            i += 1
            await service.commit_offsets(request(i, partitions), COMMIT_CONTEXT)
            done += partitions

    await asyncio.gather(*(worker() for _ in range(64)))
    elapsed = time.perf_counter() - start
    return {
        "partitions_per_request": partitions,
        "offsets_per_s": done / elapsed,
        "requests_per_s": done / partitions / elapsed,
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
    }


async def ours(bootstrap: str, seconds: float) -> list[dict[str, Any]]:
    handlers = GroupCoordinatorShard()
    runtime: Any = CoordinatorRuntime(
        {"bootstrap.servers": bootstrap}, LogTopicSpec(name=f"bench-{uuid.uuid4().hex[:8]}", partitions=1), handlers
    )
    await runtime.start()
    await runtime.wait_loaded(60)
    service = GroupCoordinatorService(runtime, handlers)
    try:
        return [await measure(service, 1, seconds), await measure(service, 100, seconds)]
    finally:
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "offsets.json"))
    args = parser.parse_args()
    with cluster(args.bootstrap) as (bootstrap, label):
        raw = raw_figures(bootstrap, 5000, 300)
        result = asyncio.run(ours(bootstrap, args.seconds))
    write_results(args.out, label, raw, result)


if __name__ == "__main__":
    main()
