"""LogTailer feeding a shard's load on its own thread: what happens when the replay raises, the
cyclic collector held off while the load is read, and idle partitions paused between peeks."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable
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

    def leader_epoch(self) -> int | None:
        return None


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


def commits_log(bootstrap: str, topic: str, records: int, keys: int) -> None:
    """A one-partition log topic holding ``records`` commits over ``keys`` partitions of one group."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        key, value = encode(
            CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", i % keys), OffsetCommitValue(i))
        )
        producer.produce(topic, key=key, value=value, headers=log_headers(0, 0, 1), partition=0)
        producer.poll(0)
    producer.flush(10)


def loading_tailer(bootstrap: str, topic: str) -> tuple[LogTailer, threading.Event, list[LoadResult | LoadFailed]]:
    """A tailer whose loads' outcomes are kept, and an event set at the first."""
    ended = threading.Event()
    results: list[LoadResult | LoadFailed] = []

    def loaded(partition: int, generation: int, outcome: LoadResult | LoadFailed) -> None:
        results.append(outcome)
        ended.set()

    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        topic,
        on_records=lambda p, g, msgs: None,
        on_loaded=loaded,
        on_error=lambda p, g, err: None,
    )
    return tailer, ended, results


def test_the_collector_is_held_off_while_a_load_is_read_and_back_on_at_its_end(
    bootstrap: str, unique_name: str
) -> None:
    commits_log(bootstrap, unique_name, 6000, 50)  # more than one delivery of the reader (at most 2,000 records each)
    tailer, ended, results = loading_tailer(bootstrap, unique_name)
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


class FetchCount:
    """Fetch requests the tailer's consumer has sent, from librdkafka's statistics."""

    def __init__(self) -> None:
        self.sent = 0
        self.reports = threading.Event()

    def stats(self, report: str) -> None:
        brokers = json.loads(report)["brokers"].values()
        self.sent = sum(broker["req"].get("Fetch", 0) for broker in brokers)
        self.reports.set()

    def over(self, seconds: float) -> int:
        """Fetches sent over ``seconds``, between two fresh reports."""
        self.reports.clear()
        self.reports.wait(5)
        first = self.sent
        time.sleep(seconds)
        self.reports.clear()
        self.reports.wait(5)
        return self.sent - first


def produce_one(producer: Producer, topic: str) -> None:
    key, value = encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), OffsetCommitValue(1)))
    producer.produce(topic, key=key, value=value, headers=log_headers(0, 0, 1), partition=0)
    producer.flush(10)


