"""Helpers for driving real Kafka clients through the gateway.

``Ownership`` is the invariant checker: every member's rebalance callbacks report to one shared
map of partition -> owner, and an assignment of a partition another member still owns is a
violation (DESIGN.md invariant 1, as the clients observe it). Each member is driven from its own
thread, as applications run consumers; every callback's bookkeeping is done whole under the
ownership lock, and a client only acknowledges a revocation to the coordinator after its revoke
callback has returned, so the order seen here is causal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.client_records import offset_of, partition_of

Record = tuple[int, int]  # (partition, offset)


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` on the backing broker directly and wait until every partition has a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    wait_for(
        lambda: (
            len([p for p in admin.list_topics(topic, timeout=5).topics[topic].partitions.values() if p.leader >= 0])
            == partitions
        ),
        20,
        f"topic {topic} to have {partitions} partitions with leaders",
    )


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int, tag: str = "") -> set[Record]:
    """Produce ``per_partition`` records to each partition; returns their (partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    delivered: set[Record] = set()
    errors: list[str] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            delivered.add((msg.partition(), msg.offset()))

    for i in range(per_partition * partitions):
        producer.produce(topic, value=f"{tag}{i}".encode(), partition=i % partitions, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    assert len(delivered) == per_partition * partitions
    return delivered


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, step: Callable[[], object] | None = None
) -> None:
    """Poll ``condition`` (running ``step`` between checks) until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.05)


@dataclass
class Event:
    at: float
    member: str
    kind: str  # "assign" | "revoke" | "lost"
    partitions: tuple[int, ...]


@dataclass
class Ownership:
    owner: dict[int, str] = field(default_factory=dict)
    history: list[Event] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    # The group's committed offsets as far as the members know: updated on every successful commit.
    committed: dict[int, int] = field(default_factory=dict)
    last_change: float = field(default_factory=time.monotonic)
    # Held for every change above and while ``drive`` checks its condition: members run in threads.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def _note(self, member: str, kind: str, partitions: Sequence[int]) -> None:
        self.last_change = time.monotonic()
        self.history.append(Event(self.last_change, member, kind, tuple(sorted(partitions))))

    def assign(self, member: str, partitions: Sequence[int]) -> None:
        with self.lock:
            self._note(member, "assign", partitions)
            for p in partitions:
                holder = self.owner.get(p)
                if holder is not None:
                    self.violations.append(f"{member} was assigned partition {p} while {holder} still owned it")
                self.owner[p] = member

    def give_up(self, member: str, partitions: Sequence[int], kind: str) -> None:
        with self.lock:
            self._note(member, kind, partitions)
            for p in partitions:
                if self.owner.get(p) != member:
                    self.violations.append(f"{member} had partition {p} {kind}d but the owner was {self.owner.get(p)}")
                else:
                    del self.owner[p]

    def of(self, member: str) -> set[int]:
        return {p for p, m in self.owner.items() if m == member}

    def since(self, mark: int, member: str, kind: str) -> set[int]:
        """Partitions named in ``member``'s ``kind`` callbacks after history index ``mark``."""
        return {p for e in self.history[mark:] if e.member == member and e.kind == kind for p in e.partitions}

    def describe(self) -> str:
        with self.lock:
            tail = "\n".join(f"  {e.at:.2f} {e.member} {e.kind} {list(e.partitions)}" for e in self.history[-30:])
            return f"owner={dict(sorted(self.owner.items()))}\nviolations={self.violations}\nhistory:\n{tail}"


# How long a stopped member's thread may take to finish its step: one consume call and one commit,
# which may have to wait for a rebalance the other members are still completing.
STEP_GRACE = 30.0


class Member:
    """A confluent-kafka consumer in a group that commits synchronously after every batch it consumes
    and, like a careful application, commits what it still holds pending in its revoke callback.

    A commit that fails with an error in ``tolerated`` (a classic commit racing a new generation, say)
    stays pending and is retried on the next step. Whenever the member starts consuming a partition
    it checks that the first record is exactly at the group's last successfully committed offset:
    nothing consumed again from before that point, nothing skipped.
    """

    def __init__(
        self,
        name: str,
        bootstrap: str,
        group: str,
        topic: str,
        ownership: Ownership,
        conf: dict[str, Any],
        tolerated: frozenset[int] = frozenset(),
    ) -> None:
        self.name = name
        self.topic = topic
        self.ownership = ownership
        self.tolerated = tolerated
        self.records: list[Record] = []
        self.pending: dict[int, int] = {}  # partition -> offset to commit
        self.starting: set[int] = set()  # assigned partitions with no record consumed yet
        self.commit_errors: list[str] = []
        self.closed = False
        self.thread: threading.Thread | None = None  # the thread ``drive`` steps this member from
        # The client's own view of its assignment at the end of its last step, read there: while a
        # thread is in a call on a client, another thread's call on it waits (confluent-kafka
        # serializes the calls on one client, holding the GIL while it waits), so nobody else asks.
        self.view: set[int] = set()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **conf,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned = [tp.partition for tp in partitions]
        with self.ownership.lock:
            self.ownership.assign(self.name, assigned)
            self.starting.update(assigned)

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = [tp.partition for tp in partitions]
        self._commit([p for p in revoked if p in self.pending])
        with self.ownership.lock:
            self._forget(revoked)
            self.ownership.give_up(self.name, revoked, "revoke")

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = [tp.partition for tp in partitions]
        with self.ownership.lock:
            self._forget(lost)
            self.ownership.give_up(self.name, lost, "lost")

    def _forget(self, partitions: Iterable[int]) -> None:
        for p in partitions:
            self.pending.pop(p, None)
            self.starting.discard(p)

    def _commit(self, partitions: Sequence[int]) -> None:
        if not partitions:
            return
        offsets = {p: self.pending[p] for p in partitions}
        try:
            self.consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())], asynchronous=False
            )
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() not in self.tolerated:
                raise
            self.commit_errors.append(f"{self.name}: commit {offsets}: {error.name()}")
            return
        with self.ownership.lock:
            self.ownership.committed.update(offsets)
            for p, o in offsets.items():
                if self.pending.get(p) == o:
                    del self.pending[p]

    def step(self, timeout: float = 0.05) -> None:
        """One consume call (rebalance callbacks run inside it), then a synchronous commit of what is pending."""
        messages = self.consumer.consume(200, timeout)
        with self.ownership.lock:
            for message in messages:
                if message.error():
                    raise KafkaException(message.error())
                p, o = partition_of(message), offset_of(message)
                if p in self.starting:
                    self.starting.discard(p)
                    start = self.ownership.committed.get(p, 0)
                    if o != start:
                        self.ownership.violations.append(
                            f"{self.name} started partition {p} at offset {o}; the committed offset was {start}"
                        )
                self.records.append((p, o))
                self.pending[p] = o + 1
            committing = sorted(self.pending)
        self._commit(committing)
        view = self.assignment()
        with self.ownership.lock:
            self.view = view

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.thread is not None:
                # Only after a failed ``drive``: a step still in a client call must end before the close.
                self.thread.join(STEP_GRACE)
                if self.thread.is_alive():
                    return  # closing under a running call could crash the process; the test failed anyway
            self.consumer.close()


