"""Protocol routing (groupcoord/coordinator/groups/routing.py), each test named after Kafka's rule."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from tests.messages import cg_request, client, join_protocol, join_request
from tests.unit.test_group_shard import HANDLERS, apply, join_consumer

CONTEXT = RequestContext(api_version=1)


def beat(state: GroupCoordinatorState, request: ConsumerGroupHeartbeatRequest) -> tuple[int, str | None, int]:
    result = HANDLERS.consumer_group_heartbeat(state, request, 0, CONTEXT)
    response = result.response
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    return response.error_code, response.error_message, len(result.records)


def test_consumer_group_heartbeat_to_an_unknown_group_is_group_id_not_found_unless_epoch_0() -> None:
    state = GroupCoordinatorState()
    message = "Consumer group nog not found."
    assert beat(state, cg_request("nog", "m1", 5, topic_partitions=[])) == (69, message, 0)
    assert beat(state, cg_request("nog", "m1", -1)) == (69, message, 0)
    assert beat(state, cg_request("nog", "m1", -2, instance_id="i")) == (69, message, 0)
    # Request validation comes first (Kafka validates before the shard).
    assert beat(state, cg_request("nog", "", 5))[0] == ErrorCode.INVALID_REQUEST


def _empty_classic_group(state: GroupCoordinatorState, group_id: str) -> None:
    join = join_request(group_id, 10000, protocol_type="consumer", protocols=(join_protocol("range", b""),))
    response = apply(state, HANDLERS.join_group(state, join, "tok", 0, client(9)))
    assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    group = state.classic.group(group_id)
    assert group is not None and group.is_empty()


def test_a_failed_consumer_group_heartbeat_writes_nothing() -> None:
    """The tombstones of an empty classic group are only written with a successful answer."""
    state = GroupCoordinatorState()
    _empty_classic_group(state, "g")
    full: dict[str, Any] = {"rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "topic_partitions": []}
    not_consumer = "Group g is not a consumer group."
    assert beat(state, cg_request("g", "m1", 5, topic_partitions=[])) == (69, not_consumer, 0)
    assert beat(state, cg_request("g", "m1", -1)) == (69, not_consumer, 0)
    no_timeout = cg_request("g", "m1", 0, subscribed_topic_names=["t"], topic_partitions=[])
    assert beat(state, no_timeout)[::2] == (ErrorCode.INVALID_REQUEST, 0)
    bad_assignor = cg_request("g", "m1", 0, server_assignor="nope", **full)
    assert beat(state, bad_assignor)[::2] == (ErrorCode.UNSUPPORTED_ASSIGNOR, 0)
    assert state.group_type("g") == "classic"
    # A successful join replaces the empty classic group in the same batch.
    ok = HANDLERS.consumer_group_heartbeat(state, cg_request("g", "m1", 0, **full), 0, CONTEXT)
    assert ok.records[0].value is None and ok.records[0].key.group == "g"
    apply(state, ok)
    assert state.group_type("g") == "consumer"


def test_a_failed_join_group_writes_nothing() -> None:
    """Mirror case: an invalid JoinGroup leaves an empty consumer group intact."""
    state = GroupCoordinatorState()
    join_consumer(state, "g")
    apply(state, HANDLERS.consumer_group_heartbeat(state, cg_request("g", "m1", -1), 0, CONTEXT))
    assert state.group_type("g") == "consumer"
    join = join_request("g", 1, protocol_type="consumer", protocols=(join_protocol("range", b""),))
    refused = HANDLERS.join_group(state, join, "tok", 0, client(9))
    assert isinstance(refused.response, JoinGroupResponse)
    assert refused.response.error_code == ErrorCode.INVALID_SESSION_TIMEOUT and refused.records == []
    apply(state, refused)
    assert state.group_type("g") == "consumer"
