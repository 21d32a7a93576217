"""Several real ``groupcoord serve`` processes sharing one log, for the high-availability tests."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from groupcoord.coordinator.runtime.placement import Node, Placement, PlacementConfig
from groupcoord.local_broker import free_port
from tests.processes import popen

_OWNS = re.compile(r"owns shards \[([0-9, ]*)\]")

_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}

# Short enough that a failover in a test takes seconds, long enough for a loaded 2-core machine.
SESSION_TIMEOUT_MS = 6000


def readiness(address: str) -> tuple[int, dict[str, object]]:
    """serve's ``/readyz`` at ``address`` (its metrics_listen): the status (0: no answer) and the body."""
    try:
        with urllib.request.urlopen(f"http://{address}/readyz", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except OSError:
        return 0, {}


class Sidecar:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        log: Path,
        partitions: int = 6,
        port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = port or free_port()
        self.env = env or {}
        self.bootstrap_servers = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self._listening = threading.Event()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def spawn(self) -> Sidecar:
        env = {
            **os.environ,
            "GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": "500",
            # Shard moves are INFO records (JSON lines): the tests follow them.
            "GROUPCOORD_LOG_LEVEL": "INFO",
            **self.env,
        }
        args = [
            sys.executable,
            "-m",
            "groupcoord.cli.main",
            "serve",
            "-b",
            self.bootstrap_servers,
            "--listen",
            self.address,
        ]
        args += ["--log-topic", self.topic, "--partitions", str(self.partitions)]
        stderr = open(self.log, "a")  # noqa: SIM115 - handed to the child
        self._listening.clear()
        self.proc = popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        stderr.close()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                if line.startswith("listening on "):
                    self._listening.set()

        threading.Thread(target=pump, daemon=True).start()
        return self

    def wait_listening(self, timeout: float = 90) -> Sidecar:
        if not self._listening.wait(timeout):
            raise AssertionError(f"{self.address} did not start; log: {self.log.read_text()[-2000:]}")
        return self

    def start(self) -> Sidecar:
        return self.spawn().wait_listening()

    def records(self) -> list[dict[str, Any]]:
        """serve's stderr: one JSON object a line, every line (a line cut off by a kill excepted)."""
        text = self.log.read_text() if self.log.exists() else ""
        lines = text.splitlines()
        out = []
        for i, line in enumerate(lines):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                assert i == len(lines) - 1, f"not a JSON line: {line!r}"
        return out

    def lines(self) -> list[str]:
        """What serve itself said (shard moves, the reason it stopped), not its modules' details."""
        return [str(r["msg"]) for r in self.records() if r.get("logger") == "groupcoord.coordinator.server"]

    def owned(self) -> set[int]:
        found: set[int] = set()
        for line in self.lines():
            m = _OWNS.search(line)
            if m:
                found = {int(x) for x in m.group(1).split(",") if x.strip()}
        return found

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(10)
        return self.proc.returncode


def stop_all(sidecars: Sequence[Sidecar]) -> None:
    """A teardown's stop: ``kill -9``, nothing is asserted on it. A graceful stop hands the shards
    over to the next process and sits out a placement rebalance first (half the rebalance
    timeout on the local broker: 3-10 s a process). Every test has its own log topic, so nothing
    a killed process leaves behind reaches another test; the tests of what a stop does call
    ``stop`` themselves and check it."""
    for s in sidecars:
        if s.alive:
            s.kill9()


def recording_placement(bootstrap: str, config: PlacementConfig, moves: list[tuple[str, list[int]]]) -> Placement:
    """A placement of one process (node 1,000,001) that notes each move of its shards in ``moves``."""
    return Placement(
        {"bootstrap.servers": bootstrap},
        config,
        Node(1_000_001, "127.0.0.1", free_port()),
        lambda shards: moves.append(("assigned", shards)),
        lambda shards, lost: moves.append(("lost" if lost else "revoked", shards)),
    )


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Committer:
    """A real consumer committing increasing offsets for one partition; remembers what was acknowledged."""

    def __init__(self, bootstrap: str, group: str, topic: str = "t", partition: int = 0) -> None:
        self.group, self.topic, self.partition = group, topic, partition
        # Each commit's result by its offset: a commit that timed out here may still be retried by
        # librdkafka and answered during a later commit_once, whose result it must not pass for.
        self.results: dict[int, object] = {}
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "socket.timeout.ms": 3000,
                "reconnect.backoff.max.ms": 200,
                "on_commit": self._on_commit,
            }
        )
        self.next = 1
        self.acked: list[int] = []
        self.sent: set[int] = set()
        self.failures = 0
        self._last_success = 0

    def _on_commit(self, err: object, partitions: list[TopicPartition]) -> None:
        offset = int(partitions[0].offset)
        result = err if err is not None else partitions[0].error
        self.results[offset] = result
        if result is None:
            self._last_success = offset

    def commit_once(self, deadline_s: float = 5.0) -> bool:
        offset = self.next
        self.next += 1
        self.sent.add(offset)
        self.consumer.commit(offsets=[TopicPartition(self.topic, self.partition, offset)], asynchronous=True)
        deadline = time.monotonic() + deadline_s
        while offset not in self.results and time.monotonic() < deadline:
            self.consumer.poll(0.05)
        if offset in self.results and self.results[offset] is None:
            self.acked.append(offset)
            return True
        self.failures += 1
        return False

    def commit_until_acked(self, timeout: float) -> int:
        """Commits until one is acknowledged and no earlier commit is still in flight (so the
        acknowledged offset is the committed one, unless the coordinator lost it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.commit_once() and self._settled(deadline):
                return self.acked[-1]
        raise AssertionError(f"no commit of {self.group} acknowledged within {timeout}s")

    def _settled(self, deadline: float) -> bool:
        while not self.sent <= self.results.keys() and time.monotonic() < deadline:
            self.consumer.poll(0.05)
        return self._last_success == self.acked[-1]

    def committed(self, timeout: float = 60) -> int:
        """The committed offset; retried while shards move (librdkafka does not retry OffsetFetch
        on NOT_COORDINATOR, a Java client would)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                rows = self.consumer.committed([TopicPartition(self.topic, self.partition)], timeout=10)
                return int(rows[0].offset)
            except KafkaException as exc:
                if time.monotonic() > deadline or not exc.args[0].retriable() and exc.args[0].code() not in _MOVING:
                    raise
                time.sleep(0.5)

    def close(self) -> None:
        self.consumer.close()


class Background:
    """Runs a Committer in a thread until stopped."""

    def __init__(self, committer: Committer) -> None:
        self.committer = committer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.committer.commit_once()

    def __enter__(self) -> Background:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def serve_alone(
    bootstrap: str, stderr_path: Path, settings: dict[str, str], ready_within: float
) -> tuple[subprocess.Popen[str], str]:
    """One ``serve`` of two shards on ``bootstrap`` whose environment holds no GROUPCOORD_ setting
    but ``settings``, its stderr in ``stderr_path``; returned, with its health address, once it has
    said it listens and ``/readyz`` says its shards are owned and loaded."""
    listen, health = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORD_")},
        "GROUPCOORD_METRICS_LISTEN": health,
        **settings,
    }
    command = [sys.executable, "-m", "groupcoord.cli.main", "serve", "-b", bootstrap, "--listen", listen]
    with open(stderr_path, "w") as stderr:
        serve = popen([*command, "--partitions", "2"], stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    try:
        assert serve.stdout is not None and serve.stdout.readline() == f"listening on {listen}\n"
        wait_for(lambda: readiness(health)[0] == 200, ready_within, "serve to own and load its shards")
    except BaseException:
        serve.kill()
        serve.wait(10)
        raise
    return serve, health
