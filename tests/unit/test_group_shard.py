"""The composed shard: which protocol owns a group id, commit validation, admin, retention."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import (
    GroupCoordinatorShard,
    GroupCoordinatorState,
    RetentionSweep,
    describe_classic_groups,
    describe_consumer_groups,
    group_listing,
)
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.groups.classic.consumer_protocol import Subscription, encode_subscription
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    log_records,
)
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.runtime.api import Park, Result, ScheduleTimer
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from groupcoord.records.definitions import ClassicMemberInConsumerGroup, ClassicProtocol
from tests.groups_migration.harness import FOO, GROUP, Shard, assignment, classic_group_record
from tests.groups_share.harness import Coordinator
from tests.groups_share.harness import image as share_image
from tests.groups_share.harness import topic as share_topic
from tests.messages import (
    by_topic_id,
    cg_request,
    client,
    commit_partition,
    commit_request,
    commit_topic,
    delete_request,
    delete_topic,
    join_protocol,
    join_request,
    tid,
)

TID, UID = tid("t"), tid("u")
IMAGE = TopicsImage.of([TopicImage("t", TID, 2), TopicImage("u", UID, 1)], 1)
HANDLERS = GroupCoordinatorShard(
    offsets_config=OffsetsConfig(offsets_retention_minutes=1),
    consumer_config=ConsumerGroupConfig(assignment_interval_ms=0),
    metadata=lambda: IMAGE,
)
MINUTE = 60_000


def apply(state: GroupCoordinatorState, result: Result[Any]) -> Any:
    for record in result.records:
        state.replay(decode(*encode(record)))
    return result.response


def commit(
    group: str, offsets: dict[int, int], epoch: int = -1, member: str = "", topic: str = "t", version: int = 9
) -> tuple[OffsetCommitRequest, RequestContext]:
    """A commit as the edge hands it on: each topic with its name and its id resolved."""
    request = commit_request(
        group,
        [commit_topic(topic, [commit_partition(p, o) for p, o in offsets.items()], IMAGE.topic_id(topic))],
        generation_id_or_member_epoch=epoch,
        member_id=member,
    )
    return request, RequestContext(api_version=version)


def commit_at(
    state: GroupCoordinatorState, commit: tuple[OffsetCommitRequest, RequestContext], now: int
) -> Result[Any]:
    request, context = commit
    return HANDLERS.commit_offsets(state, request, now, context)


def codes(response: Any) -> list[int]:
    return [p.error_code for t in response.topics for p in t.partitions]


def join_consumer(state: GroupCoordinatorState, group: str, now: int = 0) -> ConsumerGroupHeartbeatResponse:
    request = cg_request(
        group,
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    response = apply(state, HANDLERS.consumer_group_heartbeat(state, request, now, RequestContext(api_version=1)))
    assert response.error_code == 0
    return response


def test_simple_group_commits() -> None:
    state = GroupCoordinatorState()
    assert codes(apply(state, commit_at(state, commit("s", {0: 5}), 0))) == [0]
    assert codes(commit_at(state, commit("nope", {0: 5}, epoch=1), 0).response) == [ErrorCode.GROUP_ID_NOT_FOUND]
    assert codes(commit_at(state, commit("nope", {0: 5}, epoch=1, version=8), 0).response) == [
        ErrorCode.ILLEGAL_GENERATION
    ]
    assert codes(commit_at(state, commit("s", {0: 5}, epoch=1, member="x"), 0).response) == [
        ErrorCode.UNKNOWN_MEMBER_ID
    ]


def test_consumer_group_commit_checks_the_member() -> None:
    state = GroupCoordinatorState()
    response = join_consumer(state, "c")
    assert response.member_epoch == 1 and response.assignment is not None
    owned = by_topic_id(response.assignment.topic_partitions)
    assert owned == {TID: [0, 1]}
    ok = commit_at(state, commit("c", {0: 1, 1: 2}, epoch=1, member="m1"), 0)
    assert codes(apply(state, ok)) == [0, 0] and len(ok.records) == 2
    assert codes(commit_at(state, commit("c", {0: 1}, epoch=1, member="ghost"), 0).response) == [
        ErrorCode.UNKNOWN_MEMBER_ID
    ]


def _set_member(state: GroupCoordinatorState, group: str, **changes: Any) -> None:
    """Put the member m1 in the given shape through the log, as a later heartbeat would have."""
    consumer_group = state.consumer.group(group)
    assert consumer_group is not None
    member = replace(consumer_group.members["m1"], **changes)
    for record in (
        log_records.member_metadata_record(group, member),
        log_records.current_assignment_record(group, member),
    ):
        state.replay(decode(*encode(record)))


def test_kip1251_commit_at_the_current_member_epoch_is_not_checked_per_partition() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "c")  # epoch 1, owns t-0 and t-1, not u-0
    mixed = commit_request(
        "c",
        [
            commit_topic("t", [commit_partition(0, 9)], TID),
            commit_topic("u", [commit_partition(0, 9)], UID),
        ],
        generation_id_or_member_epoch=1,
        member_id="m1",
    )
    result = HANDLERS.commit_offsets(state, mixed, 0, RequestContext(api_version=9))
    assert codes(result.response) == [0, 0]
    assert [(r.key.topic, r.key.partition) for r in result.records] == [("t", 0), ("u", 0)]


def test_kip1251_commit_with_a_newer_member_epoch_is_stale_and_writes_nothing() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "c")
    result = commit_at(state, commit("c", {0: 1, 1: 1}, epoch=2, member="m1"), 0)
    assert codes(result.response) == [ErrorCode.STALE_MEMBER_EPOCH] * 2 and result.records == []


def test_kip1251_commit_with_an_older_epoch_checks_assignment_epochs_and_is_refused_whole() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "c")
    # The member is at epoch 3: t-0 was given to it at epoch 1, t-1 only at epoch 3.
    _set_member(state, "c", member_epoch=3, previous_member_epoch=1, assigned={TID: {0: 1, 1: 3}})
    ok = commit_at(state, commit("c", {0: 5}, epoch=1, member="m1"), 0)
    assert codes(ok.response) == [0] and len(ok.records) == 1
    refused = commit_at(state, commit("c", {0: 5, 1: 5}, epoch=2, member="m1"), 0)
    assert codes(refused.response) == [ErrorCode.STALE_MEMBER_EPOCH] * 2 and refused.records == []
    not_assigned = commit_at(state, commit("c", {0: 5}, epoch=2, member="m1", topic="u"), 0)
    assert codes(not_assigned.response) == [ErrorCode.STALE_MEMBER_EPOCH] and not_assigned.records == []


def test_kip1251_classic_member_of_a_consumer_group_gets_a_generation_check_only() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "c")
    _set_member(
        state, "c", classic_member_metadata=ClassicMemberInConsumerGroup(30_000, [ClassicProtocol("range", b"")])
    )
    # A partition it does not own, at its generation: accepted (never error 113 for a classic client).
    ok = commit_at(state, commit("c", {0: 4}, epoch=1, member="m1", topic="u", version=8), 0)
    assert codes(ok.response) == [0] and len(ok.records) == 1
    wrong = commit_at(state, commit("c", {0: 4}, epoch=0, member="m1", version=8), 0)
    assert codes(wrong.response) == [ErrorCode.ILLEGAL_GENERATION] and wrong.records == []


def test_commit_below_v9_from_a_consumer_protocol_member_is_unsupported_version() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "c")
    result = commit_at(state, commit("c", {0: 1}, epoch=1, member="m1", version=8), 0)
    assert codes(result.response) == [ErrorCode.UNSUPPORTED_VERSION] and result.records == []


# group.consumer.migration.policy=disabled: a non-empty group never changes protocol (the online
# migration under the default policy is tested in tests/groups_migration), but routing ignores it.
NO_MIGRATION = GroupCoordinatorShard(
    offsets_config=OffsetsConfig(offsets_retention_minutes=1),
    consumer_config=ConsumerGroupConfig(assignment_interval_ms=0, migration_policy="disabled"),
    metadata=lambda: IMAGE,
)


def test_protocol_ownership_of_a_group_id() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 5}), 0))
    join_consumer(state, "g")  # a simple group becomes a consumer group; its offsets stay
    assert state.group_type("g") == "consumer" and state.offsets.get("g", "t", 0) is not None
    join = join_request(
        "g",
        10000,
        protocol_type="consumer",
        protocols=(join_protocol("range", b""),),
        rebalance_timeout_ms=10000,
    )
    # The member leaves: the empty consumer group turns classic on the next JoinGroup.
    leave = cg_request("g", member_id="m1", member_epoch=-1)
    apply(state, HANDLERS.consumer_group_heartbeat(state, leave, 0, RequestContext(api_version=1)))
    joined = HANDLERS.join_group(state, join, "tok", 0, client(9))
    apply(state, joined)
    assert state.group_type("g") == "classic" and state.consumer.group("g") is None
    assert isinstance(joined.response, Park) or joined.response.error_code in (0, ErrorCode.MEMBER_ID_REQUIRED)


def test_migration_policy_disabled_governs_conversions_only() -> None:
    """Kafka's classicGroupJoin sends every JoinGroup for a non-empty consumer group to
    classicGroupJoinToConsumerGroup whatever the policy; the policy is read only to convert."""
    state = GroupCoordinatorState()
    join_consumer(state, "g")
    join = join_request(
        "g",
        10000,
        protocol_type="consumer",
        protocols=(join_protocol("range", encode_subscription(Subscription(("t",)))),),
        rebalance_timeout_ms=10000,
    )
    first = NO_MIGRATION.join_group(state, join, "tok", 0, client(9))
    assert isinstance(first.response, JoinGroupResponse)
    assert first.response.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.records == []
    member_id = first.response.member_id
    joined = apply(state, NO_MIGRATION.join_group(state, replace(join, member_id=member_id), "tok", 0, client(9)))
    assert joined.error_code == ErrorCode.NONE and joined.generation_id > 0
    group = state.consumer.group("g")
    assert state.group_type("g") == "consumer" and group is not None and group.members[member_id].uses_classic_protocol
    # A consumer-protocol heartbeat to a non-empty classic group would convert it: refused.
    apply(state, NO_MIGRATION.join_group(state, replace(join, group_id="k", member_id=""), "t2", 0, client(3)))
    assert state.group_type("k") == "classic"
    request = cg_request(
        "k",
        member_id="m9",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    refused = NO_MIGRATION.consumer_group_heartbeat(state, request, 0, RequestContext(api_version=1))
    assert isinstance(refused.response, ConsumerGroupHeartbeatResponse) and refused.records == []
    assert refused.response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert refused.response.error_message == (
        "Cannot upgrade classic group k to consumer group because online upgrade is disabled."
    )


def test_delete_groups_and_offset_delete() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("simple", {0: 1}), 0))
    join_consumer(state, "busy")
    apply(state, commit_at(state, commit("busy", {0: 1}, topic="u", epoch=-1), 0))
    answer = apply(state, HANDLERS.delete_groups(state, ["simple", "busy", "nobody"], 0))
    assert answer == [("simple", 0), ("busy", ErrorCode.NON_EMPTY_GROUP), ("nobody", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert not state.offsets.has_group("simple")
    request = delete_request("busy", [delete_topic("t", [0]), delete_topic("u", [0])])
    response = apply(state, HANDLERS.delete_offsets(state, request, 0))
    assert [[p.error_code for p in t.partitions] for t in response.topics] == [
        [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC],
        [0],
    ]
    assert state.offsets.get("busy", "u", 0) is None


def test_retention_sweep_expires_and_deletes_empty_groups() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("simple", {0: 1}), 0))
    join_consumer(state, "live")
    apply(state, commit_at(state, commit("live", {0: 1}, epoch=1, member="m1"), 0))
    apply(state, commit_at(state, commit("live", {0: 1}, topic="u", epoch=-1), 0))
    early = HANDLERS.on_timer(state, RetentionSweep(), MINUTE - 1)
    assert early.records == []
    assert any(isinstance(t, ScheduleTimer) and t.deadline_ms > MINUTE for t in early.timers)
    apply(state, HANDLERS.on_timer(state, RetentionSweep(), MINUTE))
    assert not state.offsets.has_group("simple")
    # The subscribed topic's offset stays; the unsubscribed one expires; the group stays (it has members).
    assert state.offsets.get("live", "t", 0) is not None and state.offsets.get("live", "u", 0) is None
    assert state.group_type("live") == "consumer"


# --- the sweep deletes empty groups, with or without offsets (Kafka's cleanupGroupMetadata) -------
#
# A consumer that joins and closes (or dies) without committing leaves an empty group with no
# offsets: Kafka deletes it at the next sweep (no offsets count as all expired), so its records
# do not pile up. Each test below has such a group deleted beside the one it keeps.


def sweep(
    state: GroupCoordinatorState, now: int, log: list[CoordinatorRecord] | None = None
) -> list[CoordinatorRecord]:
    """One RetentionSweep at ``now``, its records replayed into ``state`` (and added to ``log``)."""
    result = HANDLERS.on_timer(state, RetentionSweep(), now)
    for record in result.records:
        decoded = decode(*encode(record))
        state.replay(decoded)
        if log is not None:
            log.append(decoded)
    return list(result.records)


def compacted(log: list[CoordinatorRecord]) -> list[CoordinatorRecord]:
    """What compaction leaves of ``log`` in the end: each key's last value, tombstones gone."""
    latest = {encode(r)[0]: r for r in log}
    return [r for r in latest.values() if r.value is not None]


