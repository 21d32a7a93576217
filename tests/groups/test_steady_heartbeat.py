"""What makes a big group's heartbeats cheap must not change what they decide: a heartbeat that
changes nothing keeps its member object as it is (no copy), and a join or leave adjusts the
group's subscription counts instead of walking every member."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.coordinator.groups.consumer import heartbeat
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.groups.consumer.subscriptions import group_topic_names, regexes_in_use, subscribed_names_of
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

_names = st.sampled_from(["a", "b"])
_members = st.builds(
    ConsumerGroupMember,
    member_id=st.just("m"),
    instance_id=st.none() | _names,
    rack_id=st.none() | _names,
    client_id=_names,
    client_host=_names,
    rebalance_timeout_ms=st.sampled_from([-1, 100, 200]),
    subscribed_topic_names=st.sampled_from([(), ("a",), ("a", "b")]),
    subscribed_topic_regex=st.none() | st.just("a.*"),
    server_assignor=st.none() | st.just("uniform"),
    has_metadata=st.booleans(),
)
_requests = st.builds(
    ConsumerGroupHeartbeatRequest,
    group_id=st.just("g"),
    member_id=st.just("m"),
    member_epoch=st.just(3),
    instance_id=st.none() | _names,
    rack_id=st.none() | _names,
    rebalance_timeout_ms=st.sampled_from([-1, 100, 200]),
    subscribed_topic_names=st.none() | st.sampled_from([[], ["a"], ["b", "a", "a"]]),
    subscribed_topic_regex=st.none() | st.sampled_from(["", "a.*"]),
    server_assignor=st.none() | st.just("uniform"),
)
_contexts = st.builds(RequestContext, client_id=_names, client_host=_names)


@given(_members, _requests, _contexts)
def test_member_from_heartbeat_is_the_same_with_or_without_the_steady_shortcut(
    member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest, context: RequestContext
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(heartbeat, "_changes_nothing", lambda *_: False)
        built = heartbeat.member_from_heartbeat(member, request, context)
    assert heartbeat.member_from_heartbeat(member, request, context) == built


def test_a_steady_heartbeat_keeps_the_member_object() -> None:
    member = ConsumerGroupMember("m", client_id="c", client_host="h", subscribed_topic_names=("t",), has_metadata=True)
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    assert heartbeat.member_from_heartbeat(member, request, RequestContext(client_id="c", client_host="h")) is member


_subscribers = st.builds(
    ConsumerGroupMember,
    member_id=st.sampled_from(["m1", "m2", "m3", "m4"]),
    subscribed_topic_names=st.sampled_from([(), ("a",), ("a", "b"), ("c",)]),
    subscribed_topic_regex=st.none() | st.sampled_from(["x.*", "y.*"]),
)


@given(
    st.lists(_subscribers, max_size=6), st.lists(st.sampled_from(["m1", "m2", "m3", "m5"]), max_size=3), _subscribers
)
def test_subscription_counts_of_a_change_are_those_of_the_group_walked_anew(
    members: list[ConsumerGroupMember], leaving: list[str], joining: ConsumerGroupMember
) -> None:
    # A join or a leave adjusts the group's counts for the members it changes instead of walking
    # every member: the names subscribed must be what a walk over the members after it gives.
    group = ConsumerGroup("g")
    for m in members:
        group.put_member(m)
    regexes = {"x.*": ResolvedRegularExpression(frozenset({"x1"}), 1, 0)}
    gone = [group.members.get(mid) for mid in dict.fromkeys(leaving) if mid != joining.member_id]
    names, regex_counts = group.subscription_counts_with([*gone, group.members.get(joining.member_id)], joining)
    after = {mid: m for mid, m in group.members.items() if mid not in leaving}
    after[joining.member_id] = joining
    assert subscribed_names_of(names, regex_counts, regexes) == group_topic_names(after.values(), regexes)
    assert set(regex_counts) == regexes_in_use(after.values())


def test_members_are_told_intervals_spread_below_the_configured_one() -> None:
    # Members that joined together must not heartbeat together for ever: each gets a period of
    # its own, never longer than configured, the same for the same member every time.
    intervals = [heartbeat.member_heartbeat_interval(f"member-{i}", 5000) for i in range(1000)]
    assert all(4000 <= i <= 5000 for i in intervals)
    assert len(set(intervals)) > 500 and max(intervals) - min(intervals) > 900
    assert heartbeat.member_heartbeat_interval("member-7", 5000) == intervals[7]
    assert heartbeat.member_heartbeat_interval("m", 4) == 4


@given(_members, st.sampled_from([0, 3, 7]), st.sampled_from([{}, {"t": {0: 3}}]))
def test_evolve_is_dataclasses_replace(member: ConsumerGroupMember, epoch: int, assigned: dict) -> None:  # type: ignore[type-arg]
    # ConsumerGroupMember.evolve stands in for dataclasses.replace on the join's hot path.
    changes = {"member_epoch": epoch, "assigned": assigned, "client_id": "z"}
    assert member.evolve(**changes) == dataclasses.replace(member, **changes)  # type: ignore[arg-type]
    assert member.with_epoch(epoch, state=MemberState.UNREVOKED_PARTITIONS) == dataclasses.replace(
        member, previous_member_epoch=member.member_epoch, member_epoch=epoch, state=MemberState.UNREVOKED_PARTITIONS
    )
    assert member.evolve() == member
    with pytest.raises(TypeError):
        member.evolve(no_such_field=1)
