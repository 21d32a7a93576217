"""The Group face (Kafka's Group.java): both protocols answer the shard's questions the same way."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.classic.group import ClassicGroup
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup
from groupcoord.coordinator.groups.group import CLASSIC, CONSUMER, Group, GroupSummary
from groupcoord.records import RecordType
from tests.messages import client, join_protocol, join_request
from tests.unit.test_group_shard import HANDLERS, apply, join_consumer


def faces(c: ClassicGroup, g: ConsumerGroup) -> list[Group]:
    return [c, g]  # mypy proves both implement the protocol


def test_both_group_types_implement_the_group_face() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "cg")
    apply(
        state,
        HANDLERS.join_group(
            state,
            join_request("kg", 30000, "", "consumer", (join_protocol("range", b""),)),
            "token",
            0,
            client(3),
        ),
    )
    consumer, klassic = state.group("cg"), state.group("kg")
    assert isinstance(consumer, ConsumerGroup) and isinstance(klassic, ClassicGroup)
    assert state.group("nope") is None
    for group in faces(klassic, consumer):
        assert group.validate_offset_delete() == ErrorCode.NONE
    assert (consumer.type, klassic.type) == (CONSUMER, CLASSIC)
    assert not consumer.is_empty() and consumer.is_subscribed_to_topic("t") and not consumer.is_subscribed_to_topic("u")
    assert consumer.validate_delete() == ErrorCode.NON_EMPTY_GROUP
    assert consumer.validate_offset_fetch("m1", 1) == ErrorCode.NONE
    assert consumer.validate_offset_fetch("m1", 7) == ErrorCode.STALE_MEMBER_EPOCH
    assert consumer.listed() == GroupSummary("cg", "consumer", "Stable", "consumer")
    assert consumer.tombstones()[-1].type == RecordType.CONSUMER_GROUP_METADATA
    # The classic group holds the joining member in its first rebalance.
    assert klassic.listed() == GroupSummary("kg", "consumer", "PreparingRebalance", "classic")
    assert klassic.validate_delete() == ErrorCode.NON_EMPTY_GROUP
    assert [r.type for r in klassic.tombstones()] == [RecordType.GROUP_METADATA]
