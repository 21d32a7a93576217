"""What makes a big group's heartbeats cheap must not change what they decide: a heartbeat that
changes nothing keeps its member object as it is (no copy), and a join or leave adjusts the
group's subscription counts instead of walking every member."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import ConsumerGroupsState, heartbeat, log_records
from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.groups.consumer.subscriptions import group_topic_names, regexes_in_use, subscribed_names_of
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.schema import topic_id_string, topic_id_uuid
from groupcoord.records import CoordinatorRecord, decode, encode
from tests.groups.harness import Coordinator, image, topic
from tests.messages import tid

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


def test_members_awaiting_their_first_assignment_come_back_spread_over_most_of_the_interval() -> None:
    # A mass join's members come back for their first assignment (each a write) over four
    # fifths of the interval rather than one; once at the group's epoch, the narrow spread again.
    c = Coordinator(image(topic("t", 400)), ConsumerGroupConfig(assignment_interval_ms=60_000), now=100_000)
    joined = [c.join(f"m{i}", ["t"]) for i in range(heartbeat.SPREAD_HEARTBEATS_FROM + 100)]
    told = [a.heartbeat_interval_ms for a in joined[heartbeat.SPREAD_HEARTBEATS_FROM :]]
    assert all(1000 <= i <= 5000 for i in told)
    assert min(told) < 2500 and max(told) > 4500
    assert joined[-1].member_epoch < c.epochs()[0]  # behind: the target lags the joins
    c.now += 60_000  # the next target assignment is due: it runs on the next heartbeat
    member = f"m{heartbeat.SPREAD_HEARTBEATS_FROM + 10}"
    answer = c.beat(member, joined[heartbeat.SPREAD_HEARTBEATS_FROM + 10].member_epoch, [])
    assert answer.member_epoch == c.epochs()[0]
    assert answer.heartbeat_interval_ms == heartbeat.member_heartbeat_interval(member, 5000) >= 4000


def test_an_epoch_move_keeps_the_members_assignment_maps_and_the_groups_indexes() -> None:
    # Every member moves epochs after each target assignment: its replay keeps the equal maps
    # it had (so the group's indexes are left as they are), and the state stays what a replay
    # of the same records into a fresh state gives.
    member = ConsumerGroupMember(
        "m", subscribed_topic_names=("t",), member_epoch=1, assigned={"T": {0: 1, 1: 1}}, has_metadata=True
    )
    records = [log_records.member_metadata_record("g", member), log_records.current_assignment_record("g", member)]
    state = ConsumerGroupsState()
    replay(state, records)
    before = state.groups["g"].members["m"]
    moved = log_records.current_assignment_record("g", member.with_epoch(2))
    replay(state, [moved])
    after = state.groups["g"].members["m"]
    assert after.member_epoch == 2 and after.assigned is before.assigned
    assert state.groups["g"].partition_owner == {("T", 0): "m", ("T", 1): "m"}
    fresh = ConsumerGroupsState()
    replay(fresh, [*records, moved])
    assert state.snapshot() == fresh.snapshot()


def replay(state: ConsumerGroupsState, records: list[CoordinatorRecord]) -> None:
    for record in records:
        state.replay(decode(*encode(record)))  # as the log holds it


def test_answers_share_one_uuid_per_topic_id() -> None:
    # An answer names the same topic ids again and again: one UUID object each, not one per answer.
    value = tid("t")
    assert topic_id_uuid(value) is topic_id_uuid(value)
    assert topic_id_string(topic_id_uuid(value)) == value