def groups_in(records: list[CoordinatorRecord]) -> set[str]:
    return {r.key.group for r in records}


def empty_consumer_group(s: Shard, group: str, member: str = "gone-m") -> None:
    """A KIP-848 consumer joins ``group`` and leaves it, committing nothing."""
    join = cg_request(group, member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=[FOO], topic_partitions=[])
    assert s.cg_heartbeat(join).error_code == ErrorCode.NONE
    assert s.cg_heartbeat(cg_request(group, member, -1)).error_code == ErrorCode.NONE
    cgroup = s.state.consumer.group(group)
    assert cgroup is not None and not cgroup.members and not s.state.offsets.has_group(group)


def stable_classic_group(s: Shard) -> str:
    """A classic consumer in GROUP, joined and synced (Stable); its member id."""
    member = s.join("").member_id
    token = s.join(member)
    s.advance(0)
    s.sync(member, s.answer(token).generation_id, {member: assignment([0, 1])})
    assert s.classic_group().state is ClassicGroupState.STABLE
    return str(member)


@pytest.mark.parametrize("ending", ["close", "kill"])
def test_the_sweep_deletes_an_empty_classic_group_that_never_committed(ending: str) -> None:
    s = Shard()
    member = stable_classic_group(s)
    if ending == "close":
        s.leave(member)
    else:  # SIGKILLed: no LeaveGroup, the session runs out
        s.advance(30_000)
    assert s.classic_group().state is ClassicGroupState.EMPTY and not s.state.offsets.has_group(GROUP)
    records = sweep(s.state, s.now, s.log)
    assert [(r.type, r.key.group, r.value) for r in records] == [(RecordType.GROUP_METADATA, GROUP, None)]
    assert s.state.group(GROUP) is None
    s.check_replay()
    assert GROUP not in groups_in(compacted(s.log))
    assert sweep(s.state, s.now + 1, s.log) == []  # nothing left to delete


