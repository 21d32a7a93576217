"""Runtime benchmark: shard load rate and acknowledged-write latency, beside the raw broker.

    python bench/runtime_bench.py [--records 50000] [--writes 500] [--bootstrap HOST:PORT]

Same run, same broker:
- our load rate (records/s of the log read and replayed while loading a shard, until the shard
  serves) vs a bare consumer reading the same log with the same settings, with CPython's cyclic
  collector on and, as the shard's reader holds it off during a load, off (and, for scale, a
  plain consumer reading a topic of 60-byte records);
- raw produce -> consume round trip (p50/p99, one record at a time) vs our acknowledged-write
  latency (one OffsetCommit at a time, response released after the read-back).
- in-process replay (no I/O, one core): OffsetCommit records/s through the load path
  (``LogReplayer(deferred=True)``: only the last record of each key is decoded) and through the
  tail path (every record decoded), on a commit-heavy log (700 keys) and on a log whose every
  record has its own key (the worst case for the load path).
Writes JSON to bench/results/runtime.json. Not part of the test suite: timings drift on shared
machines, which is why every figure stands beside the raw broker's own.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from groupcoord.coordinator.gateway.reader_relay import ReaderRelay  # noqa: E402
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState  # noqa: E402
from groupcoord.coordinator.groups.context import RequestContext  # noqa: E402
from groupcoord.coordinator.messages.offset_commit import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.runtime.headers import make_headers  # noqa: E402
from groupcoord.coordinator.runtime.log import TAILER_SETTINGS, LogTopicSpec  # noqa: E402
from groupcoord.coordinator.runtime.replayer import LogReplayer  # noqa: E402
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime  # noqa: E402
from groupcoord.coordinator.runtime.shard import LoadReport  # noqa: E402
from groupcoord.coordinator.service.service import GroupCoordinatorService  # noqa: E402
from groupcoord.local_broker import LocalBroker, free_port  # noqa: E402
from groupcoord.records import CoordinatorRecord, RecordType, encode  # noqa: E402
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue  # noqa: E402

# OffsetCommit v9, as a current client sends it.
COMMIT_CONTEXT = RequestContext(api_version=9)


def print_serve_tail(log: IO[bytes], lines: int = 20) -> None:
    """The last ``lines`` of a serve process's log file: what a bench prints when a run fails."""
    log.seek(0)
    print("serve's log (tail):", *log.read().decode(errors="replace").splitlines()[-lines:], sep="\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def raw_figures(bootstrap: str, records: int, round_trips: int) -> dict[str, Any]:
    topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    payload = b"x" * 60  # about the size of an encoded OffsetCommit record
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"k%d" % (i % 1000), value=payload, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush()
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench", "enable.partition.eof": True, "fetch.wait.max.ms": 5}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    start = time.perf_counter()
    seen = 0
    while seen < records:
        # Never ask for more than is left: consume() waits out its timeout for a batch it cannot
        # fill, which would count up to a second of idle waiting into the rate.
        batch = consumer.consume(min(2000, records - seen), 5.0)
        if not batch:
            break
        done = False
        for msg in batch:
            if msg.error() is None:
                seen += 1
            else:
                done = True
        if done:
            break
    consume_seconds = time.perf_counter() - start
    # Round trip: produce one record, wait until the tailing consumer has it.
    latencies = []
    p1 = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 0})
    for i in range(round_trips):
        t0 = time.perf_counter()
        p1.produce(topic, key=b"rt", value=b"%d" % i, partition=0)
        p1.poll(0)
        while True:
            got = consumer.poll(1.0)
            if got is not None and got.error() is None and got.key() == b"rt" and got.value() == b"%d" % i:
                break
        latencies.append((time.perf_counter() - t0) * 1000)
    consumer.close()
    return {
        "consume_records": seen,
        "consume_records_per_s": seen / consume_seconds,
        "produce_consume_round_trip_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
    }


def read_log_raw(config: dict[str, Any], topic: str, collector: bool = True, settle_s: float = 0.0) -> dict[str, Any]:
    """The raw figure for a load: a bare consumer reading the very log the shard loads, with the
    shard reader's settings and read pattern, taking each record's key, value and headers (what
    any reader of the log must) and doing nothing with them. With ``collector=False``, CPython's
    cyclic collector is off while it reads, as the shard's reader holds it off during a load:
    the figure of the read alone, without the collections a plain reader sets off. With
    ``settle_s``, the consumer first connects (a metadata request) and idles that long before
    the clock starts, as a standby's reader has been connected and idle when it is given a shard
    to load (so neither figure holds the connection's set-up). ``cpu_seconds``: the process's CPU
    time (every thread, librdkafka's included) over the timed read."""
    consumer = Consumer({**config, "group.id": "bench-raw-log", **TAILER_SETTINGS})
    if settle_s:
        consumer.list_topics(topic, timeout=30)
        time.sleep(settle_s)
        gc.collect()
    consumer.assign([TopicPartition(topic, 0, 0)])
    if not collector:
        gc.disable()
    cpu = time.process_time()
    start = time.perf_counter()
    seen = 0
    done = False
    while not done:
        batch = consumer.consume(2000, 0)
        if not batch:
            first = consumer.poll(0.05)
            batch = [first] if first is not None else []
        for msg in batch:
            if msg.error() is None:
                msg.key(), msg.value(), msg.headers()
                seen += 1
            else:
                done = True
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    gc.enable()
    consumer.close()
    return {"records": seen, "seconds": seconds, "records_per_s": seen / seconds, "cpu_seconds": cpu}


