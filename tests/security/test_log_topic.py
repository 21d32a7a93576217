"""The coordinator's log topic is the sidecar's alone: a client through the sidecar cannot read,
write, list, delete or reconfigure it, and the sidecar's state is untouched afterwards."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka.record.memory_records import MemoryRecordsBuilder

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_response_header, encode_request_header
from groupcoord.coordinator.messages import delete_topics, describe_topic_partitions, fetch, list_offsets, produce
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.wire_client import WireClient
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import admin, authenticated, commit_request, committed, create_topic

pytestmark = pytest.mark.integration


def _client(sidecar: Sidecar) -> dict[str, str]:
    return {
        "bootstrap.servers": sidecar.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }


def log_topic_state(cluster: SaslCluster, log_topic: str) -> tuple[object, ...]:
    """The log topic as the cluster itself has it: partitions, their end offsets, its configs."""
    direct = admin(cluster.bootstrap)
    meta = direct.list_topics(log_topic, timeout=10).topics[log_topic]
    partitions = sorted(meta.partitions)
    ends = direct.list_offsets({TopicPartition(log_topic, p): OffsetSpec.latest() for p in partitions})
    offsets = sorted((tp.partition, f.result(20).offset) for tp, f in ends.items())
    (configs,) = direct.describe_configs([ConfigResource("topic", log_topic)]).values()
    return partitions, offsets, sorted((k, v.value) for k, v in configs.result(20).items())


def kafka_python_attempts(sidecar: Sidecar, log_topic: str, topic: str) -> None:
    """kafka-python gets TOPIC_AUTHORIZATION_FAILED too, and keeps working for other topics."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import TopicAuthorizationFailedError

    sasl = {
        "bootstrap_servers": sidecar.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = KafkaProducer(**sasl, max_block_ms=10000, retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(log_topic, b"forged").get(20)
        assert producer.send(topic, b"fine").get(20).topic == topic
    finally:
        producer.close(5)
    # Consuming both: the other topic's records arrive, none of the log topic's (kafka-python
    # logs the topic's authorization error from Metadata and never fetches it).
    consumer = KafkaConsumer(**sasl, group_id=None, auto_offset_reset="earliest")
    try:
        consumer.assign([KpTopicPartition(log_topic, 0), KpTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        seen: set[str] = set()
        deadline = time.monotonic() + 20
        while topic not in seen and time.monotonic() < deadline:
            seen.update(tp.topic for tp in consumer.poll(timeout_ms=500))
        for _ in range(4):
            seen.update(tp.topic for tp in consumer.poll(timeout_ms=250))
        assert seen == {topic}
    finally:
        consumer.close()
    client = KafkaAdminClient(**sasl, request_timeout_ms=10000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            client.delete_topics([log_topic], timeout_ms=5000)
        with pytest.raises(TopicAuthorizationFailedError):
            client.create_topics([KpNewTopic(log_topic, 1, 1)], timeout_ms=5000)
    finally:
        client.close()


def test_log_topic_is_out_of_reach_through_the_sidecar(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    log_topic = sidecar.log_topic
    group, topic = f"alice-log-{uuid.uuid4().hex[:8]}", f"shared-log-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic)

    async def commit_and_check(offset: int) -> None:
        client = await authenticated(sidecar)
        await client.call(8, 8, commit_request(group, topic, offset))
        assert await committed(client, group, topic) == offset
        # Metadata: all topics leaves the log topic out; naming it is refused as without DESCRIBE.
        everything = await client.call(3, 12, MetadataRequest(topics=None))
        assert isinstance(everything, MetadataResponse)
        names = {t.name for t in everything.topics}
        assert topic in names and log_topic not in names
        named = await client.call(3, 12, MetadataRequest(topics=[MetadataRequestTopic(name=log_topic)]))
        assert isinstance(named, MetadataResponse)
        assert [(t.name, t.error_code) for t in named.topics] == [(log_topic, 29)]
        # Committing offsets "for" the log topic is refused whatever the ACLs.
        answer = await client.call(8, 8, commit_request(group, log_topic, 1))
        assert answer.topics[0].partitions[0].error_code == 29  # type: ignore[attr-defined]
        await client.close()

    asyncio.run(commit_and_check(17))
    before = log_topic_state(sasl_cluster, log_topic)
    config = _client(sidecar)
    denied = KafkaError.TOPIC_AUTHORIZATION_FAILED

    # Produce to it: TOPIC_AUTHORIZATION_FAILED, and the same producer keeps working for others.
    producer = Producer({**config, "message.timeout.ms": 10000, "retries": 0})
    reports: dict[str, object] = {}
    producer.produce(log_topic, b"forged", partition=0, on_delivery=lambda err, msg: reports.update(log=err))
    producer.produce(topic, b"fine", partition=0, on_delivery=lambda err, msg: reports.update(other=err))
    producer.flush(20)
    assert isinstance(reports["log"], KafkaError) and reports["log"].code() == denied
    assert reports["other"] is None

    # Consume it: refused likewise (librdkafka reports the topic's error), nothing read.
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([log_topic])
        polled = [m for m in (consumer.poll(0.5) for _ in range(20)) if m is not None]
        assert [m for m in polled if not m.error()] == []
        assert denied in {error.code() for m in polled if (error := m.error())}
        consumer.unsubscribe()
        consumer.assign([TopicPartition(log_topic, 0, 0)])
        assert [m for m in (consumer.poll(0.5) for _ in range(6)) if m is not None and not m.error()] == []
    finally:
        consumer.close()

    admin = AdminClient({**config, "socket.timeout.ms": 5000})
    attempts: dict[str, Callable[[], Mapping[Any, Future[Any]]]] = {
        "list offsets": lambda: admin.list_offsets(
            {TopicPartition(log_topic, 0): OffsetSpec.latest()}, request_timeout=5
        ),
        "delete": lambda: admin.delete_topics([log_topic], request_timeout=5),
        "add partitions": lambda: admin.create_partitions([NewPartitions(log_topic, 8)], request_timeout=5),
        "create": lambda: admin.create_topics([NewTopic(log_topic, 1, 1)], request_timeout=5),
        "describe configs": lambda: admin.describe_configs([ConfigResource("topic", log_topic)], request_timeout=5),
        "reconfigure": lambda: admin.incremental_alter_configs(
            [
                ConfigResource(
                    "topic",
                    log_topic,
                    incremental_configs=[
                        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SET)
                    ],
                )
            ],
            request_timeout=5,
        ),
        "delete records": lambda: admin.delete_records([TopicPartition(log_topic, 0, 1)], request_timeout=5),
    }
    # librdkafka looks up partition leaders (Metadata: 29) before ListOffsets and DeleteRecords and
    # reports "no leaders found"; the requests themselves get 29 (mixed_wire_requests below). The
    # local broker has no CreatePartitions, so librdkafka does not send it.
    leaders_first = {"list offsets", "delete records", "add partitions"}
    for what, attempt in attempts.items():
        futures = attempt()
        for future in futures.values():
            with pytest.raises(KafkaException) as refused:
                future.result(20)
            if what not in leaders_first:
                assert refused.value.args[0].code() == denied, what
    # A mixed describe: the log topic refused, the other topic described.
    described = admin.describe_configs(
        [ConfigResource("topic", log_topic), ConfigResource("topic", topic)], request_timeout=5
    )
    for resource, future in described.items():
        if resource.name == log_topic:
            with pytest.raises(KafkaException):
                future.result(20)
        else:
            assert isinstance(future.result(20), dict)  # served (the local broker may list no configs)

    kafka_python_attempts(sidecar, log_topic, topic)
    asyncio.run(mixed_wire_requests(sidecar, log_topic, topic))
    assert log_topic_state(sasl_cluster, log_topic) == before

    # The sidecar's own state is intact and other clients keep working.
    asyncio.run(commit_and_check(18))


def test_all_topics_metadata_from_librdkafka_is_answered_without_the_log_topic(bootstrap: str, tmp_path: Path) -> None:
    """librdkafka's Metadata v12 carries bytes no schema declares; the sidecar forwards it and
    leaves its own log topic out of the answer."""
    from confluent_kafka.admin import AdminClient

    from groupcoord.local_broker import free_port
    from tests.integration.serve_process import ServeProcess

    log_topic = f"gc-protected-{uuid.uuid4().hex[:8]}"
    serve = ServeProcess(bootstrap, free_port(), log_topic, partitions=1, log=tmp_path / "serve.log").start()
    try:
        topics = AdminClient({"bootstrap.servers": serve.bootstrap}).list_topics(timeout=10).topics
        assert log_topic not in topics
    finally:
        serve.stop()


def _frame(client: WireClient, key: int, version: int, body: Message) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_request_header(RequestHeader(key, version, client.next_id, "wire-test"), 2 if flexible else 1, out)
    client.next_id += 1
    encode_struct(body, version, flexible, out)
    return struct.pack(">i", len(out)) + bytes(out)


async def _call(client: WireClient, key: int, version: int, body: Message, response: type[Message]) -> Any:
    client.send_raw(_frame(client, key, version, body))
    payload = await client.read_frame(20)
    flexible = version in response.FLEXIBLE
    _, pos = decode_response_header(payload, 1 if flexible else 0)
    return decode_struct(response, memoryview(payload)[pos:], version, flexible)


async def mixed_wire_requests(sidecar: Sidecar, log_topic: str, topic: str) -> None:
    """One request naming the log topic and another topic: 29 for the log topic's slots, the
    other topic served, answers in request order, the connection kept."""
    client = await authenticated(sidecar)
    builder = MemoryRecordsBuilder(2, 0, 1 << 20)
    builder.append(timestamp=None, key=None, value=b"mixed", headers=[])
    builder.close()
    batch = bytes(builder.buffer())

    produced = await _call(
        client,
        0,
        9,
        produce.ProduceRequest(
            acks=-1,
            timeout_ms=10000,
            topic_data=[
                produce.ProduceRequestTopicProduceData(
                    name=name, partition_data=[produce.ProduceRequestPartitionProduceData(index=0, records=batch)]
                )
                for name in (log_topic, topic)
            ],
        ),
        produce.ProduceResponse,
    )
    assert [(t.name, t.partition_responses[0].error_code) for t in produced.responses] == [(log_topic, 29), (topic, 0)]

    fetched = await _call(
        client,
        1,
        12,
        fetch.FetchRequest(
            max_wait_ms=500,
            min_bytes=1,
            topics=[
                fetch.FetchTopic(
                    topic=name,
                    partitions=[fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
                )
                for name in (log_topic, topic)
            ],
        ),
        fetch.FetchResponse,
    )
    got = [(t.topic, t.partitions[0].error_code, bool(t.partitions[0].records)) for t in fetched.responses]
    assert got == [(log_topic, 29, False), (topic, 0, True)]

    listed = await _call(
        client,
        2,
        7,
        list_offsets.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                list_offsets.ListOffsetsTopic(
                    name=name, partitions=[list_offsets.ListOffsetsPartition(partition_index=0, timestamp=-1)]
                )
                for name in (log_topic, topic)
            ],
        ),
        list_offsets.ListOffsetsResponse,
    )
    assert [(t.name, t.partitions[0].error_code) for t in listed.topics] == [(log_topic, 29), (topic, 0)]
    assert listed.topics[1].partitions[0].offset > 0

    # DescribeTopicPartitions (KIP-966): all topics leaves the log topic out; naming it gets 29.
    dtp = describe_topic_partitions
    everything = await _call(client, 75, 0, dtp.DescribeTopicPartitionsRequest(), dtp.DescribeTopicPartitionsResponse)
    # (The local broker answers an all-topics describe with no topics; the filtering itself is
    # proven in tests/gateway/test_topic_split.py.)
    assert log_topic not in {t.name for t in everything.topics}
    named = await _call(
        client,
        75,
        0,
        dtp.DescribeTopicPartitionsRequest(
            topics=[dtp.DescribeTopicPartitionsRequestTopicRequest(name=n) for n in (log_topic, topic)]
        ),
        dtp.DescribeTopicPartitionsResponse,
    )
    assert [(t.name, t.error_code) for t in named.topics] == [(log_topic, 29), (topic, 0)]
    assert named.topics[1].partitions

    missing = f"missing-{uuid.uuid4().hex[:8]}"
    deleted = await _call(
        client, 20, 5, delete_topics.DeleteTopicsRequest(topic_names=[log_topic, missing], timeout_ms=5000),
        delete_topics.DeleteTopicsResponse,
    )  # fmt: skip
    assert [r.name for r in deleted.responses] == [log_topic, missing]
    assert deleted.responses[0].error_code == 29 and deleted.responses[1].error_code != 29
    await client.close()
