"""Deleting a topic removes the offsets of that incarnation only (through serve, real clients)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration


def committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def test_deleted_topic_offsets_go_and_a_recreated_topic_starts_clean(
    bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROUPCOORD_METADATA_REFRESH_INTERVAL_MS", "300")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    doomed, kept = f"{unique_name}-doomed", f"{unique_name}-kept"
    for name in (doomed, kept):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    serve = ServeProcess(bootstrap, free_port(), unique_name).start()
    try:
        time.sleep(1)  # let the metadata cache see both topics
        commit(serve.bootstrap, "g", doomed, 10)
        commit(serve.bootstrap, "g", kept, 20)
        admin.delete_topics([doomed])[doomed].result(10)
        deadline = time.monotonic() + 20
        while committed(serve.bootstrap, "g", doomed) != -1001 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert committed(serve.bootstrap, "g", doomed) == -1001  # OFFSET_INVALID: nothing committed
        assert committed(serve.bootstrap, "g", kept) == 20
        # The same name again is a new incarnation with no history.
        admin.create_topics([NewTopic(doomed, 1, 1)])[doomed].result(10)
        time.sleep(1)
        commit(serve.bootstrap, "g", doomed, 3)
        time.sleep(1.5)
        assert committed(serve.bootstrap, "g", doomed) == 3
    finally:
        serve.stop()


def test_a_topic_recreated_past_the_sidecar_keeps_the_commits_made_after_a_client_saw_it(
    bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted and re-created on the cluster directly: the old code resolved the next commits
    against the old incarnation and dropped them with it at the next refresh. The client's
    Metadata request through the sidecar, which shows the new topic id, now updates the picture
    first (as Kafka's coordinator learns a deletion before a client can see the topic again)."""
    monkeypatch.setenv("GROUPCOORD_METADATA_REFRESH_INTERVAL_MS", "3000")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"{unique_name}-again"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    serve = ServeProcess(bootstrap, free_port(), unique_name).start()
    try:
        commit(serve.bootstrap, "g", topic, 5)
        admin.delete_topics([topic])[topic].result(10)
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
        client = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": "g", "enable.auto.commit": False})
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the broker may still be creating it
                listed = client.list_topics(topic, timeout=10).topics[topic]
                if listed.error is None and listed.partitions:
                    break
                time.sleep(0.1)
            client.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        finally:
            client.close()
        time.sleep(7.5)  # two periodic refreshes: the old code's dropped the commit of 7 by now
        assert committed(serve.bootstrap, "g", topic) == 7
    finally:
        serve.stop()
