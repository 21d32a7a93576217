"""Share groups beside consumer and classic groups: one namespace of group ids, refused across
types as Kafka refuses them; ListGroups, DescribeGroups, ShareGroupDescribe, DeleteGroups; the
group's state rebuilt from its records alone."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState, describe_classic_groups, group_listing
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitResponse
from groupcoord.coordinator.messages.schema import topic_id_uuid
from tests.groups_share.harness import CONTEXT, GROUP, Coordinator, image, topic
from tests.messages import cg_request, commit_partition, commit_request, commit_topic, join_protocol, join_request, tid


def list_groups(state: GroupCoordinatorState, states: list[str], types: list[str]) -> list[GroupSummary]:
    """The groups listed (``group_listing`` gives a None for each group its filters leave out)."""
    return [g for g in group_listing(state, states, types) if g is not None]


def _shared() -> Coordinator:
    c = Coordinator(image(topic("t", 2)))
    c.join("m-a", ["t"])
    return c


def test_consumer_and_classic_requests_for_a_share_group_are_refused_and_write_nothing() -> None:
    c = _shared()
    before = len(c.log)
    cg = c.apply(
        c.shard.consumer_group_heartbeat(
            c.state,
            cg_request(GROUP, "m-x", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"], topic_partitions=[]),
            c.now,
            CONTEXT,
        )
    )
    assert isinstance(cg, ConsumerGroupHeartbeatResponse)
    assert (cg.error_code, cg.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a consumer group.",
    )
    join = c.apply(
        c.shard.join_group(
            c.state,
            join_request(GROUP, 10000, protocol_type="consumer", protocols=[join_protocol("range")]),
            "tok",
            c.now,
            CONTEXT,
        )
    )
    assert isinstance(join, JoinGroupResponse)
    assert (join.error_code, join.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    commit = c.apply(
        c.shard.commit_offsets(
            c.state,
            commit_request(GROUP, [commit_topic("t", [commit_partition(0, 5)], tid("t"))]),
            c.now,
            RequestContext(api_version=9),
        )
    )
    assert isinstance(commit, OffsetCommitResponse)
    assert {p.error_code for t in commit.topics for p in t.partitions} == {ErrorCode.GROUP_ID_NOT_FOUND}
    assert len(c.log) == before
    assert c.state.consumer.group(GROUP) is None and c.state.classic.group(GROUP) is None
    assert not c.state.offsets.has_group(GROUP)


def test_a_share_heartbeat_for_a_group_of_another_type_is_group_id_not_found() -> None:
    c = Coordinator(image(topic("t", 2)))
    c.apply(
        c.shard.consumer_group_heartbeat(
            c.state,
            cg_request("cg", "m-1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"], topic_partitions=[]),
            c.now,
            CONTEXT,
        )
    )
    c.apply(
        c.shard.commit_offsets(
            c.state,
            commit_request("simple", [commit_topic("t", [commit_partition(0, 1)], tid("t"))]),
            c.now,
            RequestContext(api_version=9),
        )
    )
    before = len(c.log)
    for gid in ("cg", "simple"):
        r = c.join("m-a", ["t"], group=gid)
        assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
        assert c.describe(gid).error_message == f"Group {gid} is not a share group."
    assert len(c.log) == before


def test_list_groups_by_type_and_state() -> None:
    c = _shared()
    c.join("m-a", ["t"], group="idle")
    c.beat("m-a", -1, group="idle")
    c.apply(
        c.shard.consumer_group_heartbeat(
            c.state,
            cg_request("cg", "m-1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"], topic_partitions=[]),
            c.now,
            CONTEXT,
        )
    )
    rows = {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in list_groups(c.state, [], ["share"])}
    assert rows == {(GROUP, "share", "Stable", "share"), ("idle", "share", "Empty", "share")}
    assert {g.group_id for g in list_groups(c.state, ["empty"], ["SHARE"])} == {"idle"}
    assert {g.group_id for g in list_groups(c.state, [], [])} == {GROUP, "idle", "cg"}
    assert {g.group_id for g in list_groups(c.state, [], ["consumer"])} == {"cg"}


def test_describe_groups_and_share_group_describe() -> None:
    c = _shared()
    c.join("m-b", ["t"], rack_id="r1")
    (classic,) = describe_classic_groups(c.state, [GROUP], 6)
    assert (classic.error_code, classic.group_state) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")
    d = c.describe()
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        0,
        "Stable",
        2,
        2,
        "simple",
    )
    assert [(m.member_id, m.member_epoch, m.rack_id, m.client_id, m.subscribed_topic_names) for m in d.members] == [
        ("m-a", 1, None, "client", ["t"]),
        ("m-b", 2, "r1", "client", ["t"]),
    ]
    (tp,) = d.members[1].assignment.topic_partitions
    assert (tp.topic_id, tp.topic_name, tp.partitions) == (topic_id_uuid(tid("t")), "t", [1])
    assert (c.describe("nope").error_code, c.describe("nope").error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    assert c.describe("").error_code == ErrorCode.INVALID_GROUP_ID


def test_delete_groups_only_empty_share_groups_and_the_delete_replays() -> None:
    c = _shared()
    assert c.apply(c.shard.delete_groups(c.state, [GROUP], c.now)) == [(GROUP, ErrorCode.NON_EMPTY_GROUP)]
    c.beat("m-a", -1)
    assert c.apply(c.shard.delete_groups(c.state, [GROUP], c.now)) == [(GROUP, ErrorCode.NONE)]
    assert c.state.share.group(GROUP) is None
    assert c.replayed().share.snapshot() == {}
    # The id is free again, for any type.
    assert c.join("m-a", ["t"]).member_epoch == 1


def test_replaying_the_log_rebuilds_the_same_state_and_the_load_rearms_session_timers() -> None:
    c = Coordinator(image(topic("t", 3), topic("u", 2)))
    c.join("m-a", ["t"])
    c.join("m-b", ["t", "u"], rack_id="r")
    c.beat("m-a", 1)
    c.join("m-c", ["u"])
    c.beat("m-b", 2, subscribed_topic_names=["u"])
    c.beat("m-c", -1)
    c.join("m-d", ["t"])
    c.fire("share-session\x00sg\x00m-a")
    replayed = c.replayed()
    assert replayed.snapshot() == c.state.snapshot()
    assert replayed.share.snapshot()[GROUP]["members"].keys() == {"m-b", "m-d"}
    loaded = c.shard.on_loaded(replayed, 5000)
    sessions = sorted(op.key for op in loaded.timers if op.key.startswith("share-session"))
    assert sessions == ["share-session\x00sg\x00m-b", "share-session\x00sg\x00m-d"]


def test_other_classic_requests_and_offset_fetch_for_a_share_group() -> None:
    from groupcoord.coordinator.group_shard import offset_fetch_error
    from tests.messages import fetch_group, heartbeat_request, leave_request, sync_request

    c = _shared()
    before = len(c.log)
    sync = c.apply(c.shard.sync_group(c.state, sync_request(GROUP, 1, "m-a"), "tok", c.now, CONTEXT))
    beat = c.apply(c.shard.heartbeat(c.state, heartbeat_request(GROUP, 1, "m-a"), c.now, CONTEXT))
    leave = c.apply(c.shard.leave_group(c.state, leave_request(GROUP, "m-a"), c.now, CONTEXT))
    assert {sync.error_code, beat.error_code, leave.error_code} == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert offset_fetch_error(c.state, fetch_group(GROUP, None)) == ErrorCode.GROUP_ID_NOT_FOUND
    assert len(c.log) == before and set(c.group().members) == {"m-a"}
