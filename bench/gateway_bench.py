"""Gateway benchmark: produce, fetch and per-request latency through the gateway vs the broker itself.

    python bench/gateway_bench.py [--records 200000] [--value-bytes 1024] [--round-trips 2000] [--rounds 5]

Same run, same broker (a fresh local Tansu on a free loopback port), the gateway in its own
process as a sidecar would be -- two of them when uvloop is installed, one on asyncio's default
event loop and one on uvloop, so the event loop's share is measured too:
- a confluent-kafka producer writing N records (acks=all) directly and through each gateway;
- a confluent-kafka consumer reading N records from offset 0 by manual assignment, directly and
  through each gateway (records/s, MB/s), with the CPU seconds the broker and the gateway
  processes spent in each round. A first, unrecorded round warms every side up; after it, each
  round starts with another side, so drift and the broker's own warm-up hit all sides alike;
- the same through a bare relay (a few lines of Python that copy bytes both ways, in front of a
  twin broker fed the same records): what any process between client and broker costs here, so
  the gateway's own share of the difference from direct can be told apart;
- one request at a time on one connection per side, the sides taking turns request by request:
  ListOffsets (a plain forwarded request) and Metadata (forwarded and rewritten); the difference
  from direct is the added latency.
Writes JSON to bench/results/gateway.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import platform
import socket
import statistics
import struct
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer  # noqa: E402
from groupcoord.coordinator.gateway.framing import RequestHeader  # noqa: E402
from groupcoord.coordinator.gateway.protocol import encode_request  # noqa: E402
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic  # noqa: E402
from groupcoord.coordinator.messages.schema import Message  # noqa: E402
from groupcoord.local_broker import LocalBroker, free_port  # noqa: E402

PARTITIONS = 3


class NoGroups:
    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        raise RuntimeError("the benchmark uses no group APIs")


def _run_gateway(bootstrap: str, port: int, ready: Any, loop: str) -> None:
    async def main() -> None:
        server = GatewayServer(GatewayConfig(bootstrap_servers=bootstrap, listen_port=port), NoGroups())
        await server.start()
        ready.set()
        await asyncio.Event().wait()

    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


def _pump(source: socket.socket, sink: socket.socket) -> None:
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    with contextlib.suppress(OSError):
        while n := source.recv_into(buf):
            sink.sendall(view[:n])
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _run_relay(target: tuple[str, int], port: int, ready: Any) -> None:
    """The least any process between client and broker costs: bytes copied both ways, one thread
    per direction and connection, nothing parsed, nothing checked. The gateway's figures stand
    beside this one to tell the cost of forwarding at all from the cost of the gateway's work."""
    listener = socket.create_server(("127.0.0.1", port))
    ready.set()
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection(target)
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def event_loops() -> list[str]:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return ["asyncio"]
    return ["asyncio", "uvloop"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fill_topic(bootstrap: str, topic: str, records: int, value_bytes: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    value = b"v" * value_bytes
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"%d" % i, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def produce_rate(bootstrap: str, topic: str, records: int, value_bytes: int) -> dict[str, float]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    value = b"p" * value_bytes
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(300) != 0:
        raise RuntimeError("produce did not complete")
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "records_per_s": records / elapsed, "mb_per_s": records * value_bytes / elapsed / 1e6}


def consume_rate(bootstrap: str, topic: str, records: int) -> dict[str, float]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    count = 0
    payload = 0
    start = time.perf_counter()
    deadline = start + 300
    while count < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error():
                raise RuntimeError(str(message.error()))
            count += 1
            payload += len(message.value() or b"") + len(message.key() or b"")
    elapsed = time.perf_counter() - start
    consumer.close()
    if count < records:
        raise RuntimeError(f"only {count} of {records} records arrived")
    return {"seconds": elapsed, "records_per_s": count / elapsed, "mb_per_s": payload / elapsed / 1e6}


def _list_offsets_v1(topic: str, correlation_id: int) -> bytes:
    client_id = b"bench"
    body = struct.pack(">ii", -1, 1)  # replica id, one topic
    body += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", 1)
    body += struct.pack(">iq", 0, -2)  # partition 0, earliest (Tansu's "latest" is unreliable)
    header = struct.pack(">hhi", 2, 1, correlation_id) + struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">i", len(header) + len(body)) + header + body


def _metadata_v9(topic: str, correlation_id: int) -> bytes:
    body = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
    return encode_request(RequestHeader(3, 9, correlation_id, "bench"), body)


async def _round_trips(
    addresses: dict[str, tuple[str, int]], build: Any, topic: str, count: int
) -> dict[str, list[float]]:
    """One request at a time on each side in turn, so drift on a shared machine hits all sides alike."""
    streams = {side: await asyncio.open_connection(*address) for side, address in addresses.items()}
    samples: dict[str, list[float]] = {side: [] for side in addresses}
    try:
        for i in range(count + 50):
            for side, (reader, writer) in streams.items():
                start = time.perf_counter()
                writer.write(build(topic, i))
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                await reader.readexactly(size)
                if i >= 50:  # warm-up: connection set-up, listener creation, caches
                    samples[side].append((time.perf_counter() - start) * 1e6)
    finally:
        for _, writer in streams.values():
            writer.close()
            await writer.wait_closed()
    return samples


