"""A shard dropped on revocation and created anew for the same partition (placement gave it back,
as after the review's S3, when the placement consumer was kicked out of its group) must not take
the reader's reports for its predecessor, still queued on the loop, for its own.

Before shard generations were unique in the process, the new shard counted from 1 again and took
the old report of the end of the partition for its own load's: it finished its load while the
reader was still feeding it, and either never became active (no error, no log line: a silent
wedge) or became active without the records read so far (acknowledged commits gone)."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.runtime.load import LoadResult
from tests.integration.runtime_helpers import commit_request, fetch_request, running_service
from tests.messages import client

pytestmark = pytest.mark.integration


def test_a_recreated_shard_loads_whatever_its_predecessor_reader_reported(bootstrap: str, unique_name: str) -> None:
    async def scenario() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            runtime = service.runtime
            for i in range(50):
                await service.commit_offsets(commit_request(f"g{i}", "t", {0: i}), client(8))
            old = runtime.shards[0]
            stale, end = old.generation, old.committed_offset
            runtime.unload_shard(0)
            fresh = runtime.load_shard(0)
            # The reader's last report of the end of the partition for the old shard (its load's
            # result), queued on the loop before it saw the unassignment.
            runtime._from_reader("on_loaded")(0, stale, LoadResult(end, old.epoch + 1, [], [], 0, 0.0))
            await asyncio.wait_for(fresh.wait_loaded(), 20)
            (answer,) = await service.fetch_offsets(fetch_request("g49", "t", [0]))
            assert answer.error_code == 0 and answer.topics[0].partitions[0].committed_offset == 49
            await service.commit_offsets(commit_request("after", "t", {0: 7}), client(8))

    asyncio.run(asyncio.wait_for(scenario(), 90))


def test_the_runtime_watchdog_warns_about_and_reloads_a_shard_whose_writes_are_not_read_back(
    bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            runtime = service.runtime
            runtime.stuck_warning_ms, runtime.stuck_reload_ms = 300, 1500
            shard = runtime.shards[0]
            await asyncio.to_thread(runtime.tailer.stall)
            waiting = asyncio.create_task(service.commit_offsets(commit_request("g", "t", {0: 1}), client(8)))
            for _ in range(100):
                if shard.stuck:
                    break
                await asyncio.sleep(0.05)
            assert shard.stuck
            # Reloaded: the write is answered with a retriable error rather than never.
            answer = await asyncio.wait_for(waiting, 10)
            assert answer.topics[0].partitions[0].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            runtime.tailer.resume()
            await asyncio.wait_for(shard.wait_loaded(), 20)
            again = await service.commit_offsets(commit_request("g", "t", {0: 2}), client(8))
            assert again.topics[0].partitions[0].error_code == 0

    with caplog.at_level("WARNING", logger="groupcoord.coordinator.runtime.shard"):
        asyncio.run(asyncio.wait_for(scenario(), 90))
    messages = [r.getMessage() for r in caplog.records]
    assert sum("read back from the log (" in m for m in messages) == 1
    assert any("reloading from the log: a write waited" in m for m in messages)
