"""Issue #24 with kafka-python (its installed version has transactions: ``send_offsets_to_transaction``
with ``consumer.group_metadata()``): the exactly-once scenario through ``groupcoord serve``, classic
protocol (kafka-python has no other); and its producer committing offsets by group id alone into a
KIP-848 group (a confluent-kafka member)."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KTopicPartition

from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import check_outcome, fill_input

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PARTITIONS = 2
RECORDS = 24


def _producer(sidecar: str, transactional_id: str) -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=sidecar, transactional_id=transactional_id, transaction_timeout_ms=20000)
    producer.init_transactions()
    return producer


def _committed(consumer: KafkaConsumer) -> dict[int, int | None]:
    return {tp.partition: consumer.committed(tp) for tp in sorted(consumer.assignment())}


def _rewind(consumer: KafkaConsumer, before: dict[int, int | None], why: str) -> None:
    now = _committed(consumer)
    assert now == before, f"{why} moved the committed offsets: {before} -> {now}"
    for tp in consumer.assignment():
        offset = now[tp.partition]
        if offset is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, offset)


def test_kafka_python_exactly_once(bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    source, sink, group, txn_id = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-g", f"{unique_name}-tx"
    ensure_topic(bootstrap, source, PARTITIONS)
    ensure_topic(bootstrap, sink, 1)
    inputs = fill_input(bootstrap, source, PARTITIONS, RECORDS)
    consumer = KafkaConsumer(
        source,
        bootstrap_servers=sidecar.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        max_poll_records=3,
    )
    producer = _producer(sidecar.bootstrap, txn_id)
    stats: Counter[str] = Counter()
    done = 0
    deadline = time.monotonic() + 120
    try:
        while done < RECORDS:
            assert time.monotonic() < deadline, f"only {done} of {RECORDS} committed: {dict(stats)}"
            batches = consumer.poll(timeout_ms=500, max_records=3)
            messages = [m for records in batches.values() for m in records]
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.send(sink, key=m.key, value=m.value)
            positions = {
                KTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(consumer.position(tp), "", -1)
                for tp in consumer.assignment()
            }
            if stats["transactions"] == 1 and not stats["aborted"]:
                before = _committed(consumer)
                producer.flush()
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                producer.abort_transaction()
                _rewind(consumer, before, "an abort")
                stats["aborted"] += 1
                continue
            if stats["transactions"] == 3 and not stats["fenced"]:
                before = _committed(consumer)
                producer.flush()
                zombie, producer = producer, _producer(sidecar.bootstrap, txn_id)
                with pytest.raises(KafkaError):
                    zombie.send_offsets_to_transaction(positions, consumer.group_metadata())
                    zombie.commit_transaction()
                zombie.close(timeout=0)
                _rewind(consumer, before, "a fenced transaction")
                stats["fenced"] += 1
                continue
            producer.send_offsets_to_transaction(positions, consumer.group_metadata())
            producer.commit_transaction()
            stats["transactions"] += 1
            done += len(messages)
    finally:
        consumer.close()
        producer.close(timeout=5)
    check_outcome(bootstrap, sidecar.bootstrap, inputs, source, sink, group)


def test_offsets_sent_with_the_group_id_alone_commit_into_a_consumer_protocol_group(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """kafka-python's ``send_offsets_to_transaction(offsets, "group")`` (the form before KIP-447:
    generation -1, no member id, no instance id) into a KIP-848 group that has a member: Kafka
    takes it (the member fields are checked only when one is given), and so must the sidecar."""
    source, group = f"{unique_name}-in", f"{unique_name}-g"
    ensure_topic(bootstrap, source, PARTITIONS)
    member = Consumer({"bootstrap.servers": sidecar.bootstrap, "group.id": group, "group.protocol": "consumer"})
    member.subscribe([source])
    producer = _producer(sidecar.bootstrap, f"{unique_name}-tx")
    admin = AdminClient({"bootstrap.servers": sidecar.bootstrap})

    def committed() -> int:
        asked = [ConsumerGroupTopicPartitions(group, [TopicPartition(source, 1)])]
        return admin.list_consumer_group_offsets(asked, request_timeout=10)[group].result(10).topic_partitions[0].offset

    try:
        deadline = time.monotonic() + 60
        while not member.assignment():
            assert time.monotonic() < deadline, "the member never got an assignment"
            member.poll(0.2)
        for offset, commit in ((7, True), (9, False)):
            producer.begin_transaction()
            offsets = {KTopicPartition(source, 1): OffsetAndMetadata(offset, "", -1)}
            producer.send_offsets_to_transaction(offsets, group)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            deadline = time.monotonic() + 10
            while committed() != 7:
                assert time.monotonic() < deadline, f"committed offset {committed()}, expected 7"
                time.sleep(0.1)
    finally:
        member.close()
        producer.close(timeout=5)