async def ours(bootstrap: str, records: int, writes: int, progress: Progress) -> dict[str, Any]:
    topic = f"bench-log-{uuid.uuid4().hex[:8]}"
    handlers = GroupCoordinatorShard()
    spec = LogTopicSpec(name=topic, partitions=1)
    config = {"bootstrap.servers": bootstrap}
    runtime = CoordinatorRuntime(config, spec, handlers, owner_id="bench-writer")
    await runtime.start()
    await runtime.wait_loaded(60)
    service = GroupCoordinatorService(runtime, handlers)

    def request(i: int, partitions: int = 1) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id=f"group-{i % 100}",
            topics=[
                OffsetCommitRequestTopic(
                    name=f"topic-{i % 7}",
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=p, committed_offset=i) for p in range(partitions)
                    ],
                )
            ],
        )

    fill = progress.add_task("writing log", total=records)
    written = 0
    while written < records:
        n = min(1000, records - written)
        await asyncio.gather(*(service.commit_offsets(request(written + i), COMMIT_CONTEXT) for i in range(n)))
        written += n
        progress.update(fill, completed=written)
    latencies = []
    lat = progress.add_task("ack latency", total=writes)
    for i in range(writes):
        t0 = time.perf_counter()
        await service.commit_offsets(request(i), COMMIT_CONTEXT)
        latencies.append((time.perf_counter() - t0) * 1000)
        progress.update(lat, advance=1)
    await runtime.close()

    # Three of each, interleaved: the raw read and the loads share the broker and the machine.
    # serve's log reader goes through the reader relay (Fetch capped at v12), its fetches waiting
    # there for the writer's reports: loads with and without it, beside the same raw read.
    relay = ReaderRelay(bootstrap).start()
    relayed = relay.reader_config(config, tails=True)
    raw_reads, raw_reads_no_collector, failovers, direct_failovers, colds = [], [], [], [], []
    load_task = progress.add_task("loading", total=3)
    for _ in range(3):
        raw_reads.append(read_log_raw(config, topic))
        raw_reads_no_collector.append(read_log_raw(config, topic, collector=False))
        failovers.append(await failover_load(config, spec, handlers, relayed, relay.kick))
        direct_failovers.append(await failover_load(config, spec, handlers, config))
        colds.append(await cold_start_load(config, spec, handlers, relayed, relay.kick))
        progress.update(load_task, advance=1)
    relay.close()
    raw_read = median_by(raw_reads, "records_per_s")
    raw_read_no_collector = median_by(raw_reads_no_collector, "records_per_s")
    failover = median_by(failovers, "records_per_s")
    direct_failover = median_by(direct_failovers, "records_per_s")
    cold = median_by(colds, "records_per_s")
    return {
        # A shard loaded by a process already running (a failover, or placement moving the
        # shard): from the moment it is told to load until it serves.
        "load_records": failover["records"],
        "load_seconds": failover["seconds"],
        "load_records_per_s": failover["records_per_s"],
        # The log read and replayed, without the ShardEpoch append and read-back that end a load.
        "read_records_per_s": failover["read_records_per_s"],
        "raw_read_of_the_same_log": raw_read,
        "load_over_raw_read": failover["records_per_s"] / raw_read["records_per_s"],
        "read_over_raw_read": failover["read_records_per_s"] / raw_read["records_per_s"],
        # The load holds the cyclic collector off while it reads; the bare reader above does
        # not. Beside a bare reader that does too:
        "raw_read_with_the_collector_off": raw_read_no_collector,
        "load_over_raw_read_with_the_collector_off": failover["records_per_s"] / raw_read_no_collector["records_per_s"],
        # The same load with the log reader talking to the broker directly (no reader relay).
        "load_without_relay_records_per_s": direct_failover["records_per_s"],
        "load_without_relay_over_raw_read": direct_failover["records_per_s"] / raw_read["records_per_s"],
        "runs": {
            "raw_read": raw_reads,
            "raw_read_with_the_collector_off": raw_reads_no_collector,
            "failover_load": failovers,
            "failover_load_without_relay": direct_failovers,
            "cold_start_load": colds,
        },
        # A process that starts and loads at once: its new idempotent producer cannot write the
        # ShardEpoch record that ends the load before librdkafka asks for a producer id, which it
        # first does 500 ms after the producer is created (a fixed timer in librdkafka).
        "cold_start_load_seconds": cold["seconds"],
        "cold_start_load_records_per_s": cold["records_per_s"],
        "ack_write_latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
        "ack_write_latency_mean_ms": statistics.fmean(latencies),
    }


