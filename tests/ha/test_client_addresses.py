"""A client of a process killed with -9 carries on through the survivors by itself (issue #26, item 5).

Each process advertises the cluster's brokers at its own listeners, so a client that bootstrapped
with every process's address knows broker N at the address of whichever process answered its
Metadata. When that process dies, the client refreshes Metadata from a survivor (every process
lists the others' coordinator nodes), which re-points N; the transaction coordinator (broker N,
found by FindCoordinator) is presented by each process under a node id of its own, because
librdkafka keeps a transaction coordinator whose node id did not change at its old address.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from groupcoord.coordinator.service.partitioning import partition_for
from tests.ha.sidecars import SESSION_TIMEOUT_MS, Sidecar, wait_for
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3
# The victim's shards move once a peer's probe is refused (well within the placement session
# timeout); the consumer's own session timeout and a few seconds on a loaded machine on top.
RECOVERY_BOUND_S = 2 * SESSION_TIMEOUT_MS / 1000 + 5
CLIENT = {"socket.timeout.ms": 5000, "reconnect.backoff.max.ms": 500, "statistics.interval.ms": 200}


@pytest.fixture
def trio(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[list[Sidecar]]:
    made = [Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", PARTITIONS) for i in range(3)]
    try:
        for s in made:
            s.spawn()
        for s in made:
            s.wait_listening()
        wait_for(lambda: all(s.owned() for s in made), 90, "every process owns a shard")
        yield made
    finally:
        for s in made:
            if s.alive:
                s.kill9()  # nothing to hand over at the end of the test; a graceful stop takes seconds


class Stats:
    """librdkafka's statistics: the address each broker (or logical coordinator) is reached at."""

    def __init__(self) -> None:
        self.brokers: dict[str, dict[str, Any]] = {}

    def __call__(self, payload: str) -> None:
        self.brokers = json.loads(payload).get("brokers", {})

    def address_of(self, name: str) -> str:
        """Where the broker ``name`` is reached; "" while it is not (librdkafka's logical
        TxnCoordinator between a disconnect and its next lookup)."""
        return str(next((b["nodename"] for b in self.brokers.values() if b["name"] == name), ""))


def process_behind(sidecars: list[Sidecar], address: str) -> Sidecar:
    """The process listening at ``address`` (its coordinator port or one of its broker ports)."""
    port = address.rsplit(":", 1)[1]
    return next(s for s in sidecars if s.address == address or f"port={port} " in s.log.read_text())


def within(bound_s: float, attempt: Callable[[float], bool]) -> float:
    """Seconds until ``attempt`` (given the seconds left) succeeds; fails past ``bound_s``."""
    started = time.monotonic()
    while (left := started + bound_s - time.monotonic()) > 0:
        if attempt(left):
            return time.monotonic() - started
    raise AssertionError(f"no success within {bound_s}s")


class Transactions:
    def __init__(self, everyone: str, topic: str, transactional_id: str, stats: Stats) -> None:
        self.topic = topic
        self.producer = Producer(
            {**CLIENT, "bootstrap.servers": everyone, "transactional.id": transactional_id, "stats_cb": stats}
        )
        self.producer.init_transactions(30)
        self.open = False
        self.stats = stats

    def coordinator_address(self) -> str:
        """Where the producer reaches its transaction coordinator, once its statistics say so."""
        wait_for(
            lambda: self.producer.poll(0) >= 0 and bool(self.stats.address_of("TxnCoordinator")),
            10,
            "the producer's transaction coordinator in its statistics",
        )
        return self.stats.address_of("TxnCoordinator")

    def commit(self, left: float) -> bool:
        """One transaction (the open one, after a failed attempt) committed within ``left`` seconds."""
        timeout = min(left, 5.0)
        try:
            if not self.open:
                self.producer.begin_transaction()
                self.producer.produce(self.topic, b"txn")
                self.open = True
            self.producer.commit_transaction(timeout)
            self.open = False
            return True
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                try:
                    self.producer.abort_transaction(timeout)
                    self.open = False
                except KafkaException:
                    pass  # resumed at the next attempt
            elif not exc.args[0].retriable():
                raise
            return False


class Consuming:
    def __init__(self, everyone: str, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.feed = Producer({"bootstrap.servers": bootstrap})
        self.consumer = Consumer(
            {
                **CLIENT,
                "bootstrap.servers": everyone,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 500,
            }
        )
        self.consumer.subscribe([topic])
        self.sent = 0

    def consume_and_commit(self, left: float) -> bool:
        """A record produced now is consumed, and its offset commit acknowledged, within ``left`` s."""
        self.sent += 1
        self.feed.produce(self.topic, str(self.sent).encode())
        self.feed.flush(5)
        deadline = time.monotonic() + left
        while time.monotonic() < deadline:
            msg = self.consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            try:
                self.consumer.commit(message=msg, asynchronous=False)
            except KafkaException:
                continue
            if int(msg.value() or b"0") >= self.sent:
                return True
        return False


def test_clients_of_a_killed_process_carry_on_through_the_survivors(
    trio: list[Sidecar], bootstrap: str, unique_name: str
) -> None:
    topic, produced = f"data-{unique_name}", f"txn-{unique_name}"
    for t in (topic, produced):
        ensure_topic(bootstrap, t)
    everyone = ",".join(s.address for s in trio)
    stats = Stats()
    transactions = Transactions(everyone, produced, f"{unique_name}-tx", stats)
    consuming: Consuming | None = None
    try:
        within(60, transactions.commit)
        # The process whose listener the producer reaches its transaction coordinator at ...
        victim = process_behind(trio, transactions.coordinator_address())
        # ... coordinates the consumer's group too.
        group = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, PARTITIONS) in victim.owned())
        consuming = Consuming(everyone, bootstrap, topic, group)
        within(60, consuming.consume_and_commit)

        victim.kill9()
        # Both carry on through the survivors, without being restarted or told anything.
        within(RECOVERY_BOUND_S, transactions.commit)
        within(RECOVERY_BOUND_S, consuming.consume_and_commit)
        transactions.producer.poll(0.5)
        assert process_behind(trio, transactions.coordinator_address()).alive
    finally:
        if consuming is not None:
            consuming.consumer.close()
        transactions.producer.flush(5)