def latency(addresses: dict[str, tuple[str, int]], build: Any, topic: str, count: int) -> dict[str, dict[str, float]]:
    samples = asyncio.run(_round_trips(addresses, build, topic, count))
    return {
        side: {
            "p50_us": percentile(values, 0.5),
            "p99_us": percentile(values, 0.99),
            "mean_us": statistics.fmean(values),
        }
        for side, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "gateway.json")
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    loops = event_loops()
    relay_port = free_port()
    with (
        LocalBroker(port=free_port()) as broker,
        # A twin broker that tells its clients it is at the bare relay, so all their traffic
        # (bootstrap, metadata, produce, fetch) goes through it.
        LocalBroker(port=free_port(), advertised=("127.0.0.1", relay_port)) as twin,
    ):
        gateways: dict[str, tuple[int, Any]] = {}
        relay: Any = None
        try:
            for loop in loops:
                port, ready = free_port(), ctx.Event()
                process = ctx.Process(target=_run_gateway, args=(broker.bootstrap, port, ready, loop), daemon=True)
                process.start()
                gateways[loop] = (port, process)
                if not ready.wait(30):
                    raise RuntimeError(f"gateway ({loop}) did not start")
            ready = ctx.Event()
            relay = ctx.Process(target=_run_relay, args=((twin.host, twin.port), relay_port, ready), daemon=True)
            relay.start()
            if not ready.wait(30):
                raise RuntimeError("relay did not start")
            relay_address = f"127.0.0.1:{relay_port}"
            sides = (
                {"direct": broker.bootstrap}
                | {f"gateway_{loop}": f"127.0.0.1:{gateways[loop][0]}" for loop in loops}
                | {"bare_relay": relay_address}
            )
            topic = f"bench-gw-{uuid.uuid4().hex[:8]}"
            sink = f"bench-gw-produce-{uuid.uuid4().hex[:8]}"
            for bootstrap in (broker.bootstrap, relay_address):
                fill_topic(bootstrap, topic, args.records, args.value_bytes)
                admin = AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([NewTopic(sink, PARTITIONS, 1)])[sink].result()

            assert broker.process is not None and twin.process is not None
            pids = (
                {"broker_cpu_s": broker.process.pid}
                | {f"gateway_{loop}_cpu_s": p.pid for loop, (_, p) in gateways.items()}
                | {"twin_broker_cpu_s": twin.process.pid, "bare_relay_cpu_s": relay.pid}
            )
            produce: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
            fetch: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
            names = list(sides)
            # Round 0 warms every side up and is not recorded: the broker's first 200 MB cost it
            # about half the CPU of later ones, which favoured whichever side went first.
            for round_no in range(args.rounds + 1):
                # Each round starts with another side, so no side always runs after the others.
                order = names[round_no % len(names) :] + names[: round_no % len(names)]
                for side in order:
                    for figures_of, measure in (
                        (produce, lambda a: produce_rate(a, sink, args.records, args.value_bytes)),
                        (fetch, lambda a: consume_rate(a, topic, args.records)),
                    ):
                        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                        figures = measure(sides[side])
                        # CPU beside wall time tells a busy broker from an idle, stalled one.
                        figures.update({name: cpu_seconds(pid) - before[name] for name, pid in pids.items()})
                        if round_no > 0:
                            figures_of[side].append(figures)

            addresses = (
                {"direct": (broker.host, broker.port)}
                | {f"gateway_{loop}": ("127.0.0.1", gateways[loop][0]) for loop in loops}
                | {"bare_relay": ("127.0.0.1", relay_port)}
            )
            requests: dict[str, dict[str, Any]] = {}
            for name, build in (("list_offsets_v1", _list_offsets_v1), ("metadata_v9", _metadata_v9)):
                entry: dict[str, Any] = latency(addresses, build, topic, args.round_trips)
                direct = entry["direct"]
                for via in [*loops, "bare_relay"]:
                    through = entry[via if via == "bare_relay" else f"gateway_{via}"]
                    entry[f"added_{via}"] = {q: through[q] - direct[q] for q in ("p50_us", "p99_us", "mean_us")}
                requests[name] = entry
        finally:
            for process in [p for _, p in gateways.values()] + ([relay] if relay is not None else []):
                process.terminate()
                process.join(10)

    def median(figures: dict[str, list[dict[str, float]]], side: str, key: str) -> float:
        return statistics.median(r[key] for r in figures[side])

    def summary(figures: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
        return {
            side: {
                "records_per_s_median": median(figures, side, "records_per_s"),
                "mb_per_s_median": median(figures, side, "mb_per_s"),
                "over_direct": median(figures, side, "records_per_s") / median(figures, "direct", "records_per_s"),
                # Each round's figure over the direct one of the same round, then the median: less
                # sensitive to load that drifts across the run than the ratio of medians.
                "over_direct_paired": statistics.median(
                    mine["records_per_s"] / direct["records_per_s"]
                    for mine, direct in zip(figures[side], figures["direct"], strict=True)
                ),
                "rounds": figures[side],
            }
            for side in figures
        }

    result = {
        "benchmark": "gateway",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpus": multiprocessing.cpu_count()},
        "params": {
            "records": args.records,
            "value_bytes": args.value_bytes,
            "partitions": PARTITIONS,
            "rounds": args.rounds,
            "round_trips": args.round_trips,
            "event_loops": loops,
        },
        "produce": summary(produce),
        "fetch": summary(fetch),
        "request_latency": requests,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(args.output)
    for kind in ("produce", "fetch"):
        for side, figures in result[kind].items():  # type: ignore[attr-defined]
            print(
                kind,
                side,
                f"{figures['records_per_s_median']:.0f} records/s",
                f"x{figures['over_direct']:.2f} (paired x{figures['over_direct_paired']:.2f})",
            )
    print(json.dumps(requests, indent=2))


if __name__ == "__main__":
    main()