@pytest.mark.parametrize("ending", ["close", "kill"])
def test_the_sweep_deletes_an_empty_consumer_group_that_never_committed(ending: str) -> None:
    s = Shard()
    assert s.cg_join("A").error_code == ErrorCode.NONE
    if ending == "close":
        s.cg_heartbeat(cg_request(GROUP, "A", -1))
    else:  # SIGKILLed: no leave heartbeat, the session runs out
        s.advance(60_000)
    cgroup = s.state.consumer.group(GROUP)
    assert cgroup is not None and not cgroup.members and not s.state.offsets.has_group(GROUP)
    records = sweep(s.state, s.now, s.log)
    assert records and groups_in(records) == {GROUP} and all(r.value is None for r in records)
    assert s.state.group(GROUP) is None
    s.check_replay()
    assert GROUP not in groups_in(compacted(s.log))
    assert sweep(s.state, s.now + 1, s.log) == []


def test_the_sweep_keeps_a_stable_classic_group() -> None:
    s = Shard()
    stable_classic_group(s)
    empty_consumer_group(s, "gone")
    assert groups_in(sweep(s.state, s.now, s.log)) == {"gone"}
    assert s.classic_group().state is ClassicGroupState.STABLE and s.state.group("gone") is None
    s.check_replay()


@pytest.mark.parametrize("member", ["consumer", "static-member-gone-with-minus-2", "classic-member"])
def test_the_sweep_keeps_a_consumer_group_with_a_member(member: str) -> None:
    """Kafka's ConsumerGroup.isEmpty: no members at all. A static member that left with epoch -2
    (it may come back within its session) and a classic member of a consumer group are members."""
    s = Shard(policy="upgrade")  # a consumer group left with classic members only stays one
    if member == "classic-member":
        s.load(classic_group_record(5, {"B": [0, 1, 2]}))
        assert s.cg_join("A").error_code == ErrorCode.NONE and s.kind() == "consumer"
        s.cg_heartbeat(cg_request(GROUP, "A", -1))
        assert list(s.cgroup().members) == ["B"] and s.cgroup().members["B"].uses_classic_protocol
    elif member == "static-member-gone-with-minus-2":
        join = cg_request(
            GROUP,
            "A",
            0,
            instance_id="i-1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=[FOO],
            topic_partitions=[],
        )
        assert s.cg_heartbeat(join).error_code == ErrorCode.NONE
        assert s.cg_heartbeat(cg_request(GROUP, "A", -2, instance_id="i-1")).error_code == ErrorCode.NONE
        assert s.members()["A"][0] == -2
    else:
        assert s.cg_join("A").error_code == ErrorCode.NONE
    empty_consumer_group(s, "gone")
    assert groups_in(sweep(s.state, s.now, s.log)) == {"gone"}
    assert s.kind() == "consumer" and s.cgroup().members and s.state.group("gone") is None
    s.check_replay()


