"""The exactly-once scenario of issue #24 and its checks, shared by the client tests.

A consume-transform-produce loop reads an input topic through the sidecar (read_committed) and
writes each record to an output topic in transactions of a few records, sending the group's
offsets to each transaction. One transaction is aborted midway (its records sent first) and the
consumer rewound; once, a second producer with the same transactional.id fences the first in the
middle of a transaction. The checks: the committed output holds every input record exactly once,
the group's committed offsets end at the input's end, and an aborted or fenced transaction never
moved an offset.

The local broker (Tansu) hands aborted records to read_committed consumers (it never fills in a
Fetch's aborted transactions), so the output is read here with a raw Fetch that drops every
transactional batch its producer's next marker aborts: what a correct read_committed consumer sees.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from kafka.record.default_records import DefaultRecordBatch

from groupcoord.coordinator.gateway.broker_connection import BrokerConnection
from groupcoord.coordinator.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from groupcoord.coordinator.security.cluster_login import ClusterLogin
from groupcoord.coordinator.txn.wire import COMMIT_MARKER, batch_heads


def fill_input(bootstrap: str, topic: str, partitions: int, count: int) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    values = [f"record-{i}".encode() for i in range(count)]
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(30) == 0
    return values


def committed_offsets(consumer: Consumer, partitions: list[TopicPartition], timeout: float = 20) -> dict[int, int]:
    """The group's committed offsets, asked with require_stable (librdkafka does with
    read_committed): retried while the sidecar answers UNSTABLE_OFFSET_COMMIT."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = consumer.committed(partitions, timeout=10)
            if all(tp.error is None for tp in answer):
                return {tp.partition: tp.offset for tp in answer}
        except KafkaException:
            pass
        assert time.monotonic() < deadline, "committed offsets stayed unstable"
        time.sleep(0.1)


def rewind(consumer: Consumer) -> dict[int, int]:
    """Back to the committed offsets (as an application does after an abort)."""
    assignment = consumer.assignment()
    committed = committed_offsets(consumer, assignment)
    for tp in assignment:
        offset = committed[tp.partition]
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset if offset >= 0 else OFFSET_BEGINNING))
    return committed


def transactional_producer(bootstrap: str, transactional_id: str, **config: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 20000,
            **config,
        }
    )
    producer.init_transactions(30)
    return producer


def _recover(producer: Producer, sidecar: str, transactional_id: str, timeout: float) -> Producer:
    """Abort the failed transaction, or start over with a new producer (a new epoch aborts it)."""
    try:
        producer.abort_transaction(timeout)
        return producer
    except KafkaException:
        return transactional_producer(sidecar, transactional_id)


