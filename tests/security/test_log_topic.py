"""The coordinator's log topic is the sidecar's alone: a client through the sidecar cannot read,
write, list, delete or reconfigure it, and the sidecar's state is untouched afterwards."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    OffsetSpec,
)

from coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import authenticated, commit_request, committed, create_topic

pytestmark = pytest.mark.integration


def _client(sidecar: Sidecar) -> dict[str, str]:
    return {
        "bootstrap.servers": sidecar.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }


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
    config = _client(sidecar)

    # Produce to it: the connection is closed, nothing is delivered.
    producer = Producer({**config, "message.timeout.ms": 5000, "retries": 0})
    failures: list[object] = []
    producer.produce(log_topic, b"forged", partition=0, on_delivery=lambda err, msg: failures.append(err))
    producer.flush(15)
    assert failures and failures[0] is not None

    # Fetch from it: nothing is read.
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(log_topic, 0, 0)])
        read = [m for m in (consumer.poll(0.5) for _ in range(8)) if m is not None and not m.error()]
        assert read == []
    finally:
        consumer.close()

    admin = AdminClient({**config, "socket.timeout.ms": 5000})
    attempts = {
        "list offsets": lambda: admin.list_offsets(
            {TopicPartition(log_topic, 0): OffsetSpec.latest()}, request_timeout=5
        ),
        "delete": lambda: admin.delete_topics([log_topic], request_timeout=5),
        "add partitions": lambda: admin.create_partitions([NewPartitions(log_topic, 8)], request_timeout=5),
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
    for what, attempt in attempts.items():
        futures = attempt()
        for future in futures.values():
            with pytest.raises(KafkaException):
                future.result(20)
            print("refused:", what)

    # The sidecar's own state is intact and other clients keep working.
    asyncio.run(commit_and_check(18))


def test_all_topics_metadata_from_librdkafka_is_answered_without_the_log_topic(bootstrap: str, tmp_path: Path) -> None:
    """librdkafka's Metadata v12 carries bytes no schema declares; the sidecar forwards it and
    leaves its own log topic out of the answer."""
    from confluent_kafka.admin import AdminClient

    from deploy.local_broker import free_port
    from tests.integration.serve_process import ServeProcess

    log_topic = f"gc-protected-{uuid.uuid4().hex[:8]}"
    serve = ServeProcess(bootstrap, free_port(), log_topic, partitions=1, log=tmp_path / "serve.log").start()
    try:
        topics = AdminClient({"bootstrap.servers": serve.bootstrap}).list_topics(timeout=10).topics
        assert log_topic not in topics
    finally:
        serve.stop()
