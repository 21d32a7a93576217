"""LogTailer feeding a shard's load on its own thread: what happens when the replay raises."""

from __future__ import annotations

from typing import Any

from coordinator.group_shard import GroupCoordinatorState
from coordinator.runtime.log import LogTailer
from coordinator.runtime.replayer import LogReplayer
from deploy.local_broker import free_port


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
