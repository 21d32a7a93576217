"""The share data path through a real ``groupcoord serve`` (share groups enabled) in front of the
local broker, with confluent-kafka's ``ShareConsumer`` (librdkafka 2.16, preview share consumer)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer, ShareConsumer

from groupcoord.local_broker import free_port
from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def serves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ServeProcess]]:
    monkeypatch.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
    started: list[ServeProcess] = []
    yield started
    for serve in started:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.stop()


def _produce(bootstrap: str, topic: str, count: int, partitions: int) -> set[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    values = set()
    for i in range(count):
        value = f"v{i}".encode()
        producer.produce(topic, value, partition=i % partitions)
        values.add(value)
    assert producer.flush(15) == 0
    return values


def _consumer(bootstrap: str, group: str, **extra: str) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})


def test_share_consumer_receives_every_record(
    serves: list[ServeProcess], bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 2)
    serve = ServeProcess(bootstrap, free_port(), f"gc-sf-log-{uuid.uuid4().hex[:10]}", log=tmp_path / "serve.log").start()
    serves.append(serve)
    # share.auto.offset.reset defaults to latest: join first, then produce.
    consumer = _consumer(serve.bootstrap, group)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    consumer.poll(1)
    values = _produce(bootstrap, topic, 20, 2)
    got: list[bytes] = []
    while time.monotonic() < deadline and len(got) < len(values):
        for m in consumer.poll(1):
            if m.error() is None:
                got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(values)
