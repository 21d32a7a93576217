"""LogWriter's producer settings (what they buy is measured by bench/offsets_bench.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.runtime import log as log_module
from groupcoord.coordinator.runtime.headers import batch_headers
from groupcoord.coordinator.runtime.log import LogWriter
from groupcoord.coordinator.runtime.shard import ShardStatus
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


class _FailingProducer(Producer):
    """The first producer made fails fatally once ``fail`` is set, as an idempotent producer whose
    log topic was created again does: poll() raises _GAPLESS_GUARANTEE (librdkafka raises a fatal
    error from poll() when no error_cb is set), and every produce() is refused with _FATAL."""

    made: list[Producer] = []
    fail = threading.Event()
    raised = threading.Event()

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        _FailingProducer.made.append(self)

    def _failing(self) -> bool:
        return self is _FailingProducer.made[0] and _FailingProducer.fail.is_set()

    def poll(self, *args: Any, **kwargs: Any) -> int:
        if self._failing() and not _FailingProducer.raised.is_set():
            _FailingProducer.raised.set()
            raise KafkaException(
                KafkaError(KafkaError._GAPLESS_GUARANTEE, "unable to satisfy gap-less guarantee", fatal=True)
            )
        return super().poll(*args, **kwargs)

    def produce(self, *args: Any, **kwargs: Any) -> None:
        if self._failing():
            raise KafkaException(KafkaError(KafkaError._FATAL, "Local: Fatal error"))
        super().produce(*args, **kwargs)


@pytest.fixture
def failing_producer(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_FailingProducer]]:
    monkeypatch.setattr(_FailingProducer, "made", [])
    monkeypatch.setattr(_FailingProducer, "fail", threading.Event())
    monkeypatch.setattr(_FailingProducer, "raised", threading.Event())
    monkeypatch.setattr(log_module, "Producer", _FailingProducer)
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    yield _FailingProducer
    assert died == []  # no thread died (the log-writer thread did, with a raw traceback)


def test_a_fatal_error_raised_on_the_writer_thread_is_reported_once_and_the_thread_lives_on(
    bootstrap: str, unique_name: str, failing_producer: type[_FailingProducer]
) -> None:
    topic = f"writer-{unique_name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    fatal: list[KafkaError] = []
    writer = LogWriter({"bootstrap.servers": bootstrap}, topic, on_fatal=lambda w, e: fatal.append(e))
    reports: list[tuple[KafkaError | None, int]] = []
    try:
        failing_producer.fail.set()
        assert failing_producer.raised.wait(10)
        deadline = time.monotonic() + 10
        while not fatal and time.monotonic() < deadline:
            time.sleep(0.01)
        writer.append(0, [(b"k", b"v", [])], lambda e, o: reports.append((e, o)))
        assert writer._thread.is_alive()
    finally:
        writer.close(0)
    assert [e.code() for e in fatal] == [KafkaError._GAPLESS_GUARANTEE]  # once, though produce failed too
    assert [(e.code() if e else None, o) for e, o in reports] == [(KafkaError._FATAL, -1)]


def test_a_producer_failed_fatally_is_replaced_and_the_shard_appends_through_the_new_one(
    bootstrap: str, unique_name: str, failing_producer: type[_FailingProducer], caplog: pytest.LogCaptureFixture
) -> None:
    # Seen in a probe: the log topic deleted and created again while serving; the idempotent
    # producer failed fatally (_GAPLESS_GUARANTEE) on the writer's thread, which died; every
    # append was then refused with _FATAL, and the shards reloaded ~50 times a second, forever.
    from groupcoord.coordinator.errors import ErrorCode
    from tests.integration.runtime_helpers import commit_request, running_service
    from tests.integration.test_runtime import committed_offset
    from tests.messages import COMMIT_CONTEXT

    async def main() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            ok = await service.commit_offsets(commit_request("w", "t", {0: 1}), COMMIT_CONTEXT)
            assert ok.topics[0].partitions[0].error_code == ErrorCode.NONE
            old = service.runtime.writer
            shard = service.shard_for("w")
            generation = shard.generation
            failing_producer.fail.set()
            # The append is refused (_FATAL): answered with a retriable error, the shard reloads.
            failed = await service.commit_offsets(commit_request("w", "t", {0: 2}), COMMIT_CONTEXT)
            assert failed.topics[0].partitions[0].error_code != ErrorCode.NONE
            assert shard.generation != generation
            deadline = time.monotonic() + 10
            while service.runtime.writer is old and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert service.runtime.writer is not old
            await asyncio.wait_for(shard.wait_loaded(), 30)
            while shard.status is not ShardStatus.ACTIVE and time.monotonic() < deadline + 20:
                await asyncio.sleep(0.05)
                await asyncio.wait_for(shard.wait_loaded(), 30)
            response = await service.commit_offsets(commit_request("w", "t", {0: 3}), COMMIT_CONTEXT)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert committed_offset(service, "w", "t", 0) == 3  # read back from the log
            assert len(failing_producer.made) == 2  # one new producer, not one per failure

    asyncio.run(main())
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "failed fatally" in r.getMessage()]
    assert len(errors) == 1, [r.getMessage() for r in errors]
