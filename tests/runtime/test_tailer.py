"""LogTailer feeding a shard's load on its own thread: what happens when the replay raises, and the
cyclic collector held off while the load is read."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.group_shard import GroupCoordinatorState
from coordinator.runtime.headers import make_headers
from coordinator.runtime.log import CollectorPause, LogTailer
from coordinator.runtime.replayer import LogReplayer
from deploy.local_broker import free_port
from records import CoordinatorRecord, RecordType, encode
from records.definitions import OffsetCommitKey, OffsetCommitValue


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


def test_a_load_whose_replay_raises_on_the_reader_thread_is_reported_once_and_dropped() -> None:
    failed: list[tuple[int, int, str]] = []
    delivered: list[tuple[int, int, int]] = []
    tailer = LogTailer(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}"},  # nothing listens: no record is read
        "log",
        on_records=lambda p, g, msgs: delivered.append((p, g, len(msgs))),
        on_end=lambda p, g, offset: None,
        on_error=lambda p, g, err: None,
        on_load_failed=lambda p, g, why: failed.append((p, g, why)),
    )
    try:
        tailer.stall()
        loader = LogReplayer("log", 0, [GroupCoordinatorState()], deferred=True)
        tailer._loading[0] = loader
        tailer._deliver(0, 7, [Unreadable()] * 20)  # type: ignore[list-item]
        assert failed == [(0, 7, "replay failed at offset -1: RuntimeError('boom')")]
        # The failed load's replayer is not fed again: later records go to the shard, which has failed.
        tailer._deliver(0, 7, [Unreadable()] * 20)  # type: ignore[list-item]
        assert len(failed) == 1 and delivered == [(0, 7, 20)]
    finally:
        tailer.close()


class WatchedLoader(LogReplayer):
    """A load's replayer that notes, at each delivery, whether the cyclic collector runs."""

    def __init__(self) -> None:
        super().__init__("log", 0, [GroupCoordinatorState()], deferred=True)
        self.collector_on: list[bool] = []

    def feed_messages(self, messages: Any) -> None:
        self.collector_on.append(gc.isenabled())
        super().feed_messages(messages)


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
        producer.produce(unique_name, key=key, value=value, headers=make_headers(0, 0, 1), partition=0)
        producer.poll(0)
    producer.flush(10)
    ended = threading.Event()
    tailer = LogTailer(
        {"bootstrap.servers": bootstrap},
        unique_name,
        on_records=lambda p, g, msgs: None,
        on_end=lambda p, g, offset: ended.set(),
        on_error=lambda p, g, err: None,
        on_load_failed=lambda p, g, why: None,
    )
    loader = WatchedLoader()
    assert gc.isenabled()
    try:
        tailer.assign_from_start(0, 1, loader)
        assert ended.wait(30)
        assert len(loader.collector_on) >= 3
        assert False in loader.collector_on  # paused while the records kept coming
        deadline = time.monotonic() + 5
        while not gc.isenabled() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.isenabled()  # and back on once the load is read
        assert loader.read == 6000
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
