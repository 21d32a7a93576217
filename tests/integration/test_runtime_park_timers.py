"""Parked responses, completions and timers through the real runtime (a toy state machine)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import pytest

from groupcoord.coordinator.runtime.api import Park, Result, ScheduleTimer
from groupcoord.coordinator.runtime.log import LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue

pytestmark = pytest.mark.integration


class BarrierState:
    def __init__(self) -> None:
        self.values: dict[int, int] = {}  # persisted, through records
        self.waiting: list[Hashable] = []  # transient

    def replay(self, record: CoordinatorRecord) -> None:
        if record.value is None:
            self.values.pop(record.key.partition, None)
        else:
            self.values[record.key.partition] = record.value.offset

    def snapshot(self) -> Any:
        return dict(self.values)


def _record(slot: int, value: int) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("barrier", "t", slot), OffsetCommitValue(value))


class BarrierHandlers:
    size = 3

    def create_state(self) -> BarrierState:
        return BarrierState()

    def on_loaded(self, state: BarrierState, now_ms: int) -> Result[None]:
        return Result(None, timers=[ScheduleTimer("tick", now_ms + 200, "tick")])

    def on_timer(self, state: BarrierState, event: Any, now_ms: int) -> Result[None]:
        return Result(None, records=[_record(99, state.values.get(99, 0) + 1)])

    def join(self, state: BarrierState, token: Hashable) -> Result[int]:
        state.waiting.append(token)
        if len(state.waiting) < self.size:
            return Result(Park(token))
        members, state.waiting = state.waiting, []
        generation = state.values.get(0, 0) + 1
        return Result(generation, records=[_record(0, generation)], completions=[(t, generation) for t in members[:-1]])


def test_parked_requests_complete_after_the_barrier_record_commits(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        handlers = BarrierHandlers()
        runtime: CoordinatorRuntime[BarrierState] = CoordinatorRuntime(
            {"bootstrap.servers": bootstrap}, LogTopicSpec(name=unique_name, partitions=1), handlers
        )
        await runtime.start()
        await runtime.wait_loaded(60)
        shard = runtime.shard(0)
        try:
            first = shard.submit(lambda s, now: handlers.join(s, "a"))
            second = shard.submit(lambda s, now: handlers.join(s, "b"))
            await asyncio.sleep(0.3)
            assert not first.done() and not second.done()
            runtime.tailer.stall()
            third = shard.submit(lambda s, now: handlers.join(s, "c"))
            await asyncio.sleep(0.5)
            # The barrier closed, but its record is not read back yet: nobody is answered.
            assert not any(f.done() for f in (first, second, third))
            runtime.tailer.resume()
            assert await asyncio.wait_for(asyncio.gather(first, second, third), 10) == [1, 1, 1]
            # The timer fired on its own and wrote through the same path.
            for _ in range(100):
                if shard.committed.values.get(99):
                    break
                await asyncio.sleep(0.05)
            assert shard.committed.values.get(99) == 1
            assert shard.replay_matches()
            # Parked requests of a shard that reloads fail instead of hanging.
            parked = shard.submit(lambda s, now: handlers.join(s, "d"))
            await asyncio.sleep(0.1)
            shard.reload("test")
            with pytest.raises(Exception, match="loading"):
                await asyncio.wait_for(parked, 5)
        finally:
            await runtime.close()

    asyncio.run(main())
