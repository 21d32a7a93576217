"""The one place the simulations call the group handlers (``GroupCoordinatorShard``).

Every workload builds its operations here, so a change of the handlers' API (a request-context
value instead of ``now_ms``/metadata/configs, renamed classes) is adapted in this file alone.
An operation is what ``Shard.submit`` takes: ``(state, now_ms) -> Result``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups.classic import ClassicGroupConfig
from groupcoord.coordinator.groups.classic.requests import join_error
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    heartbeat_error_response,
)
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.offsets.handlers import commit_response
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.shard import Shard, ShardNotAvailable
from groupcoord.coordinator.service.service import error_for
from groupcoord.records import RecordType
from tests.messages import wire_id

R = TypeVar("R")
State = GroupCoordinatorState
Op = Callable[[GroupCoordinatorState, int], Result[Any]]
CONTEXT = RequestContext(1, "sim", "/sim")
# OffsetCommit v9: topics by name (the edge resolves their ids; the simulations name both).
COMMIT_CONTEXT = RequestContext(9, "sim", "/sim")


# Retention sweep intervals the scenarios draw from (ms; None: Kafka's 10 minutes, which no
# scenario lasts): half of them sweep every second or few, among their joins, leaves and faults.
SWEEPS: tuple[int | None, ...] = (None, None, 1_000, 7_000)


@dataclass(frozen=True)
class SimShardHandlers(GroupCoordinatorShard):
    """The shard's handlers, counting the groups each retention sweep deletes as it makes their
    tombstones: the live state loses the group then, long before the records are read back, and a
    join in the same flush may create it again from epoch 0."""

    swept: Counter[str] = field(default_factory=Counter)

    def expire_offsets(self, state: GroupCoordinatorState, now_ms: int) -> Result[None]:
        result = super().expire_offsets(state, now_ms)
        for record in result.records:
            if record.value is None and record.type in (RecordType.GROUP_METADATA, RecordType.CONSUMER_GROUP_METADATA):
                self.swept[record.key.group] += 1
        return result


def handlers(
    metadata: Callable[[], TopicsImage],
    consumer_config: ConsumerGroupConfig,
    classic_config: ClassicGroupConfig | None = None,
    retention_check_ms: int | None = None,
) -> SimShardHandlers:
    """The handlers of a simulated shard. ``retention_check_ms`` runs the retention sweep (Kafka's
    cleanupGroupMetadata) that often instead of every 10 minutes, so a scenario of a few simulated
    minutes has its empty groups deleted, and re-created by the next join, among everything else."""
    offsets = (
        OffsetsConfig()
        if retention_check_ms is None
        else OffsetsConfig(offsets_retention_check_interval_ms=retention_check_ms)
    )
    return SimShardHandlers(
        offsets_config=offsets,
        classic_config=classic_config or ClassicGroupConfig(initial_rebalance_delay_ms=0),
        consumer_config=consumer_config,
        metadata=metadata,
    )


def consumer_heartbeat(h: GroupCoordinatorShard, request: ConsumerGroupHeartbeatRequest) -> Op:
    return lambda state, now: h.consumer_group_heartbeat(state, request, now, CONTEXT)


def commit_offsets(h: GroupCoordinatorShard, request: OffsetCommitRequest) -> Op:
    """As the edge does: each topic named by name gets its id from the metadata of the moment."""

    def op(state: GroupCoordinatorState, now: int) -> Result[Any]:
        image = h.metadata()
        topics = [replace(t, topic_id=wire_id(image.topic_id(t.name))) for t in request.topics]
        return h.commit_offsets(state, replace(request, topics=topics), now, COMMIT_CONTEXT)

    return op


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


def join_group(
    h: GroupCoordinatorShard, request: JoinGroupRequest, token: Hashable, api_version: int, client_id: str
) -> Op:
    context = RequestContext(api_version, client_id)
    return lambda state, now: h.join_group(state, request, token, now, context)


# The classic clients of the simulations speak the latest versions of the other classic APIs.
SYNC_CONTEXT, HEARTBEAT_CONTEXT, LEAVE_CONTEXT = RequestContext(5), RequestContext(4), RequestContext(5)


def sync_group(h: GroupCoordinatorShard, request: SyncGroupRequest, token: Hashable) -> Op:
    return lambda state, now: h.sync_group(state, request, token, now, SYNC_CONTEXT)


def heartbeat(h: GroupCoordinatorShard, request: HeartbeatRequest) -> Op:
    return lambda state, now: h.heartbeat(state, request, now, HEARTBEAT_CONTEXT)


def leave_group(h: GroupCoordinatorShard, request: LeaveGroupRequest) -> Op:
    return lambda state, now: h.leave_group(state, request, now, LEAVE_CONTEXT)


def consumer_heartbeat_as(
    h: GroupCoordinatorShard, request: ConsumerGroupHeartbeatRequest, client_id: str, host: str
) -> Op:
    context = RequestContext(1, client_id, host)
    return lambda state, now: h.consumer_group_heartbeat(state, request, now, context)


# The answers a client gets when its request never reached the group logic (shard not available).
ERROR_RESPONSES: dict[str, Callable[[ErrorCode], Any]] = {
    "join": lambda code: join_error("", code),
    "sync": lambda code: SyncGroupResponse(error_code=code),
    "hb": lambda code: HeartbeatResponse(error_code=code),
    "heartbeat": lambda code: HeartbeatResponse(error_code=code),
    "leave": lambda code: LeaveGroupResponse(error_code=code),
    "cghb": heartbeat_error_response,
}