def run_scenario(
    sidecar: str,
    input_topic: str,
    output_topic: str,
    group: str,
    transactional_id: str,
    expected: int,
    protocol: str = "classic",
    batch: int = 3,
    after_commit: Callable[[int], None] | None = None,
    survive_failures: bool = False,
    call_timeout: float = 30,
) -> dict[str, int]:
    """Runs the loop until every input record is in a committed transaction; counts of what happened.

    ``call_timeout`` bounds each send_offsets/commit/abort of the unfenced producer. Every sidecar
    answers Metadata with the cluster's node ids at its own listener, so when the sidecar a
    producer last heard node N from is killed, librdkafka keeps calling N's dead address and its
    transactional calls fail only when that timeout runs out: a failover test shortens it."""
    consumer = Consumer(
        {
            "bootstrap.servers": sidecar,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            **({"session.timeout.ms": 6000} if protocol == "classic" else {}),
        }
    )
    consumer.subscribe([input_topic])
    producer = transactional_producer(sidecar, transactional_id)
    stats = Counter[str]()
    done = 0
    deadline = time.monotonic() + 150
    try:
        while done < expected:
            assert time.monotonic() < deadline, f"only {done} of {expected} records were committed: {dict(stats)}"
            messages = [m for m in consumer.consume(batch, timeout=0.5) if m.error() is None]
            if not messages:
                continue
            producer.begin_transaction()
            for m in messages:
                producer.produce(output_topic, key=m.key(), value=m.value())
            positions = consumer.position(consumer.assignment())
            if stats["transactions"] == 1 and not stats["aborted"]:
                # Abort midway, after the records and the offsets reached the cluster and the sidecar.
                before = committed_offsets(consumer, consumer.assignment())
                producer.flush(10)
                producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
                producer.abort_transaction(30)
                assert rewind(consumer) == before, "an aborted transaction moved the committed offsets"
                stats["aborted"] += 1
                continue
            if stats["transactions"] == 3 and not stats["fenced"]:
                # A second producer with the same transactional.id fences this one mid-transaction.
                producer.flush(10)
                before = committed_offsets(consumer, consumer.assignment())
                zombie, producer = producer, transactional_producer(sidecar, transactional_id)
                try:
                    zombie.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
                    zombie.commit_transaction(30)
                except KafkaException as exc:
                    stats[f"zombie:{exc.args[0].name()}"] += 1
                else:
                    raise AssertionError("a fenced producer committed its transaction")
                assert rewind(consumer) == before, "a fenced transaction moved the committed offsets"
                stats["fenced"] += 1
                continue
            try:
                producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), call_timeout)
                producer.commit_transaction(call_timeout)
            except KafkaException as exc:
                if not survive_failures:
                    raise
                # The coordinator moved under the transaction (a killed process): whatever became
                # of it, the committed offsets say where its outcome left the input.
                stats[f"failed:{exc.args[0].name()}"] += 1
                producer = _recover(producer, sidecar, transactional_id, call_timeout)
                rewind(consumer)
                continue
            stats["transactions"] += 1
            done += len(messages)
            if after_commit is not None:
                after_commit(stats["transactions"])
        return dict(stats)
    finally:
        consumer.close()


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every value of ``topic`` a correct read_committed consumer delivers (see the module doc)."""
    return asyncio.run(_read_committed(bootstrap, topic, partitions))


async def _read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    host, port = bootstrap.rsplit(":", 1)
    conn = await BrokerConnection.open((host, int(port)), None, 10)
    values: list[bytes] = []
    try:
        for partition in range(partitions):
            offset, open_batches = 0, dict[int, list[bytes]]()
            while True:
                answer = await conn.call(
                    FetchRequest(
                        replica_id=-1,
                        max_wait_ms=100,
                        min_bytes=0,
                        max_bytes=1 << 22,
                        topics=[
                            FetchTopic(
                                topic=topic,
                                partitions=[
                                    FetchPartition(
                                        partition=partition, fetch_offset=offset, partition_max_bytes=1 << 22
                                    )
                                ],
                            )
                        ],
                    ),
                    FetchResponse,
                    11,
                    10,
                )
                data = answer.responses[0].partitions[0] if answer.responses else None
                heads = batch_heads(data.records) if data is not None else []
                if not heads:
                    break
                assert data is not None
                raw = memoryview(data.records or b"")
                position = 0
                for head in heads:
                    size = int.from_bytes(raw[position + 8 : position + 12], "big") + 12
                    batch_bytes = bytes(raw[position : position + size])
                    position += size
                    if head.last_offset < offset:
                        continue
                    if head.marker is not None:
                        kept = open_batches.pop(head.producer_id, [])
                        if head.marker == COMMIT_MARKER:
                            values += kept
                    else:
                        batch = DefaultRecordBatch(batch_bytes)
                        batch_values = [r.value for r in batch if r.offset >= offset]
                        if head.transactional:
                            open_batches.setdefault(head.producer_id, []).extend(batch_values)
                        else:
                            values += batch_values
                    offset = head.last_offset + 1
    finally:
        conn.close()
    return values


def check_outcome(bootstrap: str, sidecar: str, inputs: list[bytes], source: str, sink: str, group: str) -> None:
    """The scenario's checks: the committed output holds every input exactly once, and the group's
    committed offsets (asked through the sidecar) end at the input's end."""
    check_exactly_once(inputs, read_committed(bootstrap, sink, 1))
    partitions = _partitions(bootstrap, source)
    probe = Consumer({"bootstrap.servers": sidecar, "group.id": group, "isolation.level": "read_committed"})
    try:
        ends = committed_offsets(probe, [TopicPartition(source, p) for p in range(partitions)])
    finally:
        probe.close()
    assert ends == {p: len(inputs) // partitions for p in range(partitions)}


def _partitions(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions)


def txn_offset_commit(
    transactional_id: str, group: str, producer_id: int, producer_epoch: int, topic: str, offset: int
) -> TxnOffsetCommitRequest:
    """A TxnOffsetCommit of ``offset`` for partition 0 of ``topic``, with no member (generation -1)."""
    return TxnOffsetCommitRequest(
        transactional_id=transactional_id,
        group_id=group,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        topics=[
            TxnOffsetCommitRequestTopic(
                name=topic, partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)]
            )
        ],
    )


def check_exactly_once(inputs: list[bytes], outputs: list[bytes]) -> None:
    counts = Counter(outputs)
    missing = [v for v in inputs if counts[v] == 0]
    doubled = {v: n for v, n in counts.items() if n > 1}
    assert not missing and not doubled and len(outputs) == len(inputs), (
        f"missing {missing[:5]} ({len(missing)}), duplicated {list(doubled.items())[:5]} ({len(doubled)})"
    )


def producer_identity(bootstrap: str, topic: str, login: ClusterLogin | None = None) -> tuple[int, int]:
    """(producer id, epoch) of the last data batch in partition 0 of ``topic`` (a transactional
    producer's, read from its batch header: confluent-kafka does not tell them)."""

    async def last() -> tuple[int, int]:
        host, port = bootstrap.rsplit(":", 1)
        conn = await BrokerConnection.open((host, int(port)), None, 10, login)
        try:
            answer = await conn.call(
                FetchRequest(
                    replica_id=-1,
                    max_wait_ms=100,
                    min_bytes=0,
                    topics=[
                        FetchTopic(topic=topic, partitions=[FetchPartition(partition=0, partition_max_bytes=1 << 20)])
                    ],
                ),
                FetchResponse,
                11,
                10,
            )
        finally:
            conn.close()
        heads = [h for h in batch_heads(answer.responses[0].partitions[0].records) if h.marker is None]
        return heads[-1].producer_id, heads[-1].producer_epoch

    return asyncio.run(last())
