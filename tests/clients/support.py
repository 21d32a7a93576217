"""Helpers for driving real Kafka clients through the gateway.

``Ownership`` is the invariant checker: every member's rebalance callbacks report to one shared
map of partition -> owner, and an assignment of a partition another member still owns is a
violation (DESIGN.md invariant 1, as the clients observe it). All members are driven from one
thread, so callbacks run one at a time; a client only acknowledges a revocation to the
coordinator after its revoke callback has returned, so the order seen here is causal.
"""

from __future__ import annotations

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

    def _note(self, member: str, kind: str, partitions: Sequence[int]) -> None:
        self.last_change = time.monotonic()
        self.history.append(Event(self.last_change, member, kind, tuple(sorted(partitions))))

    def assign(self, member: str, partitions: Sequence[int]) -> None:
        self._note(member, "assign", partitions)
        for p in partitions:
            holder = self.owner.get(p)
            if holder is not None:
                self.violations.append(f"{member} was assigned partition {p} while {holder} still owned it")
            self.owner[p] = member

    def give_up(self, member: str, partitions: Sequence[int], kind: str) -> None:
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
        tail = "\n".join(f"  {e.at:.2f} {e.member} {e.kind} {list(e.partitions)}" for e in self.history[-30:])
        return f"owner={dict(sorted(self.owner.items()))}\nviolations={self.violations}\nhistory:\n{tail}"


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
        self.ownership.assign(self.name, assigned)
        self.starting.update(assigned)

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = [tp.partition for tp in partitions]
        self._commit([p for p in revoked if p in self.pending])
        self._forget(revoked)
        self.ownership.give_up(self.name, revoked, "revoke")

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = [tp.partition for tp in partitions]
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
        self.ownership.committed.update(offsets)
        for p, o in offsets.items():
            if self.pending.get(p) == o:
                del self.pending[p]

    def step(self, timeout: float = 0.05) -> None:
        """One consume call (rebalance callbacks run inside it), then a synchronous commit of what is pending."""
        for message in self.consumer.consume(200, timeout):
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
        self._commit(sorted(self.pending))

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.consumer.close()


def drive(
    members: Iterable[Member], until: Callable[[], bool], timeout: float, what: str, ownership: Ownership
) -> None:
    """Step every open member round-robin until ``until()`` holds."""
    live = [m for m in members if not m.closed]

    def step() -> None:
        for m in live:
            m.step()

    try:
        wait_for(until, timeout, what, step)
    except AssertionError as exc:
        views = {m.name: sorted(m.assignment()) for m in live}
        raise AssertionError(f"{exc}\nclient assignments={views}\n{ownership.describe()}") from None


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
    if any(m.assignment() != ownership.of(m.name) for m in live):
        return False
    return time.monotonic() - ownership.last_change >= quiet