def test_the_sweep_keeps_an_empty_group_until_its_offsets_expire() -> None:
    s = Shard()
    member = stable_classic_group(s)
    assert s.commit(member, s.classic_group().generation_id, {0: 7}) == [ErrorCode.NONE]
    s.leave(member)
    empty_consumer_group(s, "gone")
    # Not yet a retention period (1 minute here) since the group became empty: kept, offset too.
    assert groups_in(sweep(s.state, s.now + MINUTE - 1, s.log)) == {"gone"}
    assert s.classic_group().state is ClassicGroupState.EMPTY and s.state.offsets.get(GROUP, FOO, 0) is not None
    # Then the offset expires, and the group with it.
    records = sweep(s.state, s.now + MINUTE, s.log)
    assert [(r.type, r.key.group) for r in records] == [
        (RecordType.OFFSET_COMMIT, GROUP),
        (RecordType.GROUP_METADATA, GROUP),
    ]
    assert s.state.group(GROUP) is None and not s.state.offsets.has_group(GROUP)
    s.check_replay()
    assert not groups_in(compacted(s.log)) & {GROUP, "gone"}


def test_the_sweep_leaves_empty_share_groups_alone() -> None:
    """Kafka 4.1+'s ShareGroup.shouldExpire is false: the sweep neither expires nor deletes a
    share group (its share-partitions are its progress), empty or not."""
    c = Coordinator(share_image(share_topic(FOO, 2)))
    assert c.join("s1", [FOO], group="sg").member_epoch == 1
    c.beat("s1", -1, group="sg")
    assert c.state.share.group("sg") is not None and not c.group("sg").members
    join = cg_request("gone", "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=[FOO], topic_partitions=[])
    c.apply(HANDLERS.consumer_group_heartbeat(c.state, join, c.now, RequestContext(api_version=1)))
    c.apply(HANDLERS.consumer_group_heartbeat(c.state, cg_request("gone", "m", -1), c.now, RequestContext(1)))
    assert groups_in(sweep(c.state, c.now + MINUTE, c.log)) == {"gone"}
    assert c.state.group_type("sg") == "share"


def list_groups(state: GroupCoordinatorState, states: tuple[str, ...], types: tuple[str, ...]) -> list[GroupSummary]:
    listed = [g for g in group_listing(state, states, types) if g is not None]
    return sorted(listed, key=lambda g: g.group_id)


def test_list_and_describe() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("simple", {0: 1}), 0))
    join_consumer(state, "cons")
    everything = list_groups(state, (), ())
    assert [(g.group_id, g.group_type, g.protocol_type) for g in everything] == [
        ("cons", "consumer", "consumer"),
        ("simple", "classic", ""),
    ]
    assert [g.group_id for g in list_groups(state, (), ("consumer",))] == ["cons"]
    assert [g.group_id for g in list_groups(state, ("empty",), ())] == ["simple"]
    described = describe_classic_groups(state, ["cons", "simple", "none"], 6)
    assert described[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert (described[1].group_state, described[1].error_code) == ("Empty", 0)
    assert described[2].group_state == "Dead"


def test_describe_groups_v0_to_v5_on_a_consumer_group_answers_none_with_state_dead() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "cons")
    for version in range(6):
        [described] = describe_classic_groups(state, ["cons"], version)
        assert (described.error_code, described.group_state, described.error_message) == (0, "Dead", None)
    [described] = describe_classic_groups(state, ["cons"], 6)
    assert (described.error_code, described.group_state) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")
    assert described.error_message == "Group cons is not a classic group."


