"""Large KIP-848 group: thousands of wire-level members heartbeating one `groupcoord serve` process.

    python bench/large_group_bench.py [--members 5000] [--partitions 10000] [--restart-batch 50]
                                      [--steady-seconds 60] [--settle-seconds 5] [--assignment-interval-ms 1000]
                                      [--no-restart] [--event-loop auto|uvloop|asyncio]
                                      [--heartbeat-interval-ms 5000] [--no-floor]

Each member is an asyncio task with its own connection to the sidecar, speaking raw
ConsumerGroupHeartbeat v1 frames (client-generated member id, as Kafka 4 clients do): it joins,
acknowledges every new assignment at once and otherwise heartbeats at the interval the coordinator
asks for (5 s by default). Phases, all against one serve process and a fresh local broker:
- mass join: every member sends its join at the same moment; the time until the group has
  converged (ConsumerGroupDescribe: every member at the group epoch with its target assignment),
  and the serve process's CPU per heartbeat by thread (``main``: the event loop);
- the first interval after convergence (``steady_first_interval``, ``--settle-seconds``, one
  heartbeat interval by default): each member's first heartbeat that acknowledges nothing is a new
  request on its connection and goes through the handlers; measured apart, as the steady state is
  what follows;
- steady state: heartbeat latency p50/p99 and the serve process's CPU seconds per heartbeat
  (members repeating their last heartbeat, answered again while it stands: ``steady_answers``);
  beside the latency the client sees, the serve process's own (``serve_handled_ms``, from its
  /metrics histogram: handler call to answer), since the client runs 5,000 members in one
  process on the same machine and its own delays are in what it sees. 60 s by default: one whole
  cycle of the topic-metadata refresh, whose every sixth run (once a minute) describes all 10,000
  partitions (``MetadataCache.DESCRIBE_ALL_EVERY``), so the figure holds that cost once, as
  any minute of a serve process does; a shorter window holds it whole or not at all;
- rolling restart: members leave (epoch -1) and rejoin as new members, ``--restart-batch`` at a
  time, each batch once the previous one has rejoined; the time until the group converges again.
Each phase also reports ``gc_pauses``: the pauses of the serve process's cyclic collector that began
in it (serve runs under bench/gc_pauses.py), as each one holds the event loop every answer waits for.
Beside them, the same run's raw figure: the broker's produce -> consume round trip, and the distinct member epochs members saw (about how many target assignments were computed; the
assignment interval batches a mass join into a few). ``--assignment-interval-ms 0`` shows the
cost without that batching. And the floor under the steady figure (bench/asyncio_floor.py): a bare
asyncio server's CPU per request, same members and interval, same run (``--no-floor`` skips it);
``steady.serve_cpu_vs_floor`` is the ratio. JSON to bench/results/large_group.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from asyncio_floor import floor
from confluent_kafka.admin import AdminClient, NewTopic
from gc_pauses import pause_figures, read_pauses
from runtime_bench import ROOT, cluster, percentile, print_serve_tail, raw_figures

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.event_loop import loop_factory
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.local_broker import free_port

HB_KEY, HB_VERSION = 68, 1
HB_API = "ConsumerGroupHeartbeat"
DESCRIBE_KEY, DESCRIBE_VERSION = 69, 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used, all its threads (Linux /proc)."""
    return _stat_cpu(Path(f"/proc/{pid}/stat"))


def _stat_cpu(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of the serve process's threads: its main thread (the event loop: gateway,
    group logic) apart, the rest summed by thread name (librdkafka's are named ``rdk:...``; the
    Python threads beside the loop, the log reader and writer, placement, all ``python``)."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            seconds = _stat_cpu(task / "stat")
            name = "main" if task.name == str(pid) else (task / "comm").read_text().strip()
        except OSError:
            continue  # a thread that ended meanwhile
        if name.startswith("rdk:broker"):
            name = "rdk:broker"  # one per broker connection, the name cut to 15 characters
        out[name] = out.get(name, 0.0) + seconds
    return out