def wait_for(condition: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_an_idle_partition_is_paused_peeked_and_resumed_by_an_append(bootstrap: str, unique_name: str) -> None:
    """An idle log partition is paused (a handful of Fetch requests a second, not one every fetch
    wait), a record another producer writes meanwhile is still read (a peek), and this process's
    own append resumes it at once."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    # One record loaded, as a shard's ShardEpoch is: the reader then has a position to go on from.
    produce_one(producer, unique_name)
    loaded = threading.Event()
    read: list[int] = []
    fetches = FetchCount()
    tailer = LogTailer(
        {"bootstrap.servers": bootstrap, "statistics.interval.ms": 100, "stats_cb": fetches.stats},
        unique_name,
        on_records=lambda p, g, msgs: read.extend(m.offset() or 0 for m in msgs),
        on_loaded=lambda p, g, outcome: loaded.set(),
        on_error=lambda p, g, err: None,
    )
    try:
        tailer.load(0, 1, new_load())
        assert loaded.wait(30)
        # Read continuously while this process writes: its appends keep the partition going.
        busy = threading.Event()

        def appending() -> None:
            while not busy.wait(0.05):
                tailer.expect(0)

        writer = threading.Thread(target=appending)
        writer.start()
        try:
            hot = fetches.over(1.0)
            assert tailer.paused == frozenset()
        finally:
            busy.set()
            writer.join()
        assert wait_for(lambda: tailer.paused == {0})
        idle = fetches.over(1.0)
        # Counts, not times: paused between peeks, the reader sends a fraction of what it sends
        # while reading continuously (about 200 a second with the 5 ms fetch wait, unloaded).
        assert idle * 3 < hot, (idle, hot)

        # Another writer's record is read while idle.
        producer.produce(unique_name, b"foreign", partition=0)
        producer.flush(10)
        assert wait_for(lambda: read == [1])

        # An own append resumes the partition as soon as it is reported, peeks or not.
        assert wait_for(lambda: tailer.paused == {0})
        tailer.expect(0)
        assert tailer.paused == frozenset()
    finally:
        tailer.close()


def test_a_partition_unassigned_while_paused_loads_again(bootstrap: str, unique_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(30)
    produce_one(Producer({"bootstrap.servers": bootstrap}), unique_name)
    results: list[tuple[int, LoadResult | LoadFailed]] = []
    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, msgs: None,
        on_loaded=lambda p, g, outcome: results.append((g, outcome)),
        on_error=lambda p, g, err: None,
    )
    try:
        tailer.load(0, 1, new_load())
        assert wait_for(lambda: tailer.paused == {0})
        tailer.unassign(0)
        tailer.load(0, 2, new_load())
        assert wait_for(lambda: len(results) == 2)
        assert [generation for generation, _ in results] == [1, 2]
        assert all(isinstance(outcome, LoadResult) and outcome.next_offset == 1 for _, outcome in results)
    finally:
        tailer.close()


def test_a_load_ends_at_the_high_watermark_of_the_fetch_that_read_it_without_the_end_event(
    bootstrap: str, unique_name: str, monkeypatch: Any
) -> None:
    """A load is read once its records reach the partition's high watermark, which the fetch that
    brought them told: it does not wait for librdkafka's end-of-partition event, which comes one
    fetch later (here: never, the event is turned off). An empty partition still ends at the event
    (the other tests)."""
    monkeypatch.setitem(TAILER_SETTINGS, "enable.partition.eof", False)
    commits_log(bootstrap, unique_name, 30, 5)
    tailer, ended, results = loading_tailer(bootstrap, unique_name)
    try:
        tailer.load(0, 1, new_load())
        assert ended.wait(30), "the load waited for an end-of-partition event"
        (result,) = results
        assert isinstance(result, LoadResult) and result.records_read == 30 and result.next_offset == 30
    finally:
        tailer.close()


def test_a_reader_finding_nothing_while_the_broker_tells_of_more_says_it_is_behind(
    bootstrap: str, unique_name: str
) -> None:
    """A poll that finds nothing although the broker's last answer put the partition's end past the
    reader means the broker cut its fetch short (Tansu's memory store answers a 1 ms fetch of a
    partition of thousands of batches with nothing): the reader says so, and serve's relay sends
    its next fetch with its full wait (reader_relay). Caught up, it says nothing. The broker's
    answer is stood in for by the high watermark the reader sees; the rest is the real reader."""
    commits_log(bootstrap, unique_name, 10, 5)
    behind = threading.Event()
    loaded = threading.Event()
    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, msgs: None,
        on_loaded=lambda p, g, outcome: loaded.set(),
        on_error=lambda p, g, err: None,
        on_behind=behind.set,
    )
    try:
        tailer.load(0, 1, new_load())
        assert loaded.wait(30)
        # Caught up (the load read all 10), tailing: empty polls, nothing said.
        assert not behind.wait(0.3)
        assert tailer._pacing.next_offset(0) == 10
        seen_end = tailer._high_watermark
        tailer._high_watermark = lambda partition: seen_end(partition) + 5  # type: ignore[method-assign]
        assert behind.wait(5), "the reader did not say it is behind"
    finally:
        tailer.close()


def test_a_load_that_got_nothing_while_the_broker_tells_of_records_says_it_is_behind(
    bootstrap: str, unique_name: str, monkeypatch: Any
) -> None:
    """A load's first fetch can come back empty too (Tansu lists a partition's batches within the
    fetch's wait, and a 5 ms fetch of a partition of 30,000 batches finds none): with no record
    delivered, the load reads from offset 0, so a high watermark past 0 means it is behind. Here an
    empty partition whose load never ends (no end-of-partition event) stands in for it, the high
    watermark the reader sees raised past 0."""
    monkeypatch.setitem(TAILER_SETTINGS, "enable.partition.eof", False)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(unique_name, 1, 1)])[unique_name].result(30)
    behind = threading.Event()
    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, msgs: None,
        on_loaded=lambda p, g, outcome: None,
        on_error=lambda p, g, err: None,
        on_behind=behind.set,
    )
    try:
        tailer.load(0, 1, new_load())
        assert wait_for(lambda: 0 in tailer._loading)
        assert not behind.wait(0.3)  # nothing there: not behind
        tailer._high_watermark = lambda partition: 5  # type: ignore[method-assign]
        assert behind.wait(5), "the load did not say it is behind"
    finally:
        tailer.close()
