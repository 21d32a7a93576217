"""LogWriter's producer settings (what they buy is measured by bench/offsets_bench.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.runtime.headers import batch_headers
from groupcoord.coordinator.runtime.log import LogWriter
from groupcoord.local_broker import free_port


def test_the_writer_lingers_under_a_millisecond() -> None:
    # linger.ms 0 woke librdkafka's broker thread for nearly every record handed over (5.2 us a
    # produce() instead of 1.8 on the local broker); more than a millisecond would be felt by a
    # lone commit (~4 ms acknowledged). No broker is needed to read the settings.
    writer = LogWriter({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, "writer-settings")
    try:
        assert 0 < float(writer.settings["linger.ms"]) <= 1
        assert writer.settings["enable.idempotence"] is True
    finally:
        writer.close(0)


def test_appended_records_land_as_handed_over_in_order_and_stamped_now(bootstrap: str, unique_name: str) -> None:
    # produce() is called with positional arguments (cheaper than keywords): key, value,
    # partition, headers and the timestamp (0: now) must still land where they belong.
    topic = f"writer-{unique_name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    written: list[int] = []  # the reports made before each ``on_written`` (the reader relay's kick)
    writer = LogWriter({"bootstrap.servers": bootstrap}, topic, on_written=lambda: written.append(len(reports)))
    headers = batch_headers(7, 3)
    records = [(b"k0", b"v0", headers[0]), (b"k1", None, headers[1]), (b"k2", b"v2", headers[2])]
    done = threading.Event()
    reports: list[tuple[KafkaError | None, int]] = []

    def delivered(error: KafkaError | None, offset: int) -> None:
        reports.append((error, offset))
        done.set()

    try:
        writer.append(1, records, delivered)
        assert done.wait(30)
    finally:
        writer.close()
    assert reports == [(None, 2)]  # one report for the append: its last record's offset
    assert written == [0]  # told once the append is written, before its report
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 1, 0)])
    read: list[Any] = []
    try:
        deadline = time.monotonic() + 30
        while len(read) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                read.append(msg)
    finally:
        consumer.close()
    assert [(m.partition(), m.offset(), m.key(), m.value(), m.headers()) for m in read] == [
        (1, i, key, value, list(h)) for i, (key, value, h) in enumerate(records)
    ]
    assert all(abs(m.timestamp()[1] / 1000 - time.time()) < 300 for m in read)


def test_an_append_cut_short_by_a_refused_record_is_reported_failed_once_what_was_queued_is_through(
    bootstrap: str, unique_name: str
) -> None:
    topic = f"writer-{unique_name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    writer = LogWriter({"bootstrap.servers": bootstrap, "message.max.bytes": 10_000}, topic)
    headers = batch_headers(1, 3)
    too_large = b"x" * 20_000
    reports: list[tuple[KafkaError | None, int]] = []
    done = threading.Event()

    def delivered(error: KafkaError | None, offset: int) -> None:
        reports.append((error, offset))
        done.set()

    try:
        # Refused at the first record: reported at once, on this thread.
        writer.append(0, [(b"k", too_large, headers[0])], delivered)
        assert done.is_set() and reports[0][0] is not None and reports[0][1] == -1
        # Refused at the third: the two before it were queued, so the report waits for them.
        done.clear()
        writer.append(
            0, [(b"k0", b"v", headers[0]), (b"k1", b"v", headers[1]), (b"k2", too_large, headers[2])], delivered
        )
        assert done.wait(30)
        assert len(reports) == 2 and reports[1][0] is not None and reports[1][1] == -1
        # The writer goes on: the next append is written after the two records queued before.
        done.clear()
        writer.append(0, [(b"k3", b"v", headers[0])], delivered)
        assert done.wait(30)
        assert reports[2] == (None, 2)
    finally:
        writer.close()
