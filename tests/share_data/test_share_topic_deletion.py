"""Share groups and topic deletion through a real ``groupcoord serve`` in front of the local broker,
with confluent-kafka's ``ShareConsumer``: what librdkafka's 0181 (acknowledgements of a deleted
topic) and 0184 (a topic re-created under a share consumer) assert, as Kafka 4.2 behaves."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, KafkaError, Message, ShareConsumer
from confluent_kafka.admin import AdminClient

from groupcoord.local_broker import free_port
from tests.client_records import value_of
from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess
from tests.share_data.test_share_consumer import _drain, _produce, _set_group_config

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def serve(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One serve for the module's tests (each uses its own topic and group)."""
    # The sidecar reads the cluster's topics every second (Kafka's coordinator sees a deletion at
    # once, through its metadata image); the default, 10 s, would make the test wait for it.
    env = {
        "GROUPCOORD_SHARE_GROUPS_ENABLED": "true",
        "GROUPCOORD_METADATA_REFRESH_INTERVAL_MS": "1000",
    }
    log = tmp_path_factory.mktemp("share-deletion") / "serve.log"
    process = ServeProcess(bootstrap, free_port(), f"gc-sf-log-{uuid.uuid4().hex[:10]}", log=log)
    process.start(env=env)
    yield process
    process.stop()


def test_a_recreated_topic_starts_its_share_partitions_afresh(
    serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """The share state of a deleted topic goes with it (Kafka keys it by topic id): the topic
    re-created under the same name is read from share.auto.offset.reset (earliest here), every
    record delivered once, not from where the old incarnation's share-partition had got to (its
    start offset past the new records, which would then never be delivered)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _set_group_config(serve.bootstrap, group, "share.auto.offset.reset", "earliest")
    before = _produce(bootstrap, topic, 5, 1, prefix="before-")
    consumer = ShareConsumer(
        {"bootstrap.servers": serve.bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    got = _drain([consumer], len(before), ack=True)
    assert sorted(v for _, v, _ in got) == sorted(before)

    admin = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})
    admin.delete_topics([topic])[topic].result(30)
    create_topic(bootstrap, topic, 1)
    after = _produce(bootstrap, topic, 3, 1, prefix="after-")
    got = _drain([consumer], len(after), ack=True)
    consumer.close()
    assert sorted(v for _, v, _ in got) == sorted(after)
    assert {count for _, _, count in got} == {1}


def test_acknowledgements_of_a_topic_deleted_through_the_sidecar_fail_at_once(
    serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """librdkafka's 0181: records acquired, the topic deleted (DeleteTopics through the sidecar),
    then acknowledged: the commit's result for the partition is UNKNOWN_TOPIC_ID, as Kafka
    answers for a topic it no longer has, not NONE. The DeleteTopics answer is released only once
    the coordinator has dropped the topic, so no wait is needed (metadata refreshes alone would
    declare the topic deleted only after two of them missed it)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _set_group_config(serve.bootstrap, group, "share.auto.offset.reset", "earliest")
    values = _produce(bootstrap, topic, 3, 1)
    consumer = ShareConsumer(
        {"bootstrap.servers": serve.bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    got: list[Message] = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        got += [m for m in consumer.poll(0.5) if m.error() is None]
    assert sorted(value_of(m) for m in got) == sorted(values)
    admin = AdminClient({"bootstrap.servers": serve.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    for m in got:
        consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    results = consumer.commit_sync(15)
    consumer.close()
    assert [(tp.topic, tp.partition) for tp in results] == [(topic, 0)]
    (error,) = results.values()
    assert error is not None and error.args[0].code() == KafkaError.UNKNOWN_TOPIC_ID