def thread_cpu_delta(before: dict[str, float], after: dict[str, float], heartbeats: int) -> dict[str, Any]:
    """Per thread group: CPU ms per heartbeat between two ``thread_cpu`` readings (a thread that
    ended meanwhile is not in ``after``: the sum can be below the process's own figure)."""
    return {
        name: round((seconds - before.get(name, 0.0)) * 1000 / heartbeats, 4) if heartbeats else None
        for name, seconds in sorted(after.items(), key=lambda kv: before.get(kv[0], 0.0) - kv[1])
        if seconds - before.get(name, 0.0) > 0
    }


# serve pid -> the URL of its /metrics (see ``serve_process``)
_METRICS: dict[int, str] = {}
# serve pid -> the file its collector's pauses are logged to (see ``serve_process``)
_GC_LOG: dict[int, Path] = {}


def gc_during(pid: int, start: float, end: float) -> dict[str, Any]:
    """The serve process's collector pauses that began between two ``time.time()`` readings
    (``gc_pauses.pause_figures``): a pause holds the event loop, so every heartbeat waiting then."""
    return pause_figures(read_pauses(_GC_LOG[pid]), start, end)


_HANDLED = "groupcoord_gateway_handled_latency_seconds_bucket"


def handled_counts(pid: int, api: str) -> list[tuple[float, float]]:
    """Cumulative (le seconds, count) of the serve process's handled-latency histogram for ``api``."""
    with urllib.request.urlopen(_METRICS[pid], timeout=30) as answer:
        text = answer.read().decode()
    prefix = f'{_HANDLED}{{api="{api}",le="'
    out = []
    for line in text.splitlines():
        if line.startswith(prefix):
            le, count = line[len(prefix) :].split('"}')
            out.append((float(le), float(count)))
    return out


