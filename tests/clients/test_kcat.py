"""kcat's balanced consumer (``-G``) through the gateway, in both group protocols.

Classic: Debian's kcat with its own librdkafka (2.0), eager range and cooperative-sticky (KIP-429).
KIP-848: the same kcat binary with the librdkafka bundled in the confluent-kafka wheel (``LD_LIBRARY_PATH``), which takes
``-X group.protocol=consumer``. Two kcat processes share one stderr pipe, so their rebalance lines
(written before kcat acknowledges a revocation) arrive in causal order and feed the ``Ownership``
checker. kcat prints a rebalance line in several unbuffered writes, so two processes could interleave
inside one line; ``stdbuf -eL`` makes each line a single write (atomic on a pipe below PIPE_BUF).
kcat commits on its own (auto-commit, and on revocation and close); what it committed is read back
through the sidecar at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from tests.clients.driven import PARTITIONS, PHASE_TIMEOUT, QUIET, committed_offsets
from tests.clients.support import Ownership, Record, create_topic, produce, wait_for
from tests.integration.serve_process import ServeProcess
from tests.processes import popen

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# "% Group g rebalanced (memberid m): assigned: t [0], t [1]" (eager) and
# "% Group g rebalanced: incremental assignment of 2 partition(s) (memberid m, COOPERATIVE rebalance protocol): t [0], t [1]".
REBALANCED = re.compile(
    r"^% Group \S+ rebalanced(?: \(memberid (?P<eager_member>[^)]*)\): (?P<eager_kind>assigned|revoked): "
    r"|: incremental (?P<inc_kind>assignment|revoke) of \d+ partition\(s\) \(memberid (?P<inc_member>[^,]*), [^)]*\): )"
    r"(?P<partitions>.*)$"
)


def kcat_binary() -> str:
    found = shutil.which("kcat") or shutil.which("kafkacat")
    if found is None:
        pytest.fail("kcat is not installed (Debian: apt-get install kcat; .ci/run installs it)")
    return found


def line_buffered_stderr() -> str:
    found = shutil.which("stdbuf")
    if found is None:
        pytest.fail("stdbuf (coreutils) is needed to keep kcat's stderr lines whole")
    return found


def bundled_librdkafka(directory: Path) -> dict[str, str]:
    """An environment in which kcat loads the KIP-848-capable librdkafka of the confluent-kafka wheel."""
    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    [lib] = libs.glob("librdkafka*.so.1")
    (directory / "librdkafka.so.1").symlink_to(lib)
    return {**os.environ, "LD_LIBRARY_PATH": str(directory)}


class KcatGroup:
    """kcat balanced consumers of one group whose rebalance lines share one pipe, read by one thread."""

    def __init__(self, kcat: str, bootstrap: str, group: str, topic: str, conf: list[str], env: dict[str, str]) -> None:
        stdbuf = [line_buffered_stderr(), "-eL"]
        self.args = [*stdbuf, kcat, "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", *conf]
        self.topic = topic
        self.env = env
        self.ownership = Ownership()
        self.names: dict[str, str] = {}  # member id -> our name
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.records: dict[str, list[Record]] = {}
        self.other: list[str] = []  # stderr lines that are not rebalance lines
        self.read_fd, self.write_fd = os.pipe()
        self.lock = threading.Lock()
        self.next_member: str | None = None
        self.threads = [threading.Thread(target=self._read_stderr, daemon=True)]
        self.threads[0].start()

    def _read_stderr(self) -> None:
        with os.fdopen(self.read_fd) as lines:
            for line in lines:
                self._apply(line.rstrip("\n"))

    def _apply(self, line: str) -> None:
        match = REBALANCED.match(line)
        with self.lock:
            if match is None:
                self.other.append(line)
                return
            member_id = match["eager_member"] or match["inc_member"]
            kind = match["eager_kind"] or match["inc_kind"]
            if member_id not in self.names:
                # Members are started one at a time, each after the previous one was assigned something.
                assert self.next_member is not None, line
                self.names[member_id], self.next_member = self.next_member, None
            name = self.names[member_id]
            found = [int(p) for t, p in re.findall(r"(\S+) \[(\d+)\]", match["partitions"]) if t == self.topic]
            if kind.startswith("assign"):
                self.ownership.assign(name, found)
            else:
                self.ownership.give_up(name, found, "revoke")

    def start(self, name: str) -> None:
        with self.lock:
            self.next_member = name
        proc = popen(
            [*self.args, "-u", "-X", f"client.id={name}", "-f", "%p %o\\n", self.topic],
            stdout=subprocess.PIPE,
            stderr=self.write_fd,
            text=True,
            env=self.env,
        )
        self.procs[name] = proc
        self.records[name] = []
        thread = threading.Thread(target=self._read_stdout, args=(name, proc), daemon=True)
        thread.start()
        self.threads.append(thread)
        wait_for(lambda: self.ownership.of(name) != set() or proc.poll() is not None, PHASE_TIMEOUT, f"{name} assigned")
        assert proc.poll() is None, self.describe()

    def _read_stdout(self, name: str, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            p, o = line.split()
            self.records[name].append((int(p), int(o)))

    def stop(self, name: str) -> None:
        """SIGTERM: kcat leaves the group cleanly, committing what it consumed."""
        proc = self.procs[name]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PHASE_TIMEOUT) == 0, self.describe()

    def consumed(self) -> list[Record]:
        return [r for records in self.records.values() for r in records]

    def settled(self, live: list[str], expected: set[Record]) -> bool:
        with self.lock:
            owner = self.ownership.owner
            if set(owner) != set(range(PARTITIONS)) or set(owner.values()) != set(live):
                return False
            counts = [len(self.ownership.of(name)) for name in live]
            quiet = time.monotonic() - self.ownership.last_change >= QUIET
        return max(counts) - min(counts) <= 1 and quiet and set(self.consumed()) >= expected

    def describe(self) -> str:
        return f"{self.ownership.describe()}\nother kcat output:\n" + "\n".join(self.other[-20:])

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        os.close(self.write_fd)
        for thread in self.threads:
            thread.join(10)


@pytest.fixture
def kcat_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    kcat = kcat_binary()
    classic = ["-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500"]
    if request.param == "classic":
        yield kcat, classic, dict(os.environ)
    elif request.param == "cooperative":
        # KIP-429 with Debian's librdkafka: incremental revocation, as with KIP-848.
        yield kcat, [*classic, "-X", "partition.assignment.strategy=cooperative-sticky"], dict(os.environ)
    else:
        env = bundled_librdkafka(tmp_path)
        version = subprocess.run([kcat, "-V"], capture_output=True, text=True, env=env, check=True).stdout
        assert f"librdkafka {confluent_kafka.libversion()[0]}" in version, version
        yield kcat, ["-X", "group.protocol=consumer"], env


@pytest.mark.parametrize("kcat_env", ["classic", "cooperative", "consumer"], indirect=True)
def test_kcat_balanced_consumers(
    kcat_env: tuple[str, list[str], dict[str, str]], bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """Two kcat processes: the second joins and the first leaves (incrementally with KIP-848), no partition
    owned twice, every record consumed, and kcat's commits read back complete."""
    kcat, conf, env = kcat_env
    incremental = "group.protocol=consumer" in conf or "partition.assignment.strategy=cooperative-sticky" in conf
    topic, group = unique_name, f"{unique_name}-kcat"
    create_topic(bootstrap, topic, PARTITIONS)
    members = KcatGroup(kcat, sidecar.bootstrap, group, topic, conf, env)
    ownership = members.ownership
    try:
        expected = produce(sidecar.bootstrap, topic, 10, PARTITIONS, "a")
        members.start("k0")
        wait_for(lambda: members.settled(["k0"], expected), PHASE_TIMEOUT, "k0 to own everything")

        mark = len(ownership.history)
        members.start("k1")
        expected |= produce(sidecar.bootstrap, topic, 10, PARTITIONS, "b")
        wait_for(lambda: members.settled(["k0", "k1"], expected), PHASE_TIMEOUT, "k1 to join")
        assert ownership.violations == [], members.describe()
        if incremental:
            assert ownership.since(mark, "k0", "assign") == set(), members.describe()
            assert ownership.since(mark, "k0", "revoke") == ownership.of("k1"), members.describe()

        mark = len(ownership.history)
        members.stop("k0")
        expected |= produce(sidecar.bootstrap, topic, 10, PARTITIONS, "c")
        wait_for(lambda: members.settled(["k1"], expected), PHASE_TIMEOUT, "k0's leave to settle")
        assert ownership.violations == [], members.describe()
        if incremental:
            assert ownership.since(mark, "k1", "revoke") == set(), members.describe()
        members.stop("k1")

        assert set(members.consumed()) == expected
        high = {p: max(o for q, o in expected if q == p) + 1 for p in range(PARTITIONS)}
        assert committed_offsets(sidecar.bootstrap, group, topic, PARTITIONS) == high
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{members.describe()}") from None
    finally:
        members.close()
