"""GroupCoordinatorService: routes each group request to the shard that owns the group."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from coordinator.errors import ErrorCode
from coordinator.group_shard import GroupCoordinatorHandlers, GroupCoordinatorShard
from coordinator.offsets.handlers import fetch_offsets
from coordinator.offsets.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequestGroup,
    OffsetFetchResponseGroup,
)
from coordinator.runtime.api import Result
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.shard import Shard, ShardNotAvailable, ShardStatus
from coordinator.service.partitioning import partition_for

T = TypeVar("T")

_STATUS_ERRORS = {
    ShardStatus.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ShardStatus.FAILED: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ShardStatus.FENCED: ErrorCode.NOT_COORDINATOR,
    ShardStatus.CLOSED: ErrorCode.NOT_COORDINATOR,
    ShardStatus.ACTIVE: ErrorCode.NONE,
}


def error_for(exc: ShardNotAvailable) -> ErrorCode:
    return _STATUS_ERRORS[exc.status]


class GroupCoordinatorService:
    def __init__(self, runtime: CoordinatorRuntime[GroupCoordinatorShard], handlers: GroupCoordinatorHandlers) -> None:
        self.runtime = runtime
        self.handlers = handlers

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.runtime.partitions)

    def shard_for(self, group_id: str) -> Shard[GroupCoordinatorShard]:
        return self.runtime.shard(self.partition_for(group_id))

    async def _write(self, group_id: str, op: Callable[[GroupCoordinatorShard, int], Result[T]]) -> T:
        return await self.shard_for(group_id).write(op)

    async def commit_offsets(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        try:
            return await self._write(
                request.group_id, lambda state, now: self.handlers.commit_offsets(state, request, now)
            )
        except ShardNotAvailable as exc:
            code = error_for(exc)
            return OffsetCommitResponse(
                [
                    OffsetCommitResponseTopic(
                        t.name, [OffsetCommitResponsePartition(p.partition_index, code) for p in t.partitions]
                    )
                    for t in request.topics
                ]
            )

    async def fetch_offsets(self, groups: list[OffsetFetchRequestGroup]) -> list[OffsetFetchResponseGroup]:
        """Reads see only committed offsets (the shard's committed state)."""
        out = []
        for group in groups:
            try:
                committed = self.shard_for(group.group_id).read(lambda state: state.offsets)
            except ShardNotAvailable as exc:
                out.append(OffsetFetchResponseGroup(group.group_id, [], error_for(exc)))
                continue
            out.append(fetch_offsets(committed, group))
        return out
