"""``kill -9`` of ``groupcoord serve`` during a stream of commits from a real Kafka client."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

GROUPS = [f"crash-group-{i}" for i in range(4)]
PARTITIONS = range(3)


def consumer(bootstrap: str, group: str, on_commit: Callable[..., None] | None = None) -> Consumer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "socket.timeout.ms": 3000,
        "reconnect.backoff.max.ms": 200,
    }
    if on_commit is not None:
        config["on_commit"] = on_commit
    return Consumer(config)


def test_acknowledged_commits_survive_kill_9(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    topic = f"{unique_name}-orders"
    ensure_topic(bootstrap, topic, max(PARTITIONS) + 1)
    first = ServeProcess(bootstrap, free_port(), unique_name, log=tmp_path / "serve1.log").start()
    sent: dict[tuple[str, int], int] = {}
    acked: dict[tuple[str, int], int] = {}
    stop = threading.Event()
    enough = threading.Event()

    def stream() -> None:
        # Asynchronous commits with our own deadline: a synchronous commit would retry forever
        # once the coordinator is gone.
        results: list[object] = []

        def on_commit(err: object, partitions: list[TopicPartition]) -> None:
            results.append(err if err is not None else partitions[0].error)

        clients = {g: consumer(first.bootstrap, g, on_commit) for g in GROUPS}
        i = 0
        while not stop.is_set():
            i += 1
            group, partition = GROUPS[i % len(GROUPS)], PARTITIONS[i % len(PARTITIONS)]
            sent[(group, partition)] = i
            results.clear()
            clients[group].commit(offsets=[TopicPartition(topic, partition, i)], asynchronous=True)
            deadline = time.monotonic() + 5
            # Once the process is killed, the commit in flight is left unanswered (it stays in
            # ``sent``, never in ``acked``) rather than waited out for 5 s.
            while not results and time.monotonic() < deadline and not stop.is_set():
                clients[group].poll(0.01)
            if not results or results[0] is not None:
                break
            acked[(group, partition)] = i
            if len(acked) == len(GROUPS) * len(PARTITIONS) and i > 300:
                enough.set()
        enough.set()

    writer = threading.Thread(target=stream, daemon=True)
    writer.start()
    assert enough.wait(120), "commit stream did not get going"
    first.kill9()
    stop.set()
    writer.join(60)
    assert not writer.is_alive()
    acked_before = dict(acked)
    assert len(acked_before) == len(GROUPS) * len(PARTITIONS)

    second = ServeProcess(bootstrap, free_port(), unique_name, log=tmp_path / "serve2.log").start()
    try:
        for group in GROUPS:
            c = consumer(second.bootstrap, group)
            rows = c.committed([TopicPartition(topic, p) for p in PARTITIONS], timeout=30)
            c.close()
            for row in rows:
                key = (group, row.partition)
                # Every acknowledged commit is there; the only other value allowed is the one
                # commit that was in flight when the process died (written, never answered).
                assert row.offset in (acked_before[key], sent[key]), (key, row.offset, acked_before[key], sent[key])
                assert row.offset >= acked_before[key]
    finally:
        assert second.stop() == 0
