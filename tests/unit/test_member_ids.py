"""Member ids the coordinator hands out cannot be guessed: they come from random bytes the service
draws per request (RequestContext.nonce); without them (simulations) they depend on the inputs only."""

from __future__ import annotations

import re
import uuid

from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from tests.messages import cg_request, join_protocol, join_request, tid

SHARD = GroupCoordinatorShard(metadata=lambda: TopicsImage.of([TopicImage("t", tid("t"), 1)], 1))


def _classic_member_id(nonce: bytes) -> str:
    request = join_request("g", 10_000, protocol_type="consumer", protocols=(join_protocol("range", b""),))
    context = RequestContext(api_version=9, client_id="app", nonce=nonce)
    response = SHARD.join_group(GroupCoordinatorState(), request, "token", 1_000, context).response
    assert isinstance(response, JoinGroupResponse)
    assert response.error_code == 79  # MEMBER_ID_REQUIRED hands the id out
    return response.member_id


def _consumer_member_id(nonce: bytes) -> str:
    request = cg_request("g", "", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["t"], topic_partitions=[])
    context = RequestContext(0, "app", "/10.0.0.1", nonce)
    response = SHARD.consumer_group_heartbeat(GroupCoordinatorState(), request, 1_000, context).response
    assert isinstance(response, ConsumerGroupHeartbeatResponse) and response.member_id
    return response.member_id


def test_classic_member_ids_are_kafkas_client_id_and_a_random_uuid() -> None:
    nonce = bytes(range(16))
    assert _classic_member_id(nonce) == f"app-{uuid.UUID(bytes=nonce)}"
    assert _classic_member_id(b"\x01" * 16) != _classic_member_id(b"\x02" * 16)


def test_classic_member_ids_without_randomness_depend_on_the_inputs_only() -> None:
    assert re.fullmatch(r"app-1000-\d+", _classic_member_id(b""))


def test_consumer_member_ids_change_with_the_random_bytes() -> None:
    first, second = _consumer_member_id(b"\x01" * 16), _consumer_member_id(b"\x02" * 16)
    assert first != second and len(first) == len(second) == 22
    assert _consumer_member_id(b"\x01" * 16) == first  # the same inputs give the same id (replays agree)


def _classic_member_id_in_consumer_group(nonce: bytes) -> str:
    """A classic member joining a non-empty consumer group (online migration) gets its id there."""
    state = GroupCoordinatorState()
    join = cg_request("g", "", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["t"], topic_partitions=[])
    result = SHARD.consumer_group_heartbeat(state, join, 1_000, RequestContext(0, "app", "/10.0.0.1", b"\x09" * 16))
    for record in result.records:
        state.replay(record)
    request = join_request(
        "g",
        10_000,
        protocol_type="consumer",
        protocols=(join_protocol("range", b"\x00\x03\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"),),
    )
    context = RequestContext(api_version=9, client_id="app", nonce=nonce)
    response = SHARD.join_group(state, request, "token", 2_000, context).response
    assert isinstance(response, JoinGroupResponse)
    assert response.error_code == 79
    return response.member_id


def test_classic_member_ids_in_consumer_groups_change_with_the_random_bytes() -> None:
    assert _classic_member_id_in_consumer_group(b"\x01" * 16) != _classic_member_id_in_consumer_group(b"\x02" * 16)
