"""LogTailer feeding a shard's load on its own thread: what happens when the replay raises, and the
cyclic collector held off while the load is read."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.runtime.clock import SystemClock
from groupcoord.coordinator.runtime.load import LoadFailed, LoadResult, ShardLoad
from groupcoord.coordinator.runtime.log import TAILER_SETTINGS, CollectorPause, LogTailer
from groupcoord.local_broker import free_port
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue
from tests.client_records import log_headers


class Unreadable:
    """A consumed record whose headers cannot be read (a stand-in for a replay bug)."""

    def offset(self) -> int:
        return 0

    def key(self) -> bytes:
        return b"\x00\x01"

    def value(self) -> bytes:
        return b""

    def headers(self) -> Any:
        raise RuntimeError("boom")


def new_load() -> ShardLoad:
    return ShardLoad("log", 0, GroupCoordinatorState(), GroupCoordinatorState(), "me", SystemClock())


def test_a_load_whose_replay_raises_on_the_reader_thread_is_reported_once_and_dropped() -> None:
    failed: list[tuple[int, int, str]] = []
    delivered: list[tuple[int, int, int]] = []
    tailer = LogTailer(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"},  # nothing listens: no record is read
        "log",
        on_records=lambda p, g, msgs: delivered.append((p, g, len(msgs))),
        on_loaded=lambda p, g, outcome: failed.append((p, g, str(outcome))),
        on_error=lambda p, g, err: None,
    )
    try:
        tailer.stall()
        tailer._loading[0] = new_load()
        tailer._deliver(0, 7, [Unreadable()] * 20)  # type: ignore[list-item]
        assert failed == [(0, 7, "replay failed at offset -1: RuntimeError('boom')")]
        # The failed load's replayer is not fed again: later records go to the shard, which has failed.
        tailer._deliver(0, 7, [Unreadable()] * 20)  # type: ignore[list-item]
        assert len(failed) == 1 and delivered == [(0, 7, 20)]
    finally:
        tailer.close()


class WatchedLoad(ShardLoad):
    """A load that notes, at each delivery, whether the cyclic collector runs."""

    def __init__(self) -> None:
        super().__init__("log", 0, GroupCoordinatorState(), GroupCoordinatorState(), "me", SystemClock())
        self.collector_on: list[bool] = []

    def feed(self, messages: Any, of_class: type | None = None) -> None:
        self.collector_on.append(gc.isenabled())
        super().feed(messages, of_class)


def test_the_collector_is_held_off_while_a_load_is_read_and_back_on_at_its_end(
    bootstrap: str, unique_name: str
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(6000):  # more than one delivery of the reader (at most 2,000 records each)
        key, value = encode(
            CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", i % 50), OffsetCommitValue(i))
        )
        producer.produce(unique_name, key=key, value=value, headers=log_headers(0, 0, 1), partition=0)
        producer.poll(0)
    producer.flush(10)
    ended = threading.Event()
    results: list[LoadResult | LoadFailed] = []

    def loaded(partition: int, generation: int, outcome: LoadResult | LoadFailed) -> None:
        results.append(outcome)
        ended.set()

    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, msgs: None,
        on_loaded=loaded,
        on_error=lambda p, g, err: None,
    )
    load = WatchedLoad()
    assert gc.isenabled()
    try:
        tailer.load(0, 1, load)
        assert ended.wait(30)
        assert len(load.collector_on) >= 3
        assert False in load.collector_on  # paused while the records kept coming
        deadline = time.monotonic() + 5
        while not gc.isenabled() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.isenabled()  # and back on once the load is read
        (result,) = results
        assert isinstance(result, LoadResult) and result.records_read == 6000 and result.next_offset == 6000
    finally:
        tailer.close()
    assert gc.isenabled()


def test_the_reader_never_turns_on_a_collector_someone_else_turned_off() -> None:
    pause = CollectorPause()
    gc.disable()
    try:
        pause.pause()
        pause.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
    pause.pause()
    assert not gc.isenabled()
    pause.pause()
    pause.resume()
    assert gc.isenabled()


def test_a_load_ends_at_the_high_watermark_of_the_fetch_that_read_it_without_the_end_event(
    bootstrap: str, unique_name: str, monkeypatch: Any
) -> None:
    """A load is read once its records reach the partition's high watermark, which the fetch that
    brought them told: it does not wait for librdkafka's end-of-partition event, which comes one
    fetch later (here: never, the event is turned off). An empty partition still ends at the event
    (the other tests)."""
    monkeypatch.setitem(TAILER_SETTINGS, "enable.partition.eof", False)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(30):
        key, value = encode(
            CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", i % 5), OffsetCommitValue(i))
        )
        producer.produce(unique_name, key=key, value=value, headers=log_headers(0, 0, 1), partition=0)
    producer.flush(10)
    ended = threading.Event()
    results: list[LoadResult | LoadFailed] = []

    def loaded(partition: int, generation: int, outcome: LoadResult | LoadFailed) -> None:
        results.append(outcome)
        ended.set()

    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, m: None,
        on_loaded=loaded,
        on_error=lambda p, g, e: None,
    )
    try:
        tailer.load(0, 1, new_load())
        assert ended.wait(30), "the load waited for an end-of-partition event"
        (result,) = results
        assert isinstance(result, LoadResult) and result.records_read == 30 and result.next_offset == 30
    finally:
        tailer.close()