def handled_quantiles(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> dict[str, Any]:
    """p50/p99 of what the serve process handled between two ``handled_counts``, as the upper
    bound (ms) of the histogram bucket each falls in: from the handler's call to its answer, so
    neither the client's own delays nor the wait before the request was read are in it."""
    base = dict(before)
    deltas = [(le, count - base.get(le, 0.0)) for le, count in after]
    total = deltas[-1][1] if deltas else 0.0

    def bound(q: float) -> float | None:
        return next((le * 1000 for le, count in deltas if count >= q * total), None) if total else None

    return {"count": total, "p50_le_ms": bound(0.5), "p99_le_ms": bound(0.99)}


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.next_id = reader, writer, 1

    @classmethod
    async def open(cls, address: tuple[str, int]) -> Connection:
        return cls(*await asyncio.open_connection(*address))

    async def call(self, api_key: int, version: int, body: Message | bytes) -> Message:
        """``body`` is a request or a frame encoded before (its correlation id is set here)."""
        self.next_id += 1
        if isinstance(body, bytes):
            # Length (4 bytes), api key (2), version (2), then the correlation id.
            self.writer.write(b"".join((body[:8], self.next_id.to_bytes(4, "big"), body[12:])))
        else:
            self.writer.write(encode_request(RequestHeader(api_key, version, self.next_id, "bench-large"), body))
        size = int.from_bytes(await self.reader.readexactly(4), "big")
        correlation_id, response = decode_response(api_key, version, await self.reader.readexactly(size))
        assert correlation_id == self.next_id
        return response

    async def call_raw(self, frame: bytes) -> bytes:
        """``frame`` (encoded before; its correlation id is set here) sent; the answer's payload
        (correlation id first) as it came, for a caller that checks it without decoding it."""
        self.next_id += 1
        self.writer.write(b"".join((frame[:8], self.next_id.to_bytes(4, "big"), frame[12:])))
        size = int.from_bytes(await self.reader.readexactly(4), "big")
        payload = await self.reader.readexactly(size)
        assert int.from_bytes(payload[:4], "big") == self.next_id
        return payload

    def close(self) -> None:
        self.writer.close()


class Stats:
    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.heartbeats = 0
        self.errors: dict[str, int] = {}
        self.epochs: set[int] = set()


class Member:
    def __init__(self, group: str, topic: str, stats: Stats) -> None:
        self.group, self.topic, self.stats = group, topic, stats
        self.conn: Connection | None = None
        self.new_identity()
        self.stop = False
        self.leave = asyncio.Event()
        self.rejoined = asyncio.Event()
        self.rejoining = False
        self._wake: asyncio.Future[None] | None = None
        # The steady heartbeat's frame, encoded once per member epoch: the bench client runs
        # 5,000 members on the machine the serve process runs on, and what it spends encoding
        # is taken from the coordinator it measures.
        self._steady: tuple[int, bytes] | None = None

    def new_identity(self) -> None:
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self.epoch = 0
        self.owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] = []
        self.ack = True  # the join itself carries the (empty) owned partitions

    def request(self) -> ConsumerGroupHeartbeatRequest:
        joining = self.epoch == 0
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            rebalance_timeout_ms=300_000 if joining else -1,
            subscribed_topic_names=[self.topic] if joining else None,
            topic_partitions=list(self.owned) if self.ack else None,
        )

    def steady_frame(self) -> bytes | ConsumerGroupHeartbeatRequest:
        if self.epoch == 0 or self.ack:
            return self.request()
        if self._steady is None or self._steady[0] != self.epoch:
            header = RequestHeader(HB_KEY, HB_VERSION, 0, "bench-large")
            self._steady = (self.epoch, encode_request(header, self.request()))
        return self._steady[1]

    def tell_to_leave(self) -> None:
        self.leave.set()
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def heartbeat(self, body: ConsumerGroupHeartbeatRequest | bytes) -> ConsumerGroupHeartbeatResponse:
        assert self.conn is not None
        start = time.perf_counter()
        response = await self.conn.call(HB_KEY, HB_VERSION, body)
        self.stats.latencies_ms.append((time.perf_counter() - start) * 1000)
        self.stats.heartbeats += 1
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    async def run(self) -> None:
        interval = 5.0
        while not self.stop:
            if self.leave.is_set():
                await self.heartbeat(
                    ConsumerGroupHeartbeatRequest(group_id=self.group, member_id=self.member_id, member_epoch=-1)
                )
                self.leave.clear()
                self.new_identity()
                self.rejoining = True
            response = await self.heartbeat(self.steady_frame())
            self.ack = False
            if response.error_code:
                name = ErrorCode(response.error_code).name
                self.stats.errors[name] = self.stats.errors.get(name, 0) + 1
                if response.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                    self.epoch, self.owned, self.ack = 0, [], True
                    continue
                await self.sleep(1.0)
                continue
            self.epoch = response.member_epoch
            if self.rejoining:
                self.rejoining = False
                self.rejoined.set()
            self.stats.epochs.add(self.epoch)
            interval = response.heartbeat_interval_ms / 1000
            if response.assignment is not None:
                # A new assignment is acknowledged at once (what a client does after its callbacks).
                self.owned = [
                    ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
                    for tp in response.assignment.topic_partitions
                ]
                self.ack = True
                continue
            await self.sleep(interval)

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when told to leave (a future and a timer: ``wait_for`` on
        the event made a task per sleep)."""
        if self.leave.is_set():
            return
        loop = asyncio.get_running_loop()
        self._wake = wake = loop.create_future()
        timer = loop.call_later(seconds, _wake_up, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None


def _wake_up(wake: asyncio.Future[None]) -> None:
    if not wake.done():
        wake.set_result(None)


async def converged(describe: Connection, group: str, members: int) -> bool:
    response: Any = await describe.call(DESCRIBE_KEY, DESCRIBE_VERSION, ConsumerGroupDescribeRequest(group_ids=[group]))
    (described,) = response.groups
    if described.error_code or len(described.members) != members:
        return False
    if described.assignment_epoch != described.group_epoch:
        return False

    def flat(assignment: Any) -> set[tuple[Any, int]]:
        return {(tp.topic_id, p) for tp in assignment.topic_partitions for p in tp.partitions}

    return all(
        m.member_epoch == described.group_epoch and flat(m.assignment) == flat(m.target_assignment)
        for m in described.members
    )


async def wait_converged(
    describe: Connection, group: str, members: int, start: float, timeout: float, tasks: list[asyncio.Task[None]]
) -> float:
    while time.perf_counter() - start < timeout:
        for task in tasks:
            if task.done():
                # A member that stopped would keep the group from ever converging: say why.
                raise RuntimeError(f"a member stopped: {task.exception()!r}")
        if await converged(describe, group, members):
            return time.perf_counter() - start
        # Describing 5,000 members costs the coordinator CPU too: poll sparingly.
        await asyncio.sleep(2.0)
    raise TimeoutError(f"the group did not converge in {timeout}s")


def summary(stats: Stats, cpu: float, seconds: float) -> dict[str, Any]:
    lat = stats.latencies_ms or [0.0]
    return {
        "seconds": seconds,
        "heartbeats": stats.heartbeats,
        "heartbeats_per_s": stats.heartbeats / seconds if seconds else 0.0,
        "latency_ms": {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99), "max": max(lat)},
        "serve_cpu_s": cpu,
        "serve_cpu_ms_per_heartbeat": cpu * 1000 / stats.heartbeats if stats.heartbeats else None,
        "errors": dict(stats.errors),
        "distinct_member_epochs": len(stats.epochs),
    }


async def drive(args: argparse.Namespace, sidecar: tuple[str, int], topic: str, pid: int) -> dict[str, Any]:
    group = f"large-{uuid.uuid4().hex[:8]}"
    stats = Stats()
    members = [Member(group, topic, stats) for _ in range(args.members)]
    gate = asyncio.Semaphore(200)

    async def connect(member: Member) -> None:
        async with gate:
            member.conn = await Connection.open(sidecar)

    await asyncio.gather(*(connect(m) for m in members))
    describe = await Connection.open(sidecar)
    result: dict[str, Any] = {}
    tasks: list[asyncio.Task[None]] = []
    try:
        # Mass join: every member's first heartbeat at once.
        handled0 = handled_counts(pid, HB_API)
        threads0 = thread_cpu(pid)
        cpu0, start, wall0 = cpu_seconds(pid), time.perf_counter(), time.time()
        tasks = [asyncio.create_task(m.run()) for m in members]
        join_s = await wait_converged(describe, group, args.members, start, args.timeout, tasks)
        result["mass_join"] = {"converge_s": join_s, **summary(stats, cpu_seconds(pid) - cpu0, join_s)}
        result["mass_join"]["gc_pauses"] = gc_during(pid, wall0, time.time())
        # The event loop's thread apart (gateway, group logic, read-back): what a join costs the
        # one thread every answer waits for.
        result["mass_join"]["serve_cpu_ms_per_heartbeat_by_thread"] = thread_cpu_delta(
            threads0, thread_cpu(pid), stats.heartbeats
        )
        result["mass_join"]["serve_handled_ms"] = handled_quantiles(handled0, handled_counts(pid, HB_API))
        print("mass join", json.dumps(result["mass_join"]), flush=True)
        # Every pause since the process started (its imports and load among them): a log with
        # none would mean the pauses are not being logged at all.
        result["serve_gc_until_converged"] = gc_during(pid, 0.0, time.time())

        # Steady state: the heartbeat interval alone, no describes. First the interval after the
        # group converged, in which each member's first heartbeat without an acknowledgement is
        # answered through the handlers (a new request on its connection); then the steady state
        # proper, in which a member's heartbeat repeats its last one (``steady_answers``).
        async def heartbeats_for(seconds: float) -> dict[str, Any]:
            stats.__init__()  # type: ignore[misc]
            handled0 = handled_counts(pid, HB_API)
            threads0 = thread_cpu(pid)
            cpu0, start, wall0 = cpu_seconds(pid), time.perf_counter(), time.time()
            await asyncio.sleep(seconds)
            phase = summary(stats, cpu_seconds(pid) - cpu0, time.perf_counter() - start)
            phase["gc_pauses"] = gc_during(pid, wall0, time.time())
            phase["serve_cpu_ms_per_heartbeat_by_thread"] = thread_cpu_delta(
                threads0, thread_cpu(pid), stats.heartbeats
            )
            phase["serve_handled_ms"] = handled_quantiles(handled0, handled_counts(pid, HB_API))
            return phase

        if args.settle_seconds > 0:
            result["steady_first_interval"] = await heartbeats_for(args.settle_seconds)
            print("steady, first interval", json.dumps(result["steady_first_interval"]), flush=True)
        result["steady"] = await heartbeats_for(args.steady_seconds)
        print("steady", json.dumps(result["steady"]), flush=True)

        if not args.restart:
            return result
        # Rolling restart: each member leaves and rejoins as a new member, a batch at a time.
        stats.__init__()  # type: ignore[misc]
        handled0 = handled_counts(pid, HB_API)
        cpu0, start, wall0 = cpu_seconds(pid), time.perf_counter(), time.time()
        order = list(members)
        random.Random(7).shuffle(order)
        for i in range(0, len(order), args.restart_batch):
            batch = order[i : i + args.restart_batch]
            for m in batch:
                m.rejoined.clear()
                m.tell_to_leave()
            await asyncio.gather(*(m.rejoined.wait() for m in batch))
        rolled_s = time.perf_counter() - start
        restart_s = await wait_converged(describe, group, args.members, start, args.timeout, tasks)
        result["rolling_restart"] = {
            "all_restarted_s": rolled_s,
            "converge_s": restart_s,
            **summary(stats, cpu_seconds(pid) - cpu0, restart_s),
            "serve_handled_ms": handled_quantiles(handled0, handled_counts(pid, HB_API)),
            "gc_pauses": gc_during(pid, wall0, time.time()),
        }
        print("rolling restart", json.dumps(result["rolling_restart"]), flush=True)
    finally:
        for m in members:
            m.stop = True
            m.tell_to_leave()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in members:
            if m.conn is not None:
                m.conn.close()
        describe.close()
    return result


@contextlib.contextmanager
def serve_process(bootstrap: str, members: int, env: dict[str, str]) -> Iterator[tuple[tuple[str, int], int]]:
    """A ``groupcoord serve`` process for ``members`` connections, on one log partition:
    ((host, port) it listens on, its pid). Its log's tail is printed if the run fails."""
    port, metrics_port = free_port(), free_port()
    serve_log = tempfile.TemporaryFile()  # noqa: SIM115 (closed once serve has stopped)
    # Every collection of its cyclic collector logged as it ends (``bench/gc_pauses.py``, one
    # callback per collection): each phase reports the pauses that held its loop.
    fd, gc_name = tempfile.mkstemp(prefix="large-group-gc-", suffix=".log")
    os.close(fd)
    gc_log = Path(gc_name)
    env = {
        **os.environ,
        "GROUPCOORD_METRICS_LISTEN": f"127.0.0.1:{metrics_port}",
        "GROUPCOORD_GATEWAY__MAX_CONNECTIONS": str(members + 100),
        "GROUPCOORD_GATEWAY__MAX_CONNECTIONS_PER_IP": str(members + 100),
        **env,
    }
    serve = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "gc_pauses.py"), str(gc_log), "groupcoord.cli.main", "serve",
         "-b", bootstrap, "--listen", f"127.0.0.1:{port}",
         "--log-topic", f"large-log-{uuid.uuid4().hex[:6]}", "--partitions", "1"],
        stdout=subprocess.PIPE, stderr=serve_log, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        assert serve.stdout is not None and serve.stdout.readline().startswith("listening on")
        _METRICS[serve.pid] = f"http://127.0.0.1:{metrics_port}/metrics"
        _GC_LOG[serve.pid] = gc_log
        yield ("127.0.0.1", port), serve.pid
    except BaseException:
        print_serve_tail(serve_log)
        raise
    finally:
        serve.terminate()
        serve.wait(30)
        serve_log.close()
        gc_log.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--restart-batch", type=int, default=50)
    parser.add_argument(
        "--steady-seconds",
        type=float,
        default=60.0,
        help="the steady state's window (one minute: a whole cycle of the metadata refresh, see above)",
    )
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=None,
        help="the first interval after the group converged, measured apart (one heartbeat interval if unset; 0: none)",
    )
    parser.add_argument("--assignment-interval-ms", type=int, default=1000)
    parser.add_argument("--restart", action=argparse.BooleanOptionalAction, default=True, help="rolling restart phase")
    parser.add_argument("--event-loop", choices=("auto", "uvloop", "asyncio"), default="auto")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--heartbeat-interval-ms", type=int, default=None, help="the group's heartbeat interval (Kafka's 5 s if unset)"
    )
    parser.add_argument("--floor", action=argparse.BooleanOptionalAction, default=True, help="the asyncio floor")
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "large_group.json"))
    args = parser.parse_args()
    if args.settle_seconds is None:
        args.settle_seconds = (args.heartbeat_interval_ms or 5000) / 1000
    with cluster(args.bootstrap) as (bootstrap, label):
        topic = f"large-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(120)
        group_config = {"group.consumer.assignment.interval.ms": str(args.assignment_interval_ms)}
        if args.heartbeat_interval_ms is not None:
            # Members heartbeat at the interval the coordinator asks for (and a rebalance waits for them).
            interval = str(args.heartbeat_interval_ms)
            group_config["group.consumer.heartbeat.interval.ms"] = interval
            group_config["group.consumer.min.heartbeat.interval.ms"] = interval
        env = {
            # The first member to join owns every partition and acknowledges them all in one
            # heartbeat: more array elements than the default limit allows with 10,000 partitions.
            "GROUPCOORD_GATEWAY__MAX_GROUP_REQUEST_ELEMENTS": str(max(10_000, 2 * args.partitions)),
            "GROUPCOORD_EVENT_LOOP": args.event_loop,
            "GROUPCOORD_GROUP": json.dumps(group_config),
        }
        with serve_process(bootstrap, args.members, env) as (sidecar, pid):
            result = asyncio.run(drive(args, sidecar, topic, pid))
        # The raw figure beside a heartbeat (each one an acknowledged log write when it changes
        # state): the broker's own produce -> consume round trip, same broker, same run.
        raw = raw_figures(bootstrap, 1000, 200)
    if args.floor:
        interval_ms = args.heartbeat_interval_ms or 5000
        anchor = floor(args.members, args.steady_seconds, interval_ms, args.event_loop)
        raw["asyncio_floor"] = anchor
        steady, per_request = result.get("steady"), anchor["server_cpu_ms_per_request"]
        if steady and steady.get("serve_cpu_ms_per_heartbeat") and per_request:
            steady["serve_cpu_vs_floor"] = steady["serve_cpu_ms_per_heartbeat"] / per_request
    out = {
        "benchmark": "large_group",
        "broker": label,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "params": {k: v for k, v in vars(args).items() if k not in ("out", "bootstrap")},
        "serve_event_loop": "uvloop" if loop_factory(args.event_loop) else "asyncio",
        "raw": raw,
        **result,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
