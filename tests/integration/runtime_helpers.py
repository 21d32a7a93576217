"""Helpers to run a coordinator runtime in-process against the test broker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup
from groupcoord.coordinator.runtime.log import LogTopicSpec
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests import messages


@asynccontextmanager
async def running_service(
    bootstrap: str, topic: str, partitions: int = 4, owner: str = "test"
) -> AsyncIterator[GroupCoordinatorService]:
    handlers = GroupCoordinatorShard()
    runtime: CoordinatorRuntime[GroupCoordinatorState] = CoordinatorRuntime(
        {"bootstrap.servers": bootstrap}, LogTopicSpec(name=topic, partitions=partitions), handlers, owner_id=owner
    )
    await runtime.start()
    await runtime.wait_loaded(timeout=60)
    try:
        yield GroupCoordinatorService(runtime, handlers)
    finally:
        await runtime.close()


def commit_request(group: str, topic: str, offsets: dict[int, int], metadata: str = "") -> OffsetCommitRequest:
    return messages.commit_request(
        group,
        [
            messages.commit_topic(
                topic, [messages.commit_partition(p, o, metadata=metadata) for p, o in offsets.items()]
            )
        ],
    )


def fetch_request(group: str, topic: str, partitions: list[int]) -> list[OffsetFetchRequestGroup]:
    return [messages.fetch_group(group, [messages.fetch_topic(topic, partitions)])]
