"""Produce with acks=0 through the sidecar: every record arrives, whether the broker answers or not.

Kafka never answers a Produce with acks=0; the local broker (Tansu) does. The sidecar used to take
such an answer for the next request's and close the client's connection, and librdkafka lost most
of the records it had queued (1,200 of 6,000 arrived here).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic

RECORDS = 6000
PARTITIONS = 3


def _read_back(bootstrap: str, topic: str, within: float = 30.0) -> set[int]:
    """The values of the topic's records, read directly from the broker. Counted, not taken from
    the high watermarks: Tansu's fall short of what its log holds."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(PARTITIONS)])
    values: set[int] = set()
    deadline = time.monotonic() + within
    try:
        # Nothing acknowledges acks=0: the broker may still be appending what it was sent.
        while len(values) < RECORDS and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                value = message.value()
                if message.error() is None and value is not None:
                    values.add(int(value))
    finally:
        consumer.close()
    return values


def test_every_record_of_an_acks_zero_producer_arrives_through_the_sidecar(bootstrap: str, unique_name: str) -> None:
    topic = f"{unique_name}-acks0"
    ensure_topic(bootstrap, topic, PARTITIONS)
    serve = ServeProcess(bootstrap, free_port(), unique_name, partitions=2)
    serve.start(env={"GROUPCOORD_METRICS_LISTEN": "off"})
    try:
        producer = Producer(
            {"bootstrap.servers": serve.bootstrap, "acks": 0, "linger.ms": 5, "batch.num.messages": 100}
        )
        for i in range(RECORDS):
            while True:
                try:
                    producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        assert producer.flush(30) == 0
        missing = set(range(RECORDS)) - _read_back(bootstrap, topic)
        assert not missing, f"{len(missing)} of {RECORDS} records lost, e.g. {sorted(missing)[:5]}"
    finally:
        assert serve.stop() == 0