def test_consumer_group_describe_of_a_classic_group_says_it_is_not_a_consumer_group() -> None:
    """Kafka's message for a group of the other type (a simple, offsets-only group is a classic
    group in Kafka); a missing group keeps "not found"."""
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2]}))
    apply(s.state, commit_at(s.state, commit("simple", {0: 1}), 0))
    described = describe_consumer_groups(s.state, ["grp", "simple", "none"], IMAGE, ConsumerGroupConfig())
    assert [(d.group_id, d.error_code, d.error_message) for d in described.groups] == [
        ("grp", ErrorCode.GROUP_ID_NOT_FOUND, "Group grp is not a consumer group."),
        ("simple", ErrorCode.GROUP_ID_NOT_FOUND, "Group simple is not a consumer group."),
        ("none", ErrorCode.GROUP_ID_NOT_FOUND, "Group none not found."),
    ]


def test_on_loaded_arms_retention_and_member_sessions() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "cons")
    timers = HANDLERS.on_loaded(state, 100).timers
    keys = {t.key for t in timers if isinstance(t, ScheduleTimer)}
    assert "offsets-retention" in keys and any("cons" in k for k in keys)


def test_classic_commit_keeps_the_members_session_alive() -> None:
    """Kafka's commitOffset reschedules a classic member's heartbeat when the group is Stable or
    PreparingRebalance: a member whose only traffic is commits is not expired."""
    s = Shard()
    member = s.join("", session_timeout_ms=6000).member_id
    token = s.join(member, session_timeout_ms=6000)
    s.advance(0)
    generation = s.answer(token).generation_id
    s.sync(member, generation, {member: assignment([0, 1])})
    assert s.classic_group().state is ClassicGroupState.STABLE
    for _ in range(3):  # 12 s of commits only, twice the session timeout
        s.advance(4000)
        assert s.commit(member, generation, {0: 1}) == [ErrorCode.NONE]
    s.advance(2000)
    assert s.heartbeat(member, generation) == ErrorCode.NONE
    # A refused commit (wrong generation) keeps nothing alive.
    s.advance(5000)
    assert s.commit(member, generation + 1, {0: 2}) == [ErrorCode.ILLEGAL_GENERATION]
    s.advance(1000)
    assert s.heartbeat(member, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_commit_of_a_classic_member_inside_a_consumer_group_does_not_keep_it_alive() -> None:
    """Kafka refreshes sessions on commit for classic groups only; a classic member of a consumer
    group keeps its session by heartbeats."""
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2], "C": [3, 4, 5]}))
    assert s.cg_join("A").error_code == ErrorCode.NONE and s.kind() == "consumer"
    timers = dict(s.timers)
    assert s.commit("B", s.members()["B"][0], {0: 1}) == [ErrorCode.NONE]
    assert s.timers == timers
