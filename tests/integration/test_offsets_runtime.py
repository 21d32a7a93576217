"""Offsets and group administration through the real runtime and broker."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.runtime.clock import ManualClock
from groupcoord.coordinator.runtime.log import LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests.integration.runtime_helpers import commit_request, fetch_request
from tests.messages import COMMIT_CONTEXT, delete_request, delete_topic

pytestmark = pytest.mark.integration

HANDLERS = GroupCoordinatorShard(offsets_config=OffsetsConfig(offsets_retention_minutes=1))


async def start(bootstrap: str, topic: str, clock: ManualClock) -> GroupCoordinatorService:
    runtime: CoordinatorRuntime[GroupCoordinatorState] = CoordinatorRuntime(
        {"bootstrap.servers": bootstrap}, LogTopicSpec(name=topic, partitions=2), HANDLERS, clock=clock
    )
    await runtime.start()
    await runtime.wait_loaded(60)
    return GroupCoordinatorService(runtime, HANDLERS)


def test_reload_in_the_middle_of_a_retention_sweep(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        clock = ManualClock(1_000_000)
        service = await start(bootstrap, unique_name, clock)
        groups = [f"sweep-{i}" for i in range(20)]
        await asyncio.gather(
            *(service.commit_offsets(commit_request(g, "t", {0: 1, 1: 2}), COMMIT_CONTEXT) for g in groups)
        )
        clock.advance(2 * 60_000)
        shards = {service.partition_for(g) for g in groups}
        service.runtime.tailer.stall()
        sweeps = [
            service.runtime.shard(p).submit(lambda state, now: HANDLERS.expire_offsets(state, now)) for p in shards
        ]
        await asyncio.sleep(0.5)
        for p in shards:
            service.runtime.shard(p).reload("test: coordinator reload mid-sweep")
        service.runtime.tailer.resume()
        for sweep in sweeps:
            with pytest.raises(Exception, match="loading"):
                await sweep
        await service.runtime.wait_loaded(60)
        for p in shards:
            shard = service.runtime.shard(p)
            # The sweep's batch was either fully in the log or not at all; the reload shows one or the other.
            leftover = {g for g in groups if shard.committed.offsets.has_group(g)}
            assert leftover in ({g for g in groups if service.partition_for(g) == p}, set())
        # The next sweep (as the periodic timer would run it) finishes the job; nothing is half-expired.
        await asyncio.gather(
            *(service.runtime.shard(p).write(lambda state, now: HANDLERS.expire_offsets(state, now)) for p in shards)
        )
        fetched = await service.fetch_offsets([g for group in groups for g in fetch_request(group, "t", [0, 1])])
        assert all(p.committed_offset == -1 for f in fetched for t in f.topics for p in t.partitions)
        await service.runtime.close()

    asyncio.run(main())


def test_admin_through_the_runtime_survives_restart(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        clock = ManualClock(5_000)
        service = await start(bootstrap, unique_name, clock)
        await service.commit_offsets(commit_request("a", "t", {0: 1, 1: 1}), COMMIT_CONTEXT)
        await service.commit_offsets(commit_request("b", "t", {0: 7}), COMMIT_CONTEXT)
        assert await service.delete_groups(["a", "missing"]) == [("a", 0), ("missing", ErrorCode.GROUP_ID_NOT_FOUND)]
        deleted = await service.delete_offsets(delete_request("b", [delete_topic("t", [0])]))
        assert deleted.error_code == 0
        error, listed = await service.list_groups()
        assert error == 0 and [g.group_id for g in listed] == []
        await service.commit_offsets(commit_request("c", "t", {3: 3}), COMMIT_CONTEXT)
        await service.runtime.close()
        service = await start(bootstrap, unique_name, clock)
        error, listed = await service.list_groups()
        assert [g.group_id for g in listed] == ["c"]
        (a,) = await service.fetch_offsets(fetch_request("a", "t", [0, 1]))
        assert [p.committed_offset for p in a.topics[0].partitions] == [-1, -1]
        await service.runtime.close()

    asyncio.run(main())
