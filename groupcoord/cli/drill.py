"""``groupcoord drill``: prove failover with real processes, real clients and real kills.

It starts N ``groupcoord serve`` processes on one log (and an embedded broker when no cluster is
named), runs a workload of real clients through them (a producer; KIP-848 consumers and classic
cooperative consumers that commit after every poll; every sidecar in ``bootstrap.servers``),
kills (or pauses and resumes) a random process at each interval and restarts it, then reports:

- acknowledged commits lost: a commit acknowledged to a client and not in the final offsets;
- double deliveries: a record delivered to a member while another member of its group held the
  partition (by their own assignment callbacks);
- committed offsets that went backwards, sampled once a second;
- per fault, the time until every group had a commit acknowledged again, and where it went (read
  from the serve processes' own log lines: until a surviving process saw the placement rebalance,
  until a shard of the drill's groups was assigned again, until it was loaded, until the groups'
  commits were acknowledged); p50/p99/max over the faults;
- per fault, the longest any group then went without an acknowledged commit until the next fault
  (a move after the first acknowledgement counts there); p50/p99/max;
- commit latency p50/p99;
- per fault its wall time and each group's own recovery; the clients' librdkafka lines (coordinator
  lookups, joins, Metadata) go to ``client-<member>.log`` beside the serve processes' logs. A fault
  never recovered from counts in the percentiles as the time from it to the drill's end.

Ctrl-C or SIGTERM ends the workload at once: the processes it started are stopped (the serve
processes and the embedded broker; they also get SIGTERM from the kernel if the drill itself is
killed) and the report so far is printed, marked ``interrupted`` (acknowledged commits are then
not checked against the final offsets).
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from groupcoord.cli.common import quiet_rdkafka_logger
from groupcoord.cli.output import Format, Output, print_document
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.local_broker import BrokerStartError, LocalBroker, die_with_parent, free_port

DATA_PARTITIONS = 6
LOG_PARTITIONS = 12
_LOADED = re.compile(r"shard \d+ loaded in (\d+\.\d+)s")
# serve's own progress lines, read for the breakdown of each recovery (groupcoord/coordinator/server.py and
# groupcoord/coordinator/runtime/placement.py say them at INFO).
_LOADED_SHARD = re.compile(r"shard (\d+) loaded in ")
_OWNS = re.compile(r"owns shards \[([0-9, ]*)\] \(assigned \[([0-9, ]*)\]\)")
_REBALANCE = re.compile(r"^placement rebalance")
_EVICTED = re.compile(r"^placement evicted")
SIGNALS = ("KILL", "STOP", "TERM")
_RETRY = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}


class ServeChild:
    """One ``groupcoord serve`` process of the drill."""

    def __init__(self, bootstrap: str, topic: str, session_timeout_ms: int, log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.bootstrap = bootstrap
        self.topic = topic
        self.session_timeout_ms = session_timeout_ms
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.ready = threading.Event()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            # The settings read GROUPCOORD_* names in any case: an inherited metrics_listen in any
            # spelling would beat or join the one below.
            **{k: v for k, v in os.environ.items() if k.upper() != "GROUPCOORD_METRICS_LISTEN"},
            # No health/metrics endpoint: every child would take the same address (an inherited
            # GROUPCOORD_METRICS_LISTEN, or the default 127.0.0.1:9095 that anything on the host
            # may hold), and a serve told an address it cannot bind exits. The drill reads none of it.
            "GROUPCOORD_METRICS_LISTEN": "off",
            "GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": str(self.session_timeout_ms),
            "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": str(max(100, self.session_timeout_ms // 10)),
            # Shard moves are INFO lines (JSON): the breakdown of each recovery is read from them.
            "GROUPCOORD_LOG_LEVEL": "INFO",
            "GROUPCOORD_LOG_FORMAT": "json",
        }
        args = [sys.executable, "-m", "groupcoord.cli.main", "serve", "-b", self.bootstrap, "--listen", self.address]
        args += ["--log-topic", self.topic, "--partitions", str(LOG_PARTITIONS)]
        with open(self.log, "a") as stderr:
            self.proc = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, preexec_fn=die_with_parent
            )
        self.ready.clear()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                if line.startswith("listening on "):
                    self.ready.set()

        threading.Thread(target=pump, daemon=True).start()

    def send(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        self.terminate()
        self.wait_stopped()

    def terminate(self) -> None:
        """Asks for a graceful stop (a paused process is resumed first); see ``wait_stopped``."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()

    def wait_stopped(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Stats:
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[tuple[str, int], int] = field(default_factory=dict)  # highest acknowledged commit
    acks: list[tuple[float, str]] = field(default_factory=list)  # (time, group)
    latencies: list[float] = field(default_factory=list)
    holders: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    double_deliveries: int = 0
    delivered: int = 0
    commit_failures: int = 0
    produced: int = 0
    backwards: list[str] = field(default_factory=list)
    last_error: dict[str, str] = field(default_factory=dict)  # member -> last commit error
    last_ack: dict[str, float] = field(default_factory=dict)  # member -> time of its last ack


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    # The drill kills coordinators on purpose: librdkafka's complaints about it are not output.
    return {**config, "logger": quiet_rdkafka_logger}


def client_logger(path: Path) -> logging.Logger:
    """A logger that appends a client's librdkafka lines, timestamped, to ``path``: the drill's
    clients say there why they waited (a connection refused, a coordinator lookup), for the
    breakdown of a slow recovery."""
    logger = logging.getLogger(f"groupcoord.drill.client.{path.stem}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    if not logger.handlers:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    return logger


class Member(threading.Thread):
    def __init__(
        self, name: str, group: str, protocol: str, bootstrap: str, topic: str, stats: Stats, log: Path | None = None
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.member = name
        self.group = group
        self.topic = topic
        self.stats = stats
        self.stop_event = threading.Event()
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "socket.timeout.ms": 5000,
            "reconnect.backoff.max.ms": 500,
        }
        if protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config["partition.assignment.strategy"] = "cooperative-sticky"
            config["session.timeout.ms"] = 10_000
            config["heartbeat.interval.ms"] = 1000
        if log is not None:
            # What the client did while no commit was acknowledged: its coordinator lookups and
            # broker (re)connections, with the addresses Metadata gave it.
            config["debug"] = "cgrp,metadata"
            self.consumer = Consumer({**config, "logger": client_logger(log)})
        else:
            self.consumer = Consumer(quiet(config))

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.stats.lock:
            for tp in partitions:
                self.stats.holders.setdefault((self.group, tp.partition), set()).add(self.member)

    def _released(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.stats.lock:
            for tp in partitions:
                self.stats.holders.setdefault((self.group, tp.partition), set()).discard(self.member)

    def run(self) -> None:
        self.consumer.subscribe(
            [self.topic], on_assign=self._assigned, on_revoke=self._released, on_lost=self._released
        )
        while not self.stop_event.is_set():
            try:
                messages = self.consumer.consume(num_messages=200, timeout=0.5)
            except KafkaException:
                continue
            records = [m for m in messages if m.error() is None]
            if not records:
                continue
            self._deliver(records)
            self._commit(records)
        self._released(self.consumer, [TopicPartition(self.topic, p) for p in range(DATA_PARTITIONS)])
        self.consumer.close()

    def _deliver(self, records: list[Message]) -> None:
        with self.stats.lock:
            self.stats.delivered += len(records)
            for m in records:
                holders = self.stats.holders.get((self.group, m.partition() or 0), set())
                if holders - {self.member}:
                    self.stats.double_deliveries += 1

    def _commit(self, records: list[Message]) -> None:
        last: dict[int, int] = {}
        for m in records:
            last[m.partition() or 0] = (m.offset() or 0) + 1
        offsets = [TopicPartition(self.topic, p, o) for p, o in last.items()]
        started = time.perf_counter()
        try:
            result = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            with self.stats.lock:
                self.stats.commit_failures += 1
                self.stats.last_error[self.member] = str(exc.args[0])
            return
        elapsed = time.perf_counter() - started
        now = time.monotonic()
        with self.stats.lock:
            self.stats.latencies.append(elapsed)
            for tp in result or []:
                if tp.error is None:
                    key = (self.group, tp.partition)
                    self.stats.acked[key] = max(self.stats.acked.get(key, 0), tp.offset)
            self.stats.acks.append((now, self.group))
            self.stats.last_ack[self.member] = now


def committed_offsets(bootstrap: str, group: str, topic: str, timeout: float = 60) -> dict[int, int]:
    consumer = Consumer(quiet({"bootstrap.servers": bootstrap, "group.id": group}))
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                rows = consumer.committed([TopicPartition(topic, p) for p in range(DATA_PARTITIONS)], timeout=10)
                return {r.partition: r.offset for r in rows if r.offset >= 0}
            except KafkaException as exc:
                if time.monotonic() > deadline or exc.args[0].code() not in _RETRY:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def run_drill(
    processes: int,
    duration: float,
    kill_every: float,
    sig: str,
    bootstrap: str | None,
    session_timeout_ms: int,
    console: Console,
    workdir: Path,
    seed: int | None = None,
    interrupted: threading.Event | None = None,
    faults: int | None = None,
    base_port: int | None = None,
) -> dict[str, Any]:
    """The drill; it ends early, with the report so far, once ``interrupted`` is set. With
    ``faults``, the workload runs until that many faults were made (``duration`` is then unused).
    ``base_port``: serve process i listens on ``base_port + i`` and the embedded broker on
    ``base_port + processes`` (else free ports the kernel picks, anywhere in its ephemeral range)."""
    rng = random.Random(seed)
    stopping = interrupted or threading.Event()
    embedded: LocalBroker | None = None
    if bootstrap is None:
        embedded = LocalBroker(
            port=base_port + processes if base_port else free_port(), log_file=workdir / "broker.log"
        )
        embedded.start()
        bootstrap = embedded.bootstrap
    run_id = uuid.uuid4().hex[:8]
    log_topic = f"groupcoord-drill-{run_id}"
    data_topic = f"drill-data-{run_id}"
    children = [
        ServeChild(
            bootstrap, log_topic, session_timeout_ms, workdir / f"serve{i}.log", base_port + i if base_port else None
        )
        for i in range(processes)
    ]
    members: list[Member] = []
    stop_sampling = threading.Event()
    stats = Stats()
    kills: list[dict[str, Any]] = []
    try:
        admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
        admin.create_topics([NewTopic(data_topic, DATA_PARTITIONS, 1)])[data_topic].result(30)
        for child in children:
            child.start()
        deadline = time.monotonic() + 120
        for child in children:
            while not child.ready.wait(0.1) and not stopping.is_set():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"serve on {child.address} did not start; see {child.log}")
        console.print(f"{processes} serve processes ready; workload running", highlight=False)
        everyone = ",".join(c.address for c in children)
        groups = {"drill-kip848": "consumer", "drill-classic": "classic"}
        for group, protocol in groups.items():
            for i in range(2):
                name = f"{group}-{i}"
                members.append(
                    Member(name, group, protocol, everyone, data_topic, stats, workdir / f"client-{name}.log")
                )
        for m in members:
            m.start()
        producer = Producer(quiet({"bootstrap.servers": everyone, "linger.ms": 5, "socket.timeout.ms": 5000}))

        def sample() -> None:
            seen: dict[tuple[str, int], int] = {}
            while not stop_sampling.wait(1.0):
                for group in groups:
                    try:
                        offsets = committed_offsets(everyone, group, data_topic, timeout=5)
                    except KafkaException:
                        continue
                    for p, o in offsets.items():
                        before = seen.get((group, p), 0)
                        if o < before:
                            with stats.lock:
                                stats.backwards.append(f"{group}/{p}: {before} -> {o}")
                        seen[(group, p)] = max(before, o)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        stats.produced = 0
        next_kill = started + kill_every
        with Progress(
            TextColumn("[bold]drill[/bold]"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("drill", total=faults or duration, status="")
            last_fault = started
            i = 0

            def faulting(now: float) -> bool:
                return len(kills) < faults if faults is not None else now - started < duration

            while not stopping.is_set() and (
                faulting(now := time.monotonic())
                or (
                    # After the last fault, keep the load on until every group is served again
                    # (bounded), so its recovery is measured too.
                    now - last_fault < 120 and any(_recovery(k, groups, stats) is None for k in kills)
                )
            ):
                producer.produce(data_topic, value=str(i).encode(), partition=i % DATA_PARTITIONS)
                i += 1
                stats.produced = i
                producer.poll(0)
                if now >= next_kill and faulting(now):
                    victim = rng.randrange(processes)
                    kills.append(_fault(children[victim], sig, session_timeout_ms))
                    last_fault = next_kill = time.monotonic()
                    next_kill += kill_every
                with stats.lock:
                    status = (
                        f"produced {i} delivered {stats.delivered} commits {len(stats.latencies)} "
                        f"faults {len(kills)} double deliveries {stats.double_deliveries}"
                    )
                progress.update(task, completed=len(kills) if faults else min(duration, now - started), status=status)
                time.sleep(0.005)
            # Interrupted: what is in flight is not waited for.
            producer.flush(1 if stopping.is_set() else 30)
        for m in members:
            m.stop_event.set()
        for m in members:
            m.join(5 if stopping.is_set() else 60)
        stop_sampling.set()
        sampler.join(5 if stopping.is_set() else 30)
        lost: list[str] | None = None
        if not stopping.is_set():
            lost = []
            for group in groups:
                final = committed_offsets(everyone, group, data_topic)
                for (g, p), acked in stats.acked.items():
                    if g == group and final.get(p, -1) < acked:
                        lost.append(f"{g}/{p}: acknowledged {acked}, committed {final.get(p)}")
        return _result(
            processes,
            time.monotonic() - started if faults else duration,
            kill_every,
            sig,
            session_timeout_ms,
            stats,
            kills,
            groups,
            lost,
            children,
            started,
        )
    finally:
        for m in members:
            m.stop_event.set()
        stop_sampling.set()
        # All at once: one after the other, each stop waited for a handover to the next to stop.
        for child in children:
            child.terminate()
        for child in children:
            child.wait_stopped()
        if embedded is not None:
            # Killed: its memory store has nothing to keep, and Tansu lingers 5 s on SIGTERM.
            embedded.stop(graceful=False)


def _result(
    processes: int,
    duration: float,
    kill_every: float,
    sig: str,
    session_timeout_ms: int,
    stats: Stats,
    kills: list[dict[str, Any]],
    groups: dict[str, str],
    lost: list[str] | None,
    children: list[ServeChild],
    started: float,
) -> dict[str, Any]:
    """The report; ``lost`` is None when the drill was interrupted before the final check."""
    lines = {child.address: serve_lines(child.log) for child in children}
    shards = {partition_for(g, LOG_PARTITIONS) for g in groups}
    # Each fault's window ends at the next fault, the last one's now.
    finished = time.monotonic()
    ends = [float(k["at"]) for k in kills[1:]] + [finished] * bool(kills)
    for kill, end in zip(kills, ends, strict=True):
        kill["recovered_s"] = _recovery(kill, groups, stats)
        kill["recovered_s_by_group"] = {g: _recovery(kill, {g: p}, stats) for g, p in groups.items()}
        kill["killed_at"] = datetime.fromtimestamp(float(kill["wall"]), UTC).isoformat(timespec="milliseconds")
        kill["longest_gap_s"] = longest_gap(float(kill["at"]), end, groups, stats.acks)
        kill.update(breakdown(kill, lines, shards))
        # A fault never recovered from counts in the percentiles as long as the drill ran after
        # it (a lower bound): left out, a stalled placement group read as a good p99.
        kill["_bound"] = (
            kill["recovered_s"] if kill["recovered_s"] is not None else round(finished - float(kill["at"]), 2)
        )
        kill.pop("at", None)
        kill.pop("wall", None)
    loads = [
        float(m.group(1))
        for child in children
        if child.log.exists()
        for m in _LOADED.finditer(child.log.read_text(errors="replace"))
    ]
    recoveries = [k.pop("_bound") for k in kills]
    gaps = [k["longest_gap_s"] for k in kills]
    # The faults that took a shard of the drill's groups away: the others cost nothing to recover.
    owner_faults = [k for k in kills if k["group_shards_lost"]]
    owner_recoveries = [r for k, r in zip(kills, recoveries, strict=True) if k["group_shards_lost"]]
    return {
        "interrupted": lost is None,
        "processes": processes,
        "duration_s": duration,
        "kill_every_s": kill_every,
        "signal": sig,
        "session_timeout_ms": session_timeout_ms,
        "records_produced": stats.produced,
        "records_delivered": stats.delivered,
        "commits_acknowledged": len(stats.latencies),
        "commit_failures": stats.commit_failures,
        "commits_by_group": {g: sum(1 for _, x in stats.acks if x == g) for g in groups},
        "last_ack_s_by_member": {m: round(t - started, 1) for m, t in stats.last_ack.items()},
        "last_commit_error_by_member": stats.last_error,
        # None: not checked (interrupted before the final offsets were read).
        "acknowledged_commits_lost": None if lost is None else len(lost),
        "lost": lost or [],
        "double_deliveries": stats.double_deliveries,
        "offsets_backwards": len(stats.backwards),
        "backwards": stats.backwards,
        "commit_latency_ms_p50": round(percentile(stats.latencies, 50) * 1000, 2),
        "commit_latency_ms_p99": round(percentile(stats.latencies, 99) * 1000, 2),
        "shard_loads": len(loads),
        "shard_load_s_p50": round(percentile(loads, 50), 3),
        "shard_load_s_max": round(max(loads, default=0.0), 3),
        "faults": len(kills),
        "recovery_s_p50": round(percentile(recoveries, 50), 2),
        "recovery_s_p99": round(percentile(recoveries, 99), 2),
        "recovery_s_max": round(max(recoveries, default=0.0), 2),
        "not_recovered": sum(1 for k in kills if k["recovered_s"] is None),
        # Per fault, the longest a group went without an acknowledged commit until the next fault:
        # unlike the recovery it also counts a move after the first acknowledgement (a stopping
        # process that serves on for a while, or the restarted process's rebalance moving shards).
        "longest_gap_s_p50": round(percentile(gaps, 50), 2),
        "longest_gap_s_p99": round(percentile(gaps, 99), 2),
        "longest_gap_s_max": round(max(gaps, default=0.0), 2),
        "owner_faults": len(owner_faults),
        "owner_recovery_s_p50": round(percentile(owner_recoveries, 50), 2),
        "owner_recovery_s_p99": round(percentile(owner_recoveries, 99), 2),
        "owner_recovery_s_max": round(max(owner_recoveries, default=0.0), 2),
        # Medians over the owner faults of each step's end, in seconds after the fault.
        "owner_breakdown_s_p50": {step: _median_of(owner_faults, step) for step in BREAKDOWN_STEPS},
        "kills": kills,
    }


def _median_of(faults: list[dict[str, Any]], step: str) -> float | None:
    """The median of a breakdown step over the faults that have it (None: none has it)."""
    values = [float(k[step]) for k in faults if k.get(step) is not None]
    return round(percentile(values, 50), 2) if values else None


def _fault(child: ServeChild, sig: str, session_timeout_ms: int) -> dict[str, Any]:
    at, wall = time.monotonic(), time.time()
    if sig == "KILL":
        child.kill()
        child.start()
    elif sig == "TERM":
        child.stop()  # a graceful stop: it hands its shards over before it exits
        child.start()
    else:
        child.send(signal.SIGSTOP)
        time.sleep(session_timeout_ms / 1000 * 1.5)
        child.send(signal.SIGCONT)
    return {"process": child.address, "signal": sig, "at": at, "wall": wall}


# Each step's end, in seconds after the fault: a process removed the dead one from the placement
# group (``PeerWatch``; absent when the session timeout did it); a surviving process saw the
# placement group rebalance; a lost shard of the drill's groups was assigned to a process; every such shard was
# loaded; every group had a commit acknowledged (``recovered_s``).
BREAKDOWN_STEPS = ("detected_s", "rebalance_seen_s", "assigned_s", "loaded_s", "recovered_s")


def serve_lines(path: Path) -> list[tuple[float, str]]:
    """(time, message) of each JSON log line of a serve process (its restarts append to it)."""
    out: list[tuple[float, str]] = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
            ts = datetime.fromisoformat(str(record["ts"]).replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError):
            continue  # a line cut off by a kill, or not serve's
        out.append((ts, str(record.get("msg", ""))))
    return out


def breakdown(kill: dict[str, Any], lines: dict[str, list[tuple[float, str]]], shards: set[int]) -> dict[str, Any]:
    """Where a fault's recovery went, from the serve processes' log lines (see ``BREAKDOWN_STEPS``)."""
    wall, victim = float(kill["wall"]), str(kill["process"])
    owned: set[int] = set()
    for ts, msg in lines.get(victim, []):
        m = _OWNS.search(msg)
        if ts < wall and m:
            owned = {int(x) for x in m.group(1).split(",") if x.strip()}
    lost = sorted(owned & shards)
    out: dict[str, Any] = {"group_shards_lost": lost}
    if not lost:
        return out
    after = [(ts - wall, address, msg) for address, found in lines.items() for ts, msg in found if ts >= wall]
    after.sort()
    # The victim's own lines before it died (a TERM'd process says it leaves) are not a survivor's.
    detected = [t for t, _, msg in after if _EVICTED.search(msg)]
    rebalance = [t for t, a, msg in after if _REBALANCE.search(msg) and a != victim]
    assigned = [
        t
        for t, _, msg in after
        if (m := _OWNS.search(msg)) and set(lost) & {int(x) for x in m.group(2).split(",") if x.strip()}
    ]
    loaded: dict[int, float] = {}
    for t, _, msg in after:
        m = _LOADED_SHARD.search(msg)
        if m and int(m.group(1)) in lost:
            loaded.setdefault(int(m.group(1)), t)
    out["detected_s"] = round(detected[0], 2) if detected else None
    out["rebalance_seen_s"] = round(rebalance[0], 2) if rebalance else None
    out["assigned_s"] = round(assigned[0], 2) if assigned else None
    out["loaded_s"] = round(max(loaded.values()), 2) if len(loaded) == len(lost) else None
    return out


def _recovery(kill: dict[str, Any], groups: dict[str, str], stats: Stats) -> float | None:
    """Seconds from the fault until every group had a commit acknowledged again."""
    at = float(kill["at"])
    worst = 0.0
    for group in groups:
        after = [t for t, g in stats.acks if g == group and t >= at]
        if not after:
            return None
        worst = max(worst, min(after) - at)
    return round(worst, 2)


def longest_gap(start: float, end: float, groups: dict[str, str], acks: list[tuple[float, str]]) -> float:
    """The longest time, from ``start`` to ``end``, that any group went without an acknowledged commit."""
    worst = 0.0
    for group in groups:
        last = start
        for t in sorted(t for t, g in acks if g == group and start <= t <= end):
            worst = max(worst, t - last)
            last = t
        worst = max(worst, end - last)
    return round(worst, 2)


def _steps(times: dict[str, Any]) -> str:
    """``detected 0.27s, rebalance_seen 0.49s, ...`` for the steps of BREAKDOWN_STEPS measured."""
    return ", ".join(f"{s.removesuffix('_s')} {times[s]}s" for s in BREAKDOWN_STEPS[:-1] if times.get(s) is not None)


def report_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The report as MEASURE / VALUE rows: what the text format prints."""
    rows = []
    for name in REPORTED:
        value = result[name]
        if isinstance(value, dict):  # the median breakdown: the same words as each fault's line
            value = _steps(value) or "-"
        elif name == "records_delivered" and value is not None:
            # About twice records_produced, which reads as double delivery unless said.
            groups = sorted(result.get("commits_by_group", {}))
            value = f"{value} (summed over {len(groups)} groups that each read every record: {', '.join(groups)})"
        rows.append({"measure": name, "value": "not checked" if value is None else str(value)})
    for n, kill in enumerate(result["kills"], 1):
        steps = _steps(kill)
        rows.append(
            {
                "measure": f"fault {n} ({kill['process']})",
                "value": f"served again in {kill['recovered_s']}s" + (f" ({steps})" if steps else ""),
            }
        )
    return rows


def print_report(result: dict[str, Any]) -> None:
    """A table on a terminal, plain columns in a pipe or a file, as every other command prints."""
    Output(Format.text).result(["measure", "value"], report_rows(result), title="failover drill")


REPORTED = (
    "processes",
    "duration_s",
    "signal",
    "session_timeout_ms",
    "records_produced",
    "records_delivered",
    "commits_acknowledged",
    "acknowledged_commits_lost",
    "double_deliveries",
    "offsets_backwards",
    "commit_latency_ms_p50",
    "commit_latency_ms_p99",
    "shard_load_s_p50",
    "shard_load_s_max",
    "faults",
    "recovery_s_p50",
    "recovery_s_p99",
    "recovery_s_max",
    "longest_gap_s_p50",
    "longest_gap_s_p99",
    "longest_gap_s_max",
    "owner_faults",
    "owner_recovery_s_p50",
    "owner_recovery_s_p99",
    "owner_recovery_s_max",
    "owner_breakdown_s_p50",
)


def violations(result: dict[str, Any]) -> list[str]:
    out = []
    if result["acknowledged_commits_lost"]:
        out.append(f"{result['acknowledged_commits_lost']} acknowledged commits lost")
    if result["double_deliveries"]:
        out.append(f"{result['double_deliveries']} records delivered to two members at once")
    if result["offsets_backwards"]:
        out.append(f"{result['offsets_backwards']} committed offsets went backwards")
    return out


def drill(
    processes: Annotated[int, typer.Option(min=1, help="serve processes to run.")] = 3,
    duration: Annotated[float, typer.Option(min=5, help="seconds of workload.")] = 120,
    kill_every: Annotated[float, typer.Option(min=1, help="seconds between faults.")] = 15,
    signal_name: Annotated[
        str,
        typer.Option(
            "--signal", help="KILL (kill -9 and restart), TERM (graceful stop and restart) or STOP (pause, resume)."
        ),
    ] = ("KILL"),
    faults: Annotated[
        int | None, typer.Option(min=1, help="Run until this many faults were made (instead of --duration).")
    ] = None,
    bootstrap_servers: Annotated[
        str | None, typer.Option("--bootstrap-servers", "-b", help="Backing cluster; omit for an embedded broker.")
    ] = None,
    session_timeout_ms: Annotated[int, typer.Option(min=1000, help="placement session timeout.")] = 6000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    seed: Annotated[int | None, typer.Option(help="Seed for the choice of victims.")] = None,
    base_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535 - 64,
            help="serve process i listens on BASE_PORT+i, an embedded broker on BASE_PORT+processes"
            " (default: free ports).",
        ),
    ] = None,
) -> None:
    """Run serve processes under client load, kill them one at a time, and check nothing was lost."""
    console = Console(stderr=True)
    sig = signal_name.upper()
    if sig not in SIGNALS:
        console.print(f"error: --signal must be KILL, TERM or STOP, not {signal_name!r}", highlight=False)
        raise typer.Exit(2)
    workdir = Path(tempfile.mkdtemp(prefix="groupcoord-drill-"))
    console.print(f"logs of the processes: {workdir}", highlight=False)
    interrupted = threading.Event()
    received: list[int] = []

    def interrupt(signum: int, frame: object) -> None:
        # Only a flag: the drill's own thread stops its children and reports (a second signal too).
        received.append(signum)
        interrupted.set()

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        result = run_drill(
            processes,
            duration,
            kill_every,
            sig,
            bootstrap_servers,
            session_timeout_ms,
            console,
            workdir,
            seed,
            interrupted,
            faults,
            base_port,
        )
    except (BrokerStartError, RuntimeError, KafkaException) as exc:
        console.print(f"error: drill could not run: {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    problems = violations(result)
    if as_json:
        # The CLI's one shape: the faults are the items, the measures fields beside them.
        fields = {k: v for k, v in result.items() if k != "kills"}
        print_document(result["kills"], [{"error": p} for p in problems], **fields)
    else:
        print_report(result)
    if received:
        name = signal.Signals(received[0]).name
        console.print(
            f"drill interrupted by {name}: its processes are stopped; the report above is what was measured"
            " until then (acknowledged commits were not checked against the final offsets)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(128 + received[0])
    for problem in problems:
        console.print(f"violation: {problem}", highlight=False)
    raise typer.Exit(1 if problems else 0)
