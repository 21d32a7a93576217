"""Reader relay benchmark: acknowledged-commit latency with the log reader through the relay vs direct.

    python bench/relay_bench.py [--rounds 3] [--writes 300] [--flood 3000] [--bootstrap HOST:PORT]

Same run, same broker, the modes interleaved round by round: a runtime whose log reader fetches
from the broker directly, and one whose reader goes through ``ReaderRelay`` (what ``serve`` does).
Each round measures one OffsetCommit at a time (p50/p99: the read-back's own latency) and then a
flood of commits 64 in flight (p50/p99 and commits/s: the event loop is busy, as in a flood of
joins, which is where a relay that needs the process's GIL for every fetch answer pays), and the
CPU time of the whole process and of the relay's thread (Linux: /proc/self/task/<tid>/schedstat).
Writes JSON to bench/results/relay.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime_bench import COMMIT_CONTEXT, cluster, percentile  # noqa: E402

from groupcoord.coordinator.gateway.reader_relay import ReaderRelay  # noqa: E402
from groupcoord.coordinator.group_shard import GroupCoordinatorShard  # noqa: E402
from groupcoord.coordinator.messages.offset_commit import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.coordinator.runtime.log import LogTopicSpec  # noqa: E402
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime  # noqa: E402
from groupcoord.coordinator.service.service import GroupCoordinatorService  # noqa: E402

IN_FLIGHT = 64


def request(i: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=f"group-{i % 100}",
        topics=[
            OffsetCommitRequestTopic(
                name=f"topic-{i % 7}", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=i)]
            )
        ],
    )


async def timed(latencies: list[float], call: Callable[[], Awaitable[Any]]) -> None:
    t0 = time.perf_counter()
    await call()
    latencies.append((time.perf_counter() - t0) * 1000)


async def one_round(
    bootstrap: str,
    reader_config: dict[str, Any],
    writes: int,
    flood: int,
    on_written: Callable[[], None] | None = None,
    on_behind: Callable[[], None] | None = None,
) -> dict[str, Any]:
    config = {"bootstrap.servers": bootstrap}
    handlers = GroupCoordinatorShard()
    spec = LogTopicSpec(name=f"bench-relay-{uuid.uuid4().hex[:8]}", partitions=1)
    runtime = CoordinatorRuntime(
        config,
        spec,
        handlers,
        owner_id="bench-relay",
        reader_config=reader_config,
        on_written=on_written,
        on_behind=on_behind,
    )
    await runtime.start()
    await runtime.wait_loaded(60)
    service = GroupCoordinatorService(runtime, handlers)
    try:
        for i in range(50):  # warm up: connections, metadata
            await service.commit_offsets(request(i), COMMIT_CONTEXT)

        def commit(i: int) -> Callable[[], Awaitable[OffsetCommitResponse]]:
            return lambda: service.commit_offsets(request(i), COMMIT_CONTEXT)

        one: list[float] = []
        for i in range(writes):
            await timed(one, commit(i))
        many: list[float] = []
        queue = iter(range(flood))

        async def worker() -> None:
            for i in queue:
                await timed(many, commit(i))

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        seconds = time.perf_counter() - t0
    finally:
        await runtime.close()
    return {
        "one_at_a_time_ms": {"p50": percentile(one, 0.5), "p99": percentile(one, 0.99)},
        f"{IN_FLIGHT}_in_flight_ms": {"p50": percentile(many, 0.5), "p99": percentile(many, 0.99)},
        f"{IN_FLIGHT}_in_flight_commits_per_s": flood / seconds,
    }


def thread_cpu_ms(native_id: int) -> float:
    """CPU time a thread of this process has run, in ms (0 where /proc is not there)."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat") as stat:
            return int(stat.read().split()[0]) / 1e6
    except OSError:
        return 0.0


def process_cpu_ms() -> float:
    times = os.times()
    return (times.user + times.system) * 1000


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds of every figure."""
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, dict):
            out[key] = {q: statistics.median(run[key][q] for run in runs) for q in value}
        else:
            out[key] = statistics.median(run[key] for run in runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--flood", type=int, default=3000)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "relay.json"))
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"direct": [], "relay": [], "relay_waking": []}
    with cluster(args.bootstrap) as (bootstrap, label):
        relay = ReaderRelay(bootstrap).start()
        try:
            plain = {"bootstrap.servers": bootstrap}
            # relay_waking: as serve runs it, the reader's fetches waiting in the relay for the
            # writer's reports (``ReaderRelay.kick``) instead of at the broker.
            Hook = Callable[[], None] | None
            modes: dict[str, tuple[dict[str, Any], Hook, Hook]] = {
                "direct": (plain, None, None),
                "relay": (relay.reader_config(plain), None, None),
                "relay_waking": (relay.reader_config(plain, tails=True), relay.kick, relay.behind),
            }
            for _ in range(args.rounds):
                for mode, (reader_config, on_written, on_behind) in modes.items():
                    relay_cpu, process_cpu = thread_cpu_ms(relay.native_id), process_cpu_ms()
                    run = asyncio.run(
                        one_round(bootstrap, reader_config, args.writes, args.flood, on_written, on_behind)
                    )
                    run["process_cpu_ms"] = process_cpu_ms() - process_cpu
                    run["relay_thread_cpu_ms"] = thread_cpu_ms(relay.native_id) - relay_cpu
                    runs[mode].append(run)
                    print(mode, json.dumps(run), flush=True)
        finally:
            relay.close()
    medians = {mode: summary(mode_runs) for mode, mode_runs in runs.items()}
    direct, relayed, waking = medians["direct"], medians["relay"], medians["relay_waking"]
    waking_ratios = {
        "one_at_a_time_p50": waking["one_at_a_time_ms"]["p50"] / direct["one_at_a_time_ms"]["p50"],
        "one_at_a_time_p99": waking["one_at_a_time_ms"]["p99"] / direct["one_at_a_time_ms"]["p99"],
        "in_flight_rate": waking[f"{IN_FLIGHT}_in_flight_commits_per_s"]
        / direct[f"{IN_FLIGHT}_in_flight_commits_per_s"],
    }
    ratios = {
        "one_at_a_time_p50": relayed["one_at_a_time_ms"]["p50"] / direct["one_at_a_time_ms"]["p50"],
        "one_at_a_time_p99": relayed["one_at_a_time_ms"]["p99"] / direct["one_at_a_time_ms"]["p99"],
        "in_flight_p50": relayed[f"{IN_FLIGHT}_in_flight_ms"]["p50"] / direct[f"{IN_FLIGHT}_in_flight_ms"]["p50"],
        "in_flight_p99": relayed[f"{IN_FLIGHT}_in_flight_ms"]["p99"] / direct[f"{IN_FLIGHT}_in_flight_ms"]["p99"],
        "in_flight_rate": relayed[f"{IN_FLIGHT}_in_flight_commits_per_s"]
        / direct[f"{IN_FLIGHT}_in_flight_commits_per_s"],
    }
    out = {
        "broker": label,
        "medians": medians,
        "relay_over_direct": ratios,
        "relay_waking_over_direct": waking_ratios,
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(
        json.dumps(
            {"medians": medians, "relay_over_direct": ratios, "relay_waking_over_direct": waking_ratios}, indent=2
        )
    )


if __name__ == "__main__":
    main()
