"""How the service answers requests whose shard cannot serve them."""

from __future__ import annotations

import asyncio
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.runtime.shard import ShardNotAvailable, ShardStatus
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests.messages import client, heartbeat_request


class _Shard:
    def __init__(self, status: ShardStatus) -> None:
        self.status = status

    async def write(self, op: Any) -> Any:
        raise ShardNotAvailable(0, self.status)


class _Runtime:
    partitions = 1

    def __init__(self, status: ShardStatus) -> None:
        self._shard = _Shard(status)

    def shard(self, partition: int) -> _Shard:
        return self._shard


def _heartbeat(status: ShardStatus) -> int:
    service = GroupCoordinatorService(_Runtime(status), GroupCoordinatorShard())  # type: ignore[arg-type]
    request = heartbeat_request("g", 1, "m")
    return asyncio.run(service.heartbeat(request, client(4))).error_code


def test_classic_heartbeat_during_shard_load_answers_none() -> None:
    assert _heartbeat(ShardStatus.LOADING) == ErrorCode.NONE


def test_classic_heartbeat_to_a_shard_this_process_does_not_own_is_not_coordinator() -> None:
    assert _heartbeat(ShardStatus.CLOSED) == ErrorCode.NOT_COORDINATOR
    assert _heartbeat(ShardStatus.FAILED) == ErrorCode.COORDINATOR_NOT_AVAILABLE