def median_by(runs: list[dict[str, Any]], field: str) -> dict[str, Any]:
    return sorted(runs, key=lambda run: run[field])[len(runs) // 2]


def load_figures(report: LoadReport, seconds: float) -> dict[str, Any]:
    return {
        "records": report.records,
        "seconds": seconds,
        "records_per_s": report.records / seconds,
        "read_records_per_s": report.records / report.read_seconds,
    }


async def failover_load(
    config: dict[str, Any],
    spec: LogTopicSpec,
    handlers: GroupCoordinatorShard,
    reader_config: dict[str, Any],
    on_written: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """A standby process, running for a second, is given the shard and loads it."""
    standby = CoordinatorRuntime(
        config, spec, handlers, owner_id="bench-standby", reader_config=reader_config, on_written=on_written
    )
    await standby.start(partitions=[])
    await asyncio.sleep(1.0)
    t0 = time.perf_counter()
    standby.load_shard(0)
    (report,) = await standby.wait_loaded(600)
    seconds = time.perf_counter() - t0
    await standby.close()
    return load_figures(report, seconds)


async def cold_start_load(
    config: dict[str, Any],
    spec: LogTopicSpec,
    handlers: GroupCoordinatorShard,
    reader_config: dict[str, Any],
    on_written: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """A process that starts and loads the shard at once."""
    reader = CoordinatorRuntime(
        config, spec, handlers, owner_id="bench-loader", reader_config=reader_config, on_written=on_written
    )
    t0 = time.perf_counter()
    await reader.start()
    (report,) = await reader.wait_loaded(600)
    seconds = time.perf_counter() - t0
    await reader.close()
    return load_figures(report, seconds)


def replay_figures(records: int) -> dict[str, Any]:
    """Records/s replayed in-process, load path vs tail path, repeated keys vs distinct keys."""
    out: dict[str, Any] = {}
    for shape, key_of in (
        ("commit_heavy_700_keys", lambda i: (f"group-{i % 100}", f"topic-{i % 7}", 0)),
        ("distinct_keys", lambda i: (f"group-{i // 10_000}", f"topic-{(i // 100) % 100}", i % 100)),
    ):
        log = []
        for i in range(records):
            record = CoordinatorRecord(
                RecordType.OFFSET_COMMIT,
                OffsetCommitKey(*key_of(i)),
                OffsetCommitValue(i, 3, "", 1_700_000_000_000 + i, -1, "AAAAAAAAAAAAAAAAAAAAAA"),
            )
            log.append((*encode(record), make_headers(1, 0, 1)))
        for path, deferred in (("load", True), ("tail", False)):
            replayer = LogReplayer("bench", 0, [GroupCoordinatorState()], deferred=deferred)
            t0 = time.perf_counter()
            for offset, (key, value, headers) in enumerate(log):
                replayer.feed(offset, key, value, headers)
            replayer.finish()
            out[f"{shape}_{path}_records_per_s"] = records / (time.perf_counter() - t0)
        # The load as the shard runs it: the reader's deliveries of 2,000 records, taken in bulk.
        messages = [BenchMessage(offset, *entry) for offset, entry in enumerate(log)]
        replayer = LogReplayer("bench", 0, [GroupCoordinatorState()], deferred=True)
        t0 = time.perf_counter()
        for at in range(0, len(messages), 2000):
            replayer.feed_messages(messages[at : at + 2000])
        replayer.finish()
        out[f"{shape}_load_in_bulk_records_per_s"] = records / (time.perf_counter() - t0)
    return out


class BenchMessage:
    """A consumed record, as ``confluent_kafka.Message`` hands it over."""

    __slots__ = ("_offset", "_key", "_value", "_headers")

    def __init__(self, offset: int, key: bytes, value: bytes | None, headers: list[tuple[str, bytes]]) -> None:
        self._offset, self._key, self._value, self._headers = offset, key, value, headers

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers


@contextmanager
def cluster(bootstrap: str | None) -> Iterator[tuple[str, str]]:
    """(bootstrap servers, label): the given cluster, or a local broker started for the run."""
    if bootstrap is not None:
        yield bootstrap, bootstrap
        return
    with LocalBroker(port=free_port()) as broker:
        yield broker.bootstrap, "tansu (local)"


def write_results(path: str, label: str, raw: dict[str, Any], ours: Any) -> None:
    out = {"broker": label, "raw": raw, "groupcoord": ours}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "runtime.json"))
    args = parser.parse_args()
    with cluster(args.bootstrap) as (bootstrap, label), Progress() as progress:
        raw = raw_figures(bootstrap, args.records, args.writes)
        result = asyncio.run(ours(bootstrap, args.records, args.writes, progress))
    result["replay_in_process"] = replay_figures(max(args.records, 200_000))
    write_results(args.out, label, raw, result)


if __name__ == "__main__":
    main()
