"""The one place the simulations call the group handlers (``GroupCoordinatorShard``).

Every workload builds its operations here, so a change of the handlers' API (a request-context
value instead of ``now_ms``/metadata/configs, renamed classes) is adapted in this file alone.
An operation is what ``Shard.submit`` takes: ``(state, now_ms) -> Result``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from coordinator.errors import ErrorCode
from coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from coordinator.groups import classic
from coordinator.groups.classic import ClassicGroupConfig
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    RequestContext,
    heartbeat_error_response,
)
from coordinator.groups.topics import TopicsImage
from coordinator.offsets.config import OffsetsConfig
from coordinator.offsets.handlers import commit_response
from coordinator.offsets.messages import OffsetCommitRequest, OffsetCommitResponse
from coordinator.runtime.api import Result
from coordinator.runtime.shard import Shard, ShardNotAvailable
from coordinator.service.service import error_for

R = TypeVar("R")
State = GroupCoordinatorState
Op = Callable[[GroupCoordinatorState, int], Result[Any]]
CONTEXT = RequestContext(1, "sim", "/sim")


def handlers(
    metadata: Callable[[], TopicsImage],
    consumer_config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig | None = None,
) -> GroupCoordinatorShard:
    return GroupCoordinatorShard(
        offsets_config=OffsetsConfig(),
        classic_config=classic_config or ClassicGroupConfig(initial_rebalance_delay_ms=0),
        consumer_config=consumer_config,
        metadata=metadata,
    )


def consumer_heartbeat(h: GroupCoordinatorShard, request: ConsumerGroupHeartbeatRequest) -> Op:
    return lambda state, now: h.consumer_group_heartbeat(state, request, now, CONTEXT)


def commit_offsets(h: GroupCoordinatorShard, request: OffsetCommitRequest) -> Op:
    return lambda state, now: h.commit_offsets(state, request, now)


def call(shard: Shard[Any], op: Op, on_error: Callable[[ErrorCode], R], on_answer: Callable[[R], None]) -> None:
    """Submit ``op`` to the real shard; ``on_answer`` gets its answer once the runtime releases
    it (after read-back), or the error answer the service gives when the shard cannot serve."""

    def done(fut: Any) -> None:
        exc = fut.exception()
        on_answer(on_error(error_code(exc)) if exc is not None else fut.result())

    shard.submit(op).add_done_callback(done)


def error_code(exc: BaseException) -> ErrorCode:
    """The Kafka error the service answers for a failed shard operation."""
    if isinstance(exc, ShardNotAvailable):
        return error_for(exc)
    raise exc


def heartbeat_error(code: ErrorCode) -> ConsumerGroupHeartbeatResponse:
    return heartbeat_error_response(code)


def commit_error(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return commit_response(request, code)


def join_group(h: GroupCoordinatorShard, request: classic.JoinGroupRequest, token: Hashable) -> Op:
    return lambda state, now: h.join_group(state, request, token, now)


def sync_group(h: GroupCoordinatorShard, request: classic.SyncGroupRequest, token: Hashable) -> Op:
    return lambda state, now: h.sync_group(state, request, token, now)


def heartbeat(h: GroupCoordinatorShard, request: classic.HeartbeatRequest) -> Op:
    return lambda state, now: h.heartbeat(state, request, now)


def leave_group(h: GroupCoordinatorShard, request: classic.LeaveGroupRequest) -> Op:
    return lambda state, now: h.leave_group(state, request, now)


def consumer_heartbeat_as(
    h: GroupCoordinatorShard, request: ConsumerGroupHeartbeatRequest, client_id: str, host: str
) -> Op:
    context = RequestContext(1, client_id, host)
    return lambda state, now: h.consumer_group_heartbeat(state, request, now, context)


# The answers a client gets when its request never reached the group logic (shard not available).
ERROR_RESPONSES: dict[str, Callable[[ErrorCode], Any]] = {
    "join": lambda code: classic.JoinGroupResponse(error_code=code),
    "sync": lambda code: classic.SyncGroupResponse(error_code=code),
    "hb": lambda code: classic.HeartbeatResponse(error_code=code),
    "heartbeat": lambda code: classic.HeartbeatResponse(error_code=code),
    "leave": lambda code: classic.LeaveGroupResponse(error_code=code),
    "cghb": heartbeat_error_response,
}
