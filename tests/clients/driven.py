"""Consumers of other languages driven through a line protocol, and the group scenario they all pass.

A driver program (Java, Node) runs any number of consumers of one group in one process. It reads
commands on stdin, one a line (``join NAME``, ``leave NAME``, ``quit``), and writes events on stdout,
one JSON object a line:

- ``assign`` / ``revoke`` / ``lost`` with ``partitions``: from the client's rebalance callbacks (or, for
  a client without callbacks, from the moment its owned set changes, before it tells the coordinator);
- ``records`` with ``records`` ([partition, offset] pairs) as the member consumes them;
- ``commit`` / ``commit_error`` with ``offsets`` ({partition: offset}) after each synchronous commit;
- ``assignment`` with ``partitions``: the client's own view of what it owns, whenever it changes;
- ``left`` once a member has closed; ``error`` with ``error`` when a member failed.

Every member commits after each batch it consumes and commits what it holds in its revoke callback.
Events are written before a callback returns, so their order across members is causal, and the same
``Ownership`` checker as the confluent-kafka tests sees them.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from tests.clients.support import Ownership, Record, produce, wait_for
from tests.processes import popen

PARTITIONS = 6
PER_PARTITION = 10
QUIET = 2.5  # seconds without a rebalance callback before a group counts as settled
PHASE_TIMEOUT = 40


@dataclass
class DrivenMember:
    name: str
    records: list[Record] = field(default_factory=list)
    starting: set[int] = field(default_factory=set)  # assigned partitions with no record consumed yet
    view: set[int] = field(default_factory=set)  # what the client says it owns
    commit_errors: list[str] = field(default_factory=list)
    commits: int = 0
    left: bool = False


class Driver:
    """One driver process; ``pump`` applies the events it has written so far to ``ownership``."""

    def __init__(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.ownership = Ownership()
        self.members: dict[str, DrivenMember] = {}
        self.errors: list[str] = []
        self.raw: list[str] = []  # every event line, for failure messages
        self.log = log
        self._events: queue.Queue[str | None] = queue.Queue()
        self._stderr = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.argv = list(argv)
        self.proc = popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env
        )
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: self._ready, 60, "the client driver to start", self.pump)

    _ready = False

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._events.put(line)
        self._events.put(None)

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def join(self, name: str) -> DrivenMember:
        self.members[name] = DrivenMember(name)
        self.send(f"join {name}")
        return self.members[name]

    def leave(self, name: str) -> None:
        self.send(f"leave {name}")
        wait_for(lambda: self.members[name].left, PHASE_TIMEOUT, f"{name} to close", self.pump)

    def live(self) -> list[DrivenMember]:
        return [m for m in self.members.values() if not m.left]

    def pump(self) -> None:
        """Apply every event written so far (waiting a little for the first one)."""
        try:
            line = self._events.get(timeout=0.05)
        except queue.Empty:
            return
        while True:
            if line is None:
                if not self.errors or "exited" not in self.errors[-1]:
                    self.errors.append(f"the driver exited ({self.proc.poll()}); its log:\n{self.tail()}")
                raise AssertionError(self.errors[-1])
            self._apply(line)
            try:
                line = self._events.get_nowait()
            except queue.Empty:
                return

    def _apply(self, line: str) -> None:
        self.raw.append(line.rstrip("\n"))
        try:
            event: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            self.errors.append(f"not an event: {line!r}")
            raise AssertionError(self.errors[-1]) from None
        kind = event["ev"]
        if kind == "ready":
            self._ready = True
            return
        if kind == "error":
            self.errors.append(f"{event.get('member')}: {event['error']}")
            raise AssertionError(f"{self.errors[-1]}\n{self.tail()}")
        member = self.members[event["member"]]
        partitions = [int(p) for p in event.get("partitions", [])]
        offsets = {int(p): int(o) for p, o in event.get("offsets", {}).items()}
        if kind == "assign" and partitions:
            self.ownership.assign(member.name, partitions)
            member.starting.update(partitions)
        elif kind in ("revoke", "lost") and partitions:
            self.ownership.give_up(member.name, partitions, kind)
            member.starting.difference_update(partitions)
        elif kind == "records":
            for p, o in event["records"]:
                if p in member.starting:
                    member.starting.discard(p)
                    start = self.ownership.committed.get(p, 0)
                    if o != start:
                        self.ownership.violations.append(
                            f"{member.name} started partition {p} at offset {o}; the committed offset was {start}"
                        )
                member.records.append((p, o))
        elif kind == "commit":
            member.commits += 1
            self.ownership.committed.update(offsets)
        elif kind == "commit_error":
            member.commit_errors.append(f"{member.name}: commit {offsets}: {event['error']}")
        elif kind == "assignment":
            member.view = set(partitions)
        elif kind == "left":
            member.left = True

    def describe(self) -> str:
        """The ownership history, the last events and the driver's log, for a failure message."""
        events = "\n".join(self.raw[-60:])
        return f"{self.ownership.describe()}\nlast events:\n{events}\ndriver log:\n{self.tail()}"

    def tail(self) -> str:
        self._stderr.flush()
        return self.log.read_text()[-3000:]

    def consumed(self) -> list[Record]:
        return [r for m in self.members.values() for r in m.records]

    def pending(self) -> bool:
        """Some consumed record's offset is not committed yet."""
        high: dict[int, int] = {}
        for p, o in self.consumed():
            high[p] = max(high.get(p, 0), o + 1)
        return any(self.ownership.committed.get(p) != o for p, o in high.items())

    def settled(self, partitions: int, quiet: float) -> bool:
        """Every partition owned by exactly one live member, balanced, matching each client's own view,
        everything consumed committed, and no rebalance callback for ``quiet`` seconds."""
        live = self.live()
        owner = self.ownership.owner
        if self.pending() or set(owner) != set(range(partitions)):
            return False
        if not set(owner.values()) <= {m.name for m in live}:
            return False
        counts = [len(self.ownership.of(m.name)) for m in live]
        if max(counts) - min(counts) > 1:
            return False
        if any(m.view != self.ownership.of(m.name) for m in live):
            return False
        return time.monotonic() - self.ownership.last_change >= quiet

    def wait(self, until: Callable[[], bool], what: str) -> None:
        try:
            wait_for(until, PHASE_TIMEOUT, what, self.pump)
        except AssertionError as exc:
            views = {m.name: sorted(m.view) for m in self.live()}
            raise AssertionError(f"{exc}\nclient views={views}\n{self.describe()}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(40)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()


def committed_offsets(sidecar_bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets, read back through OffsetFetch at the sidecar by another client."""
    reader = Consumer({"bootstrap.servers": sidecar_bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        reader.close()
    return {tp.partition: tp.offset for tp in found}


def run_group_scenario(
    driver: Driver, sidecar_bootstrap: str, group: str, topic: str, incremental: bool, tolerated: Sequence[str] = ()
) -> None:
    """Three members share six partitions; a fourth joins; one leaves; everything consumed is committed
    and read back; after the whole group has gone a new member resumes exactly at the committed offsets.

    ``incremental``: a join or leave moves only what must move (cooperative and KIP-848 protocols).
    ``tolerated``: substrings of the commit errors a member may see while the group rebalances (a classic
    commit racing a new generation fails in Kafka too; the member commits again, or in its revoke callback).
    """
    ownership = driver.ownership

    def caught_up_and_settled(expected: set[Record]) -> Callable[[], bool]:
        return lambda: set(driver.consumed()) >= expected and driver.settled(PARTITIONS, QUIET)

    # 1. Three members: every partition assigned exactly once, two each.
    expected = produce(sidecar_bootstrap, topic, PER_PARTITION, PARTITIONS, "a")
    for i in range(3):
        driver.join(f"m{i}")
    driver.wait(caught_up_and_settled(expected), "three members to settle")
    assert ownership.violations == [], driver.describe()
    assert sorted(len(ownership.of(f"m{i}")) for i in range(3)) == [2, 2, 2], driver.describe()

    # 2. A fourth member joins while records keep arriving.
    before = {m.name: ownership.of(m.name) for m in driver.live()}
    mark = len(ownership.history)
    driver.join("m3")
    arriving = produce(sidecar_bootstrap, topic, PER_PARTITION, PARTITIONS, "b")
    expected |= arriving
    driver.wait(caught_up_and_settled(expected), "the fourth member to settle")
    assert ownership.violations == [], driver.describe()
    after = {m.name: ownership.of(m.name) for m in driver.live()}
    assert after["m3"], driver.describe()
    if incremental:
        for name, kept in before.items():
            # Only shrinks: nothing new, and what it keeps was never revoked in between.
            assert after[name] <= kept, driver.describe()
            assert ownership.since(mark, name, "assign") == set(), driver.describe()
            assert ownership.since(mark, name, "revoke") == kept - after[name], driver.describe()
            assert ownership.since(mark, name, "lost") == set(), driver.describe()
            # It kept consuming its partitions through the rebalance.
            assert {r for r in arriving if r[0] in after[name]} <= set(driver.members[name].records)

    # 3. A member leaves: its partitions move to the others.
    gone = ownership.of("m0")
    before = {m.name: ownership.of(m.name) for m in driver.live() if m.name != "m0"}
    mark = len(ownership.history)
    driver.leave("m0")
    assert ownership.of("m0") == set(), driver.describe()
    expected |= produce(sidecar_bootstrap, topic, PER_PARTITION, PARTITIONS, "c")
    driver.wait(caught_up_and_settled(expected), "the leave to settle")
    assert ownership.violations == [], driver.describe()
    after = {m.name: ownership.of(m.name) for m in driver.live()}
    assert gone <= set().union(*after.values())
    if incremental:
        for name, kept in before.items():
            assert kept <= after[name], driver.describe()
            assert ownership.since(mark, name, "revoke") == set(), driver.describe()
            assert ownership.since(mark, name, "lost") == set(), driver.describe()

    # 4. Everything consumed and committed, and the commits read back through the sidecar.
    errors = [e for m in driver.members.values() for e in m.commit_errors]
    assert [e for e in errors if not any(t in e for t in tolerated)] == [], errors
    # Who commits depends on timing (an eager member may lose every record it read to a rebalance);
    # that the group's commits succeed and are complete is what step 4 proves.
    assert sum(m.commits for m in driver.members.values()) > 0, driver.describe()
    assert set(driver.consumed()) == expected
    if not errors:  # twice only after a commit that lost a race
        assert len(driver.consumed()) == len(expected)
    high = {p: max(o for q, o in expected if q == p) + 1 for p in range(PARTITIONS)}
    assert committed_offsets(sidecar_bootstrap, group, topic, PARTITIONS) == high

    # 5. The whole group goes; a new member resumes exactly at the committed offsets.
    for m in driver.live():
        driver.leave(m.name)
    later = produce(sidecar_bootstrap, topic, PER_PARTITION, PARTITIONS, "d")
    fresh = driver.join("m4")
    driver.wait(lambda: len(fresh.records) >= len(later) and not driver.pending(), "the new member to catch up")
    assert sorted(fresh.records) == sorted(later)
    assert ownership.violations == [], driver.describe()
    high = {p: max(o for q, o in later if q == p) + 1 for p in range(PARTITIONS)}
    assert committed_offsets(sidecar_bootstrap, group, topic, PARTITIONS) == high
