"""What offsets and admin code read from classic groups: commit/fetch validation, describe,
list, deletion checks and subscribed topics for retention."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    ClassicGroupState,
    Subscription,
    TopicPartitions,
    describe_groups,
    encode_subscription,
    list_groups,
)
from groupcoord.coordinator.messages.join_group import JoinGroupRequestProtocol
from tests.groups_classic.harness import GROUP, Coordinator, settle
from tests.messages import join_protocol

S = ClassicGroupState


def consumer_protocols(*topics: str) -> tuple[JoinGroupRequestProtocol, ...]:
    return (join_protocol("range", encode_subscription(Subscription(tuple(topics)), version=1)),)


def two_members(c: Coordinator) -> tuple[str, str]:
    _, m1 = c.join_new(client_id="a", protocols_=consumer_protocols("orders", "payments"))
    _, m2 = c.join_new(client_id="b", protocols_=consumer_protocols("orders", "audit"))
    c.advance(6000)
    return m1, m2


def test_offset_commit_validation_follows_the_group_state() -> None:
    c = Coordinator()
    v = c.state.validate_offset_commit
    assert v("nope", "m", None, 1) is None  # not a classic group: the caller decides
    m1, m2 = two_members(c)
    # CompletingRebalance: the member has the generation but not yet its assignment.
    assert v(GROUP, m1, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert v(GROUP, m1, None, 1, is_transactional=True) == ErrorCode.NONE
    settle(c, m1, m2)
    assert v(GROUP, m1, None, 1) == ErrorCode.NONE
    assert v(GROUP, m1, None, 0) == ErrorCode.ILLEGAL_GENERATION
    assert v(GROUP, "ghost", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert v(GROUP, m1, "inst", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert v(GROUP, "", None, -1) == ErrorCode.UNKNOWN_MEMBER_ID  # v0-style commit to a live group
    c.join(m1)  # PreparingRebalance: the current generation may still commit
    assert c.group().state is S.PREPARING_REBALANCE
    assert v(GROUP, m1, None, 1) == ErrorCode.NONE
    c.advance(40000)
    assert c.group().state is S.EMPTY
    assert v(GROUP, "", None, -1) == ErrorCode.NONE  # admin commit to an empty group
    assert v(GROUP, m1, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_fetch_delete_and_group_deletion_checks() -> None:
    c = Coordinator()
    assert c.state.validate_offset_fetch("nope") is None
    assert c.state.validate_delete_group("nope") == ErrorCode.GROUP_ID_NOT_FOUND
    m1, m2 = two_members(c)
    settle(c, m1, m2)
    assert c.state.validate_offset_fetch(GROUP) == ErrorCode.NONE
    assert c.state.validate_delete_group(GROUP) == ErrorCode.NON_EMPTY_GROUP
    assert c.state.validate_offset_delete(GROUP) == ErrorCode.NONE  # consumer protocol: allowed
    assert not c.state.is_empty(GROUP)
    assert c.state.group_state_name(GROUP) == "Stable" and c.state.protocol_type(GROUP) == "consumer"


def test_subscribed_topics_and_offset_expiration() -> None:
    c = Coordinator()
    m1, m2 = two_members(c)
    assert c.state.subscribed_topics(GROUP) == frozenset({"orders", "payments", "audit"})
    assert c.state.is_subscribed_to_topic(GROUP, "audit") and not c.state.is_subscribed_to_topic(GROUP, "x")
    # Completing: offsets are not expired while the group is rebalancing.
    assert c.state.offset_expiration_base_ms(GROUP, 5) is None
    settle(c, m1, m2)
    assert c.state.offset_expiration_base_ms(GROUP, 5) == 5
    c.advance(40000)
    group = c.group()
    assert group.state is S.EMPTY and c.state.subscribed_topics(GROUP) == frozenset()
    assert c.state.offset_expiration_base_ms(GROUP, 5) == group.current_state_timestamp
    assert c.state.offset_expiration_base_ms("simple", 5) == 5
    # Survives a reload (recomputed from the recorded subscriptions).
    c2 = Coordinator()
    m1, m2 = two_members(c2)
    settle(c2, m1, m2)
    c2.reload()
    assert c2.state.subscribed_topics(GROUP) == frozenset({"orders", "payments", "audit"})


def test_unparseable_subscription_means_unknown_topics() -> None:
    c = Coordinator()
    _, m = c.join_new(protocols_=(join_protocol("range", b"\x00"),))
    c.advance(3000)
    assert c.state.subscribed_topics(GROUP) is None
    assert c.state.is_subscribed_to_topic(GROUP, "anything")  # consumer protocol: keep offsets


def test_describe_groups() -> None:
    c = Coordinator()
    m1, m2 = two_members(c)
    (described,) = describe_groups(c.state, [GROUP])
    assert described.group_state == "CompletingRebalance" and described.protocol_data == ""
    assert [m.member_metadata for m in described.members] == [b"", b""]
    settle(c, m1, m2)
    (described, missing) = describe_groups(c.state, [GROUP, "nope"])
    assert described.group_state == "Stable" and described.protocol_type == "consumer"
    assert described.protocol_data == "range"
    assert [(m.member_id, m.client_id, m.member_assignment) for m in described.members] == [
        (m1, "a", f"a-{m1}".encode()),
        (m2, "b", f"a-{m2}".encode()),
    ]
    assert described.members[0].member_metadata == consumer_protocols("orders", "payments")[0].metadata
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND and missing.group_state == "Dead"
    (old,) = describe_groups(c.state, ["nope"], api_version=5)
    assert old.error_code == ErrorCode.NONE and old.group_state == "Dead"


def test_list_groups_with_filters() -> None:
    c = Coordinator()
    c.join(group_id="g1")
    m1, m2 = two_members(c)
    listed = list_groups(c.state)
    assert [(g.group_id, g.group_state, g.protocol_type, g.group_type) for g in listed] == [
        ("g1", "Empty", "", "classic"),
        (GROUP, "CompletingRebalance", "consumer", "classic"),
    ]
    assert [g.group_id for g in list_groups(c.state, states_filter=["empty"])] == ["g1"]
    assert [g.group_id for g in list_groups(c.state, states_filter=["COMPLETINGREBALANCE"])] == [GROUP]
    assert list_groups(c.state, types_filter=["consumer"]) == []
    assert len(list_groups(c.state, types_filter=["Classic"])) == 2


def test_owned_partitions_ride_in_the_subscription_untouched() -> None:
    c = Coordinator()
    metadata = encode_subscription(
        Subscription(("t",), owned_partitions=(TopicPartitions("t", (0, 1)),), generation_id=3)
    )
    t, m = c.join_new(protocols_=(join_protocol("cooperative-sticky", metadata),))
    c.advance(3000)
    assert c.answer(t).members[0].metadata == metadata
