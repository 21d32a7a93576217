"""Staged transactional offsets survive ``kill -9`` of the owning ``groupcoord serve``: a
transaction committed while no process owns the shard is applied once by the next owner; one
committed after the restart is applied by the new owner; and neither is applied again by a third
owner after a later plain commit (exactly once)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import producer_identity, transactional_producer
from tests.txn.test_txn_validation import fetch, txn_commit

pytestmark = pytest.mark.integration


def _open_transaction(broker: str, sink: str, txn_id: str) -> tuple[Producer, int, int]:
    # The producer talks to the cluster directly (its transaction coordinator is the cluster's);
    # its offsets go to the sidecar, as librdkafka's would.
    producer = transactional_producer(broker, txn_id)
    producer.begin_transaction()
    producer.produce(sink, value=txn_id.encode())
    assert producer.flush(10) == 0
    pid, epoch = producer_identity(broker, sink)
    return producer, pid, epoch


def _wait_for(sidecar: str, group: str, topic: str, expected: tuple[int, int]) -> None:
    deadline = time.monotonic() + 30
    while (answer := fetch(sidecar, group, topic, require_stable=True)) != expected:
        assert time.monotonic() < deadline, f"{group}: {answer}, expected {expected}"
        time.sleep(0.1)


def test_staged_offsets_survive_kill_9_and_apply_exactly_once(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    source = f"{unique_name}-in"
    ensure_topic(bootstrap, source, 1)
    groups = {name: f"{unique_name}-{name}" for name in ("down", "up")}
    # One port for every incarnation: the same static placement member, so a restart takes the
    # shards back at once instead of after the killed process's session timeout.
    port = free_port()
    first = ServeProcess(bootstrap, port, unique_name, log=tmp_path / "serve1.log").start()
    staged = {}
    try:
        for name, group in groups.items():
            sink = f"{unique_name}-{name}-out"
            ensure_topic(bootstrap, sink, 1)
            producer, pid, epoch = _open_transaction(bootstrap, sink, f"{unique_name}-{name}-tx")
            assert txn_commit(first.bootstrap, f"{unique_name}-{name}-tx", group, pid, epoch, source, 11) == [0]
            assert fetch(first.bootstrap, group, source, require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
            staged[name] = producer
    finally:
        first.kill9()
    # Committed while no process owns the shard: the next owner finds the marker on its own.
    staged["down"].commit_transaction(30)
    second = ServeProcess(bootstrap, port, unique_name, log=tmp_path / "serve2.log").start()
    try:
        _wait_for(second.bootstrap, groups["down"], source, (11, ErrorCode.NONE))
        # Still staged after the load, until its own marker.
        assert fetch(second.bootstrap, groups["up"], source, require_stable=True) == (
            -1,
            ErrorCode.UNSTABLE_OFFSET_COMMIT,
        )
        staged["up"].commit_transaction(30)
        _wait_for(second.bootstrap, groups["up"], source, (11, ErrorCode.NONE))
        # A plain commit after the transactional one; a new owner must not apply the transaction again.
        plain = Consumer({"bootstrap.servers": second.bootstrap, "group.id": groups["down"]})
        plain.commit(offsets=[TopicPartition(source, 0, 12)], asynchronous=False)
        plain.close()
    finally:
        second.kill9()
    third = ServeProcess(bootstrap, port, unique_name, log=tmp_path / "serve3.log").start()
    try:
        _wait_for(third.bootstrap, groups["down"], source, (12, ErrorCode.NONE))
        assert fetch(third.bootstrap, groups["up"], source, require_stable=True) == (11, ErrorCode.NONE)
    finally:
        third.stop()