class _Stepping:
    """One thread per member, each stepping its member until told to stop.

    A member stops only once every member has been told to, so none stops polling while another is
    mid-step: a synchronous commit the client queued behind its own JoinGroup needs the others to
    rejoin, which they may only do from their poll (a rebalance callback to serve first).
    """

    def __init__(self, members: Sequence[Member]) -> None:
        self.members = members
        self.stop = threading.Event()
        self.failures: list[BaseException] = []
        self._told = 0
        self._told_lock = threading.Lock()
        self._abandoned = threading.Event()  # a member never finished its step: the others stop anyway
        for m in members:
            m.thread = threading.Thread(target=self._run, args=(m,), name=f"drive-{m.name}", daemon=True)
        for m in members:
            assert m.thread is not None
            m.thread.start()

    def _run(self, member: Member) -> None:
        told = False
        try:
            while True:
                if self.stop.is_set() and not told:
                    told = True
                    self._tell()
                if told and (self._told == len(self.members) or self._abandoned.is_set()):
                    return
                member.step()
        except BaseException as exc:  # handed to the driving thread, which raises it
            self.failures.append(exc)
            self.stop.set()
            if not told:
                self._tell()

    def _tell(self) -> None:
        with self._told_lock:
            self._told += 1

    def join(self, report: bool = True) -> None:
        """Stop every member and wait for its thread; with ``report``, raise what a member's step raised
        or that one did not stop."""
        self.stop.set()
        deadline = time.monotonic() + STEP_GRACE
        for m in self.members:
            assert m.thread is not None
            m.thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [m.name for m in self.members if m.thread is not None and m.thread.is_alive()]
        if stuck:
            self._abandoned.set()
            for m in self.members:
                assert m.thread is not None
                m.thread.join(STEP_GRACE)
            stuck = [m.name for m in self.members if m.thread is not None and m.thread.is_alive()]
        for m in self.members:
            if m.thread is not None and not m.thread.is_alive():
                m.thread = None
        if not report:
            return
        if self.failures:
            raise self.failures[0]
        if stuck:
            raise AssertionError(f"members {stuck} did not finish their step after being told to stop")


def drive(
    members: Iterable[Member], until: Callable[[], bool], timeout: float, what: str, ownership: Ownership
) -> None:
    """Step every open member, each from its own thread, until ``until()`` holds.

    ``until`` is checked under the ownership lock while the members run, then again once they have
    all stopped (the members are driven on until it holds then), so what the caller asserts next is
    what ``until`` saw, with no member running.
    """
    live = [m for m in members if not m.closed]
    deadline = time.monotonic() + timeout
    while True:
        stepping = _Stepping(live)
        try:
            while not stepping.failures:
                with ownership.lock:
                    if until():
                        break
                    if time.monotonic() > deadline:
                        views = {m.name: sorted(m.view) for m in live}
                        raise AssertionError(
                            f"timed out after {timeout}s waiting for {what}\n"
                            f"client assignments={views}\n{ownership.describe()}"
                        )
                time.sleep(0.05)
        except BaseException:
            stepping.join(report=False)  # the error on its way out says more than a member that did not stop
            raise
        stepping.join()
        if until():
            return


def settled(members: Sequence[Member], ownership: Ownership, partitions: int, quiet: float) -> bool:
    """Every partition owned by exactly one live member, balanced, matching each client's own view,
    nothing left to commit, and no rebalance callback for ``quiet`` seconds."""
    live = [m for m in members if not m.closed]
    if any(m.pending for m in live):
        return False
    names = {m.name for m in live}
    if set(ownership.owner) != set(range(partitions)) or not set(ownership.owner.values()) <= names:
        return False
    counts = [len(ownership.of(m.name)) for m in live]
    if max(counts) - min(counts) > 1:
        return False
    if any(m.view != ownership.of(m.name) for m in live):
        return False
    return time.monotonic() - ownership.last_change >= quiet
