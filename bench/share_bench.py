"""Share groups (KIP-932) through the sidecar: records/s drained from ONE partition, beside plain consumers.

    python bench/share_bench.py [--records 100000] [--consumers 1,3,10] [--repeats 3] [--acks 300] [--bootstrap HOST:PORT]

Same run, same broker, same topic (one partition, ``--records`` records of 100 bytes, produced
before anything reads):
- ``raw.direct``: a plain librdkafka consumer reading the partition from the broker, read once
  before the share groups and again after each of their drains; the anchor
  (``direct_records_per_s``) is the median of those reads, each timed as a drain is (from its
  first records to its last);
- ``raw.through_sidecar``: the same consumer with the sidecar as its bootstrap (its fetches go
  through the gateway to the broker);
- ``groupcoord.share[N]``: a share group of N confluent-kafka ``ShareConsumer``s (implicit
  acknowledgement: each poll acknowledges the records of the previous one), one thread each,
  draining the same records (``share.auto.offset.reset=earliest``), ``--repeats`` times with a
  new group each time (the median run is reported, every run's rate in ``records_per_s_runs``).
  The rate is distinct records received per second, from the first poll that returned records
  to the last; a record is acquired only while
  fewer than ``group.share.partition.max.record.locks`` are in flight, so after the first
  window the group can only get records as fast as it acknowledges them. ``redelivered``
  counts records received more than once until the last one came (a lock that expired, a
  consumer's released records); ``serve_counted`` is what the serve process's /metrics counted
  over the phase (share fetches, acknowledgements by type, lock expirations, reads of the
  partition from the cluster, requests by API: the joins' ApiVersions, Metadata, heartbeats);
  ``serve_cpu_per_wall_s`` and ``serve_cpu_us_per_record`` the serve process's CPU over the
  phase per wall second and per record; ``records_per_share_fetch`` the records over the
  ShareFetches counted, and ``implied_cycle_ms`` (Little's law) an upper bound of the time a
  record is held from its acquisition to its acknowledgement: at most min(consumers x records
  per ShareFetch, record locks + records per ShareFetch) in flight, over the rate;
- ``groupcoord.ack_latency_ms``: one ShareConsumer in explicit mode, ``max.poll.records=10``,
  ACCEPTing each record and timing ``commit_sync`` (a ShareAcknowledge answered once its
  records are written to and read back from the coordinator log), p50/p99.

The issue's goal is ``share[10] >= 0.5 x raw.direct`` (``goal_met``). The serve process is a
child (``groupcoord serve`` with share groups enabled); ``--py-spy PATH`` records it with py-spy
(from PyPI) during the largest share group's drain. The clients' side: ``client_cpu_us_per_record``
is this process's CPU (librdkafka's threads and the consumers' Python threads) over a drain per
record, and ``--perf-client PATH`` records this process with ``perf record -e cpu-clock`` (Linux
perf; librdkafka's symbols are in the confluent-kafka wheel) during the largest drain.
JSON to bench/results/share.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime_bench import cluster, percentile, write_results  # noqa: E402

from groupcoord.local_broker import free_port  # noqa: E402
from tests.clients.support import create_topic  # noqa: E402
from tests.integration.serve_process import ServeProcess  # noqa: E402

PAYLOAD = b"x" * 100
SHARE_GROUPS = {"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"}
QUIET = {"log_level": 3}


def produce(
    bootstrap: str, topic: str, records: int, batch_records: int | None = None, batch_bytes: int | None = None
) -> None:
    """``records`` records as fast as the producer takes them (batches of ~1,000-5,000 records with
    librdkafka's defaults); ``batch_records`` caps a batch's records, ``batch_bytes`` its size
    (``batch.size``)."""
    extra: dict[str, int] = {"batch.num.messages": batch_records} if batch_records else {}
    if batch_bytes:
        extra["batch.size"] = batch_bytes
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **extra, **QUIET})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"%d" % i, value=PAYLOAD, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0


def plain_consume(bootstrap: str, topic: str, records: int, timeout: float) -> dict[str, Any]:
    """A plain consumer reading the partition from offset 0 (no group: assign). ``records_per_s``
    is measured as a share drain's is, from its first records to its last (the records after
    the first ``consume()``'s over the time since it): a new client's connections, metadata and
    first fetch are left out of both sides. ``records_per_s_from_assign`` counts them in (the
    anchor of this bench's runs before 2026-11-27, which a 100,000-record read, ~0.1-0.2 s, let
    them weigh on)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-plain-{uuid.uuid4().hex[:8]}",
            # With librdkafka's default (1 s) a read of more than queued.min.messages (100,000)
            # records stops fetching for a second whenever its queue is full: 250 k records/s
            # over 300,000 records here against 1.4 M over 100,000. The anchor is the faster
            # reader (as the coordinator's own log reader is set).
            "fetch.queue.backoff.ms": 10,
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    started = time.perf_counter()
    deadline = started + timeout
    first: tuple[float, int] | None = None
    while seen < records and time.perf_counter() < deadline:
        # Never ask for more than is left: consume() would wait out its timeout for a full batch.
        got = sum(1 for msg in consumer.consume(min(1000, records - seen), 1.0) if msg.error() is None)
        seen += got
        if first is None and got:
            first = (time.perf_counter(), got)
    ended = time.perf_counter()
    consumer.close()
    since_first = ended - first[0] if first is not None else 0.0
    return {
        "records": seen,
        "records_per_s": (seen - first[1]) / since_first if first is not None and since_first > 0 else 0.0,
        "records_per_s_from_assign": seen / (ended - started) if ended > started else 0.0,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def share_counters(address: str) -> dict[str, float]:
    """The serve process's share counters and requests by API from its /metrics, by name (and
    label)."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        s.name + "".join(f"{{{v}}}" for v in s.labels.values()): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith(("groupcoord_share_", "groupcoord_gateway_requests"))
        for s in family.samples
        if s.name.endswith("_total")
    }


def set_group_config(sidecar: str, group: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": sidecar, **QUIET})
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(15)


def share_drain(
    sidecar: str,
    topic: str,
    records: int,
    consumers: int,
    timeout: float,
    record_locks: int | None,
    max_poll_records: int | None,
) -> dict[str, Any]:
    """``consumers`` ShareConsumers of one new group, one thread each, until every record came."""
    group = f"bench-share-{consumers}-{uuid.uuid4().hex[:8]}"
    set_group_config(sidecar, group, "share.auto.offset.reset", "earliest")
    if record_locks is not None:
        set_group_config(sidecar, group, "share.partition.max.record.locks", str(record_locks))
    lock = threading.Lock()
    offsets: set[int | None] = set()
    received = 0
    per_consumer = [0] * consumers
    first: list[float] = []  # when the first records came, and how many
    last = [0.0]
    done = threading.Event()

    def run(index: int) -> None:
        nonlocal received
        extra = {"max.poll.records": str(max_poll_records)} if max_poll_records else {}
        c = ShareConsumer({"bootstrap.servers": sidecar, "group.id": group, **extra, **QUIET})
        c.subscribe([topic])
        try:
            while not done.is_set():
                got = [m.offset() for m in c.poll(0.2) if m.error() is None]
                if not got:
                    continue
                now = time.perf_counter()
                with lock:
                    if done.is_set():
                        # Drained. Not counted: the records the first consumer to close got in its
                        # last poll, which librdkafka's close does not ACCEPT (implicit mode), so
                        # the session's close releases them and the others get them again.
                        break
                    if not first:
                        first.extend((now, len(got)))
                    received += len(got)
                    per_consumer[index] += len(got)
                    offsets.update(got)
                    if len(offsets) >= records:
                        last[0] = now
                        done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(consumers)]
    for t in threads:
        t.start()
    done.wait(timeout)
    done.set()
    for t in threads:
        t.join(30)
    complete = len(offsets) >= records
    elapsed = (last[0] - first[0]) if complete and first else 0.0
    # The records after the first poll's, over the time since it (a run whose records all came in
    # one poll has no rate: 0).
    return {
        "consumers": consumers,
        "records": len(offsets),
        "complete": complete,
        "records_per_s": (len(offsets) - first[1]) / elapsed if elapsed > 0 else 0.0,
        "redelivered": received - len(offsets),
        "consumers_that_received": sum(1 for n in per_consumer if n),
    }


def ack_latency(bootstrap: str, sidecar: str, acks: int, timeout: float) -> dict[str, Any]:
    """Explicit acknowledgement: commit_sync after ACCEPTing each polled batch, timed. Its own
    topic of 10-record batches: a ShareFetch v1 is batch-optimized (a record batch begun is
    acquired whole, past ``max.poll.records``), so the drained topic's batches of thousands
    would make every commit a few thousand records."""
    topic = f"bench-share-ack-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, acks * 10, batch_records=10)
    group = f"bench-share-ack-{uuid.uuid4().hex[:8]}"
    set_group_config(sidecar, group, "share.auto.offset.reset", "earliest")
    c = ShareConsumer(
        {
            "bootstrap.servers": sidecar,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": "10",
            **QUIET,
        }
    )
    c.subscribe([topic])
    latencies: list[float] = []
    deadline = time.perf_counter() + timeout
    while len(latencies) < acks and time.perf_counter() < deadline:
        messages = [m for m in c.poll(0.5) if m.error() is None]
        if not messages:
            continue
        for m in messages:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        t0 = time.perf_counter()
        c.commit_sync(15)
        latencies.append((time.perf_counter() - t0) * 1000)
    c.close()
    if not latencies:
        return {"commits": 0}
    return {
        "commits": len(latencies),
        "records_per_commit_max": 10,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
    }


def own_cpu_seconds() -> float:
    """This process's user + system CPU seconds so far, all threads (librdkafka's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def perf_recording(out: str) -> subprocess.Popen[bytes] | None:
    """``perf record`` of this process (software clock: no hardware counters needed), or None."""
    perf = shutil.which("perf")
    if perf is None:
        print("perf not found (Debian: linux-perf)", file=sys.stderr)
        return None
    cmd = [perf, "record", "-e", "cpu-clock", "-F", "2000", "-p", str(os.getpid()), "-o", out]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # attached before the drain starts
    return proc


def profiled(pid: int, out: str, seconds: int) -> subprocess.Popen[bytes] | None:
    """py-spy recording the serve process (None when py-spy is not installed)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("py-spy not found: pip install py-spy", file=sys.stderr)
        return None
    return subprocess.Popen(
        [spy, "record", "-p", str(pid), "-o", out, "-d", str(seconds), "-r", "200", "--format", "raw", "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def share_phase(
    args: argparse.Namespace, serve: ServeProcess, pid: int, metrics: str, topic: str, n: int, profile: bool
) -> dict[str, Any]:
    """One drain of the topic by a new share group of ``n`` consumers, with what the serve
    process spent and counted over it (``--py-spy``/``--perf-client`` record the one ``profile``
    names)."""
    spy = profiled(pid, args.py_spy, args.py_spy_seconds) if args.py_spy and profile else None
    perf = perf_recording(args.perf_client) if args.perf_client and profile else None
    cpu, wall, counted = cpu_seconds(pid), time.perf_counter(), share_counters(metrics)
    client_cpu = own_cpu_seconds()
    entry = share_drain(serve.bootstrap, topic, args.records, n, args.timeout, args.record_locks, args.max_poll_records)
    entry["client_cpu_us_per_record"] = 1e6 * (own_cpu_seconds() - client_cpu) / max(1, entry["records"])
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
    # The serve process's CPU over the whole phase (joining included) per wall second: near 1
    # (one event loop) means it is CPU-bound, well below means it waits.
    serve_cpu = cpu_seconds(pid) - cpu
    entry["serve_cpu_per_wall_s"] = serve_cpu / (time.perf_counter() - wall)
    # The same CPU per record drained: what the share-partition's bookkeeping costs.
    entry["serve_cpu_us_per_record"] = 1e6 * serve_cpu / max(1, entry["records"])
    # What the serve process counted over the phase (its /metrics): where redeliveries come from
    # (releases, lock expirations), and how many ShareFetches it took.
    entry["serve_counted"] = {
        k: v - counted.get(k, 0.0) for k, v in share_counters(metrics).items() if v != counted.get(k, 0.0)
    }
    if spy is not None:
        spy.wait(args.py_spy_seconds + 30)
    return entry


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median rate (the lower middle one of an even count), with every run's rate."""
    ranked = sorted(runs, key=lambda r: r["records_per_s"])
    entry = dict(ranked[(len(ranked) - 1) // 2])
    entry["records_per_s_runs"] = [r["records_per_s"] for r in runs]
    return entry


def main() -> None:
    parser = argparse.ArgumentParser()
    # 20,000 records were 40 ShareFetches for one consumer: too few for a rate that holds still.
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--consumers", default="1,3,10")
    parser.add_argument(
        "--repeats", type=int, default=3, help="drains of each share group size (its median run is reported)"
    )
    parser.add_argument("--acks", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--py-spy", default=None, help="record the serve process during the largest group's drain")
    parser.add_argument("--py-spy-seconds", type=int, default=10)
    parser.add_argument("--perf-client", default=None, help="perf record this process during the largest drain")
    parser.add_argument("--max-poll-records", type=int, default=None, help="each ShareConsumer's (default 500)")
    parser.add_argument(
        "--record-locks",
        type=int,
        default=None,
        help="share.partition.max.record.locks of each share group (default: the broker's, 2000)",
    )
    parser.add_argument(
        "--producer-batch-bytes",
        type=int,
        default=None,
        help="batch.size of the producer writing the topic (default librdkafka's, 1000000; Kafka's Java producer: 16384)",
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "share.json"))
    args = parser.parse_args()
    sizes = [int(n) for n in args.consumers.split(",")]
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"bench-share-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, args.records, batch_bytes=args.producer_batch_bytes)
        metrics = f"127.0.0.1:{free_port()}"
        env = {**SHARE_GROUPS, "GROUPCOORD_METRICS_LISTEN": metrics, "GROUPCOORD_METRICS_LAG_INTERVAL_MS": "0"}
        serve = ServeProcess(bootstrap, free_port(), f"bench-share-log-{uuid.uuid4().hex[:8]}").start(env=env)
        try:
            assert serve.proc is not None
            pid = serve.proc.pid
            # Warm up both paths (connections, metadata, the broker's page cache); not counted.
            plain_consume(bootstrap, topic, args.records, args.timeout)
            plain_consume(serve.bootstrap, topic, args.records, args.timeout)
            direct = [plain_consume(bootstrap, topic, args.records, args.timeout)]
            sidecar = plain_consume(serve.bootstrap, topic, args.records, args.timeout)
            share = []
            for n in sizes:
                runs: list[dict[str, Any]] = []
                for _ in range(args.repeats):
                    runs.append(share_phase(args, serve, pid, metrics, topic, n, n == max(sizes) and not runs))
                    # The anchor read between the drains too: the machine is shared, and a
                    # 100,000-record direct read lasts a tenth of a second, so one read moves
                    # by 2x from one to the next (bench/results of 2026-11-26).
                    direct.append(plain_consume(bootstrap, topic, args.records, args.timeout))
                share.append(median_run(runs))
            latency = ack_latency(bootstrap, serve.bootstrap, args.acks, args.timeout)
        finally:
            serve.stop()
    anchor = percentile([d["records_per_s"] for d in direct], 0.5)
    for entry in share:
        entry["over_direct"] = entry["records_per_s"] / anchor if anchor else 0.0
    sidecar["over_direct"] = sidecar["records_per_s"] / anchor if anchor else 0.0
    largest = max(share, key=lambda e: e["consumers"])
    # Little's law: records/s = records in flight / how long a record is held, from its
    # acquisition to its acknowledgement (a ShareFetch cycle: the write of the acknowledging
    # ShareFetch read back from the coordinator log, the read from the broker or the partition's
    # last read, the client's turn). Since acquisition is batch-optimized a ShareFetch takes whole
    # fetched batches (thousands of records here, not max.poll.records), so the records per
    # ShareFetch are taken from what the serve process counted over the phase (the joins' empty
    # fetches included: a floor). In flight are at most what the consumers hold, one ShareFetch's
    # worth each, and at most the record locks plus the batch that may run past them: the
    # window and the cycle below are upper bounds.
    locks, per_poll = args.record_locks or 2000, args.max_poll_records or 500
    for entry in share:
        rate = entry["records_per_s"]
        fetches = entry["serve_counted"].get("groupcoord_share_fetch_requests_total", 0.0)
        per_fetch = entry["records"] / fetches if fetches else None
        window = min(entry["consumers"] * per_fetch, locks + per_fetch) if per_fetch is not None else None
        entry["records_per_share_fetch"] = per_fetch
        entry["in_flight_window"] = window
        entry["implied_cycle_ms"] = 1000 * window / rate if rate and window is not None else None
    params = {"record_locks": locks, "max_poll_records": per_poll, "producer_batch_bytes": args.producer_batch_bytes}
    raw = {"records": args.records, "record_bytes": len(PAYLOAD), "direct": direct, "direct_records_per_s": anchor}
    ours = {
        "params": params,
        "through_sidecar": sidecar,
        "share": share,
        "ack_latency_ms": latency,
        "goal": f"share[{largest['consumers']}] >= 0.5 x direct",
        "goal_met": largest["over_direct"] >= 0.5,
    }
    write_results(args.out, label, raw, ours)


if __name__ == "__main__":
    main()
