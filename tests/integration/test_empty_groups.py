"""Empty groups that never committed an offset are deleted by the retention sweep of a real
``groupcoord serve``, as Kafka deletes them (found by a soak probe: they were kept for ever, and
their records grew without bound). A group that committed keeps its offsets until they expire."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess, serving
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

SETTINGS = {
    "GROUPCOORD_OFFSETS__OFFSETS_RETENTION_CHECK_INTERVAL_MS": "500",
    "GROUPCOORD_GROUP": '{"group.initial.rebalance.delay.ms": "0"}',
    "GROUPCOORD_METADATA_REFRESH_INTERVAL_MS": "1000",
}


def consume_and_close(bootstrap: str, group: str, topic: str, protocol: str, commit: bool) -> None:
    """One consumer joins ``group``, is assigned, commits or not, and closes (leaves) cleanly."""
    settings = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    settings["group.protocol"] = protocol
    if protocol == "classic":
        settings.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    consumer = Consumer(settings)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, f"{group}: no assignment"
            consumer.poll(0.2)
        if commit:
            consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    finally:
        consumer.close()


def listed_groups(admin: AdminClient) -> set[str]:
    result = admin.list_consumer_groups(request_timeout=10).result()
    assert not result.errors, result.errors
    return {g.group_id for g in result.valid}


def test_empty_groups_without_offsets_are_deleted_by_the_sweep(bootstrap: str, unique_name: str) -> None:
    topic = f"{unique_name}-t"
    ensure_topic(bootstrap, topic, 2)
    serve = ServeProcess(bootstrap, free_port(), unique_name, partitions=2)
    with serving(serve, SETTINGS):
        empty = {protocol: f"{unique_name}-{protocol}-empty" for protocol in ("classic", "consumer")}
        kept = f"{unique_name}-committed"
        for protocol, group in empty.items():
            consume_and_close(serve.bootstrap, group, topic, protocol, commit=False)
        consume_and_close(serve.bootstrap, kept, topic, "consumer", commit=True)
        admin = AdminClient({"bootstrap.servers": serve.bootstrap})
        deadline = time.monotonic() + 20
        while (listed := listed_groups(admin)) & set(empty.values()):
            assert time.monotonic() < deadline, f"still listed: {sorted(listed & set(empty.values()))}"
            time.sleep(0.5)
        # Its offsets are a week from expiring: the group that committed stays, offsets and all.
        assert kept in listed
        check = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": kept, "enable.auto.commit": False})
        try:
            assert check.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 5
        finally:
            check.close()
