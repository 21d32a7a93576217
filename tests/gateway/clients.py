"""Blocking Kafka client helpers for the integration tests (confluent-kafka and kafka-python)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

Record = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
        deadline = time.monotonic() + 20
        while topic not in admin.list_topics():
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic} never appeared")
            time.sleep(0.2)
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, count: int, partitions: int, **conf: Any) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    errors: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for i in range(count):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"value-{i}-".encode() * (1 + i % 7),
            partition=i % partitions,
            headers=[("n", str(i).encode())],
            on_delivery=report,
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []


def _record(message: Any) -> Record:
    headers = tuple((k, bytes(v)) for k, v in (message.headers() or []))
    return (message.partition(), message.offset(), message.key(), message.value(), headers)


def consume_assigned(bootstrap: str, topic: str, partitions: int, expected: int, **conf: Any) -> list[Record]:
    """Read from the beginning of every partition by manual assignment (no group protocol)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False, **conf}
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        return _drain(consumer, expected)
    finally:
        consumer.close()


def consume_group(bootstrap: str, topic: str, group: str, expected: int, **conf: Any) -> list[Record]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "classic",
            "auto.offset.reset": "earliest",
            **conf,
        }
    )
    try:
        consumer.subscribe([topic])
        return _drain(consumer, expected)
    finally:
        consumer.close()


def _drain(consumer: Consumer, expected: int, timeout: float = 60) -> list[Record]:
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(out) < expected and time.monotonic() < deadline:
        for message in consumer.consume(500, 0.5):
            if message.error():
                raise KafkaException(message.error())
            out.append(_record(message))
    return sorted(out)
