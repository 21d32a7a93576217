"""Topics the tests commit to: commits for a topic the cluster lacks are refused, as in Kafka."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    """Create ``topic`` on the backing cluster unless it exists (tests share the session broker)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    deadline = time.monotonic() + 20
    while topic not in admin.list_topics(timeout=10).topics:
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} did not appear")
        time.sleep(0.1)
