"""Upgrade, downgrade, migration policies, offsets across conversions, and classic members
reconciled inside a consumer group (revoke before assign)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.groups.classic.consumer_protocol import decode_subscription
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.runtime.api import ScheduleTimer
from groupcoord.records import RecordType
from groupcoord.records.definitions import GroupMetadataValue
from tests.groups_migration.harness import (
    GROUP,
    Shard,
    assignment,
    classic_group_record,
    partitions_of,
)
from tests.messages import cg_request


def converted(policy: str = "bidirectional") -> Shard:
    """A classic group (generation 5: B [0,1,2], C [3,4,5]) upgraded by consumer member A."""
    s = Shard(policy=policy)
    s.load(classic_group_record(5, {"B": [0, 1, 2], "C": [3, 4, 5]}))
    assert s.commit("B", 5, {0: 10}) == [0]
    a = s.cg_join("A")
    assert a.error_code == 0, a
    return s


# --- configuration --------------------------------------------------------------------------


def test_migration_policy_property() -> None:
    assert ConsumerGroupConfig().migration_policy == "bidirectional"
    config = ConsumerGroupConfig.from_properties({"group.consumer.migration.policy": "Upgrade"})
    assert config.migration_policy == "upgrade" and config.upgrade_enabled and not config.downgrade_enabled
    assert ConsumerGroupConfig(migration_policy="downgrade").downgrade_enabled
    disabled = ConsumerGroupConfig(migration_policy="disabled")
    assert not disabled.upgrade_enabled and not disabled.downgrade_enabled
    with pytest.raises(ValueError):
        ConsumerGroupConfig(migration_policy="sideways")


# --- upgrade ----------------------------------------------------------------------------------


def test_upgrade_is_one_atomic_batch() -> None:
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2], "C": [3, 4, 5]}, session_timeout_ms=12_000))
    assert s.commit("C", 5, {3: 30}) == [0]
    result = s.handlers.consumer_group_heartbeat(
        s.state,
        cg_request(GROUP, "A", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["foo"], topic_partitions=[]),
        s.now,
        RequestContext(1, "c", "/h"),
    )
    types = [r.type for r in result.records]
    assert types[0] == RecordType.GROUP_METADATA and result.records[0].value is None
    assert RecordType.GROUP_METADATA not in types[1:]
    s.apply(result)
    g = s.cgroup()
    b = g.members["B"]
    assert b.classic_member_metadata is not None
    assert b.classic_member_metadata.session_timeout_ms == 12_000
    assert [p.name for p in b.classic_member_metadata.supported_protocols] == ["range"]
    assert decode_subscription(b.classic_member_metadata.supported_protocols[0].metadata).topics == ("foo",)
    assert b.subscribed_topic_names == ("foo",) and b.client_id == "client-B"
    # Epoch 6: A joined; the new target gives A two partitions, taken from B and C.
    assert s.epochs() == (6, 6)
    assert sorted(len(ps) for ps in s.targets().values()) == [2, 2, 2]
    # Classic members' sessions use their own session timeout.
    assert s.timers[f"consumer-session\x00{GROUP}\x00B"].deadline_ms == s.now + 12_000
    # Offsets untouched.
    assert s.state.offsets.get(GROUP, "foo", 3) is not None
    s.check_replay()


def test_upgrade_refusals_write_nothing() -> None:
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2]}))
    # Not epoch 0.
    assert s.cg_beat("A", 3).error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert s.kind() == "classic"
    assert s.cg_beat("A", 3).error_message == f"Group {GROUP} is not a consumer group."
    assert s.kind() == "classic"
    assert len(s.log) == 1


def test_online_upgrade_while_rebalancing_answers_parked_requests_rebalance_in_progress() -> None:
    """Kafka's convertToConsumerGroup checks no classic state: it completes the parked JoinGroup
    and SyncGroup futures with REBALANCE_IN_PROGRESS and converts at once."""
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2], "C": [3, 4, 5]}))
    token = s.join("B", protocols=("range", "roundrobin"))  # metadata changed: rebalance
    assert s.classic_group().state is ClassicGroupState.PREPARING_REBALANCE
    assert s.cg_join("A").error_code == ErrorCode.NONE
    assert s.kind() == "consumer"
    parked = s.answer(token)
    assert isinstance(parked, JoinGroupResponse) and parked.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert set(s.members()) == {"A", "B", "C"}
    s.check_replay()


def test_upgrade_needs_the_consumer_protocol_type() -> None:
    s = Shard()
    record = classic_group_record(5, {"B": [0, 1, 2]})
    assert isinstance(record.value, GroupMetadataValue)
    s.load(replace(record, value=replace(record.value, protocol_type="connect")))
    n = len(s.log)
    response = s.cg_join("A")
    assert response.error_code == ErrorCode.GROUP_ID_NOT_FOUND and len(s.log) == n and s.kind() == "classic"


# --- policies -------------------------------------------------------------------------------


def test_policy_disabled_refuses_conversions_only() -> None:
    s = Shard(policy="disabled")
    s.load(classic_group_record(5, {"B": [0, 1, 2]}))
    assert s.cg_join("A").error_code == ErrorCode.GROUP_ID_NOT_FOUND
    other = Shard(policy="disabled")
    assert other.cg_join("A").error_code == 0
    # Routing ignores the policy: a classic member joins the non-empty consumer group.
    assert other.join("", api_version=9).error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert other.kind() == "consumer"


def test_policy_downgrade_refuses_upgrade() -> None:
    s = Shard(policy="downgrade")
    s.load(classic_group_record(5, {"B": [0, 1, 2]}))
    assert s.cg_join("A").error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert s.kind() == "classic"


def test_policy_upgrade_never_downgrades() -> None:
    s = converted(policy="upgrade")
    _leave_consumer(s, "A")
    assert s.kind() == "consumer"
    assert set(s.members()) == {"B", "C"}
    s.check_replay()


def test_policy_downgrade_allows_classic_members_then_downgrades() -> None:
    s = Shard(policy="downgrade")
    assert s.cg_join("A").member_epoch == 1
    first = s.join("", api_version=9)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    b = first.member_id
    joined = s.join(b)
    assert joined.error_code == 0 and joined.generation_id == 2
    assert s.cgroup().members[b].uses_classic_protocol
    _leave_consumer(s, "A")
    assert s.kind() == "classic"
    s.check_replay()


# --- downgrade ------------------------------------------------------------------------------


def _leave_consumer(s: Shard, member_id: str) -> None:
    response = s.cg_heartbeat(cg_request(GROUP, member_id, -1))
    assert response.error_code == 0 and response.member_epoch == -1


def test_downgrade_keeps_generation_as_group_epoch_with_target_assignments_then_rebalances() -> None:
    """Kafka's ClassicGroup.fromConsumerGroup + prepareRebalance: the remaining classic members
    hold the generation, get REBALANCE_IN_PROGRESS and may commit at it while they rejoin."""
    s = converted()
    # Let everyone settle at epoch 6.
    s.cg_beat("A", 6, owned=[])
    for m in ("B", "C"):
        assert s.heartbeat(m, 5) == ErrorCode.REBALANCE_IN_PROGRESS
        joined = s.join(m)
        assert s.sync(m, joined.generation_id).error_code == 0
    a = s.cg_beat("A", 6, owned=[])
    assert a.member_epoch == 6
    members = s.members()
    assert sorted(p for _, ps, _ in members.values() for p in ps) == [0, 1, 2, 3, 4, 5]
    group_epoch = s.epochs()[0]
    targets = s.targets()
    _leave_consumer(s, "A")

    assert s.kind() == "classic" and s.state.consumer.group(GROUP) is None
    g = s.classic_group()
    assert g.state is ClassicGroupState.PREPARING_REBALANCE
    assert g.generation_id == group_epoch and g.protocol_name == "range" and g.protocol_type == "consumer"
    record = s.state.classic.records[GROUP]
    assert record.generation == group_epoch and record.leader is None
    assert [m.member_id for m in record.members] == ["B", "C"]
    assert {m.member_id: partitions_of(m.assignment) for m in record.members} == {
        "B": targets["B"],
        "C": targets["C"],
    }
    assert all(decode_subscription(m.subscription).topics == ("foo",) for m in record.members)
    assert s.state.offsets.get(GROUP, "foo", 0) is not None
    s.check_replay()

    # The members are told to rejoin, may commit meanwhile, and the group settles at epoch + 1.
    assert s.heartbeat("B", group_epoch) == ErrorCode.REBALANCE_IN_PROGRESS
    assert s.commit("B", group_epoch, {0: 42}) == [0]
    tb = s.join("B", owned=members["B"][1])
    tc = s.join("C", owned=members["C"][1])
    jb, jc = s.answer(tb), s.answer(tc)
    assert jb.generation_id == jc.generation_id == group_epoch + 1
    leader = jb if jb.leader == "B" else jc
    assert leader.members
    plan = {"B": assignment([0, 1, 2]), "C": assignment([3, 4, 5])}
    s.sync(leader.member_id, leader.generation_id, plan)
    follower = "C" if leader.member_id == "B" else "B"
    synced = s.sync(follower, leader.generation_id)
    assert synced.error_code == 0 and partitions_of(synced.assignment) == partitions_of(plan[follower])
    assert s.classic_group().state is ClassicGroupState.STABLE
    s.check_replay()


def test_downgrade_when_the_last_consumer_member_is_fenced() -> None:
    s = converted()
    s.fire("consumer-session\x00grp\x00A")
    assert s.kind() == "classic"
    assert s.classic_group().state is ClassicGroupState.PREPARING_REBALANCE
    s.check_replay()


def test_no_downgrade_while_a_consumer_member_remains() -> None:
    s = converted()
    assert s.cg_join("D").error_code == 0
    _leave_consumer(s, "A")
    assert s.kind() == "consumer" and set(s.members()) == {"B", "C", "D"}
    s.check_replay()


def test_upgrade_then_downgrade_then_upgrade_again() -> None:
    s = converted()
    _leave_consumer(s, "A")
    assert s.kind() == "classic"
    # The classic members rejoin and the leader assigns; the group is stable again.
    tb, tc = s.join("B"), s.join("C")
    jb = s.answer(tb)
    jc = s.answer(tc)
    leader = jb if jb.members else jc
    s.sync(leader.member_id, leader.generation_id, {"B": assignment([0, 1, 2]), "C": assignment([3, 4, 5])})
    s.sync("C" if leader.member_id == "B" else "B", leader.generation_id)
    generation = s.classic_group().generation_id
    again = s.cg_join("A2")
    assert again.error_code == 0 and s.kind() == "consumer"
    assert s.epochs()[0] == generation + 1
    s.check_replay()


# --- classic members inside a consumer group --------------------------------------------------


def _consumer_group_with_x() -> Shard:
    s = Shard()
    x = s.cg_join("X")
    assert x.member_epoch == 1
    assert s.members()["X"] == (1, [0, 1, 2, 3, 4, 5], [])
    return s


def test_new_classic_member_joins_and_waits_for_released_partitions() -> None:
    s = _consumer_group_with_x()
    joined = s.join("C", api_version=3)  # v3: no MEMBER_ID_REQUIRED round trip; "C" is its id
    assert joined.error_code == 0 and joined.generation_id == 2 and joined.protocol_name == "range"
    assert s.targets()["C"] and len(s.targets()["C"]) == 3
    # Everything is still X's: C gets nothing yet (no double ownership).
    assert s.members()["C"] == (2, [], [])
    assert partitions_of(s.sync("C", 2).assignment) == []
    # Its partitions are not free yet: no rejoin needed.
    assert s.heartbeat("C", 2) == ErrorCode.NONE
    # X revokes, then acknowledges.
    x = s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    assert x.member_epoch == 1 and s.members()["X"][2]
    kept = s.members()["X"][1]
    s.cg_beat("X", 1, owned=kept)
    assert s.members()["X"] == (2, kept, [])
    # Now C's partitions are free: it is told to rejoin and gets them.
    assert s.heartbeat("C", 2) == ErrorCode.REBALANCE_IN_PROGRESS
    again = s.join("C", api_version=3)
    assert again.generation_id == 2
    assert partitions_of(s.sync("C", 2).assignment) == s.targets()["C"]
    assert s.heartbeat("C", 2) == ErrorCode.NONE
    s.check_replay()


def test_cooperative_classic_member_revokes_before_the_new_owner_gets_its_partition() -> None:
    s = _consumer_group_with_x()
    s.join("C", api_version=3)
    s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    s.cg_beat("X", 1, owned=s.members()["X"][1])
    s.join("C", api_version=3)
    owned_c = partitions_of(s.sync("C", 2).assignment)
    assert len(owned_c) == 3

    # Y joins: the target takes one partition from C.
    y = s.cg_join("Y")
    assert y.member_epoch == 3
    lost = sorted(set(owned_c) - set(s.targets()["C"]))
    assert len(lost) == 1
    # C's generation lags: rejoin. It is cooperative: it still owns its partitions.
    assert s.heartbeat("C", 2) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = s.join("C", owned=owned_c, api_version=3)
    # It must revoke first: it stays on generation 2 and SyncGroup tells it what it keeps.
    assert joined.generation_id == 2
    epoch, assigned, pending = s.members()["C"]
    assert (epoch, pending) == (2, lost) and lost[0] not in assigned
    synced = s.sync("C", 2)
    assert synced.error_code == 0 and partitions_of(synced.assignment) == assigned
    # Y cannot have the lost partition while C may still own it.
    y = s.cg_beat("Y", 3, owned=[])
    assert lost[0] not in s.members()["Y"][1]
    # C heartbeats: still revoking, rejoin once done.
    assert s.heartbeat("C", 2) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = s.join("C", owned=assigned, api_version=3)
    assert joined.generation_id == 3 and s.members()["C"] == (3, assigned, [])
    assert partitions_of(s.sync("C", 3).assignment) == assigned
    # Now Y gets it.
    s.cg_beat("Y", 3, owned=s.members()["Y"][1])
    assert lost[0] in s.members()["Y"][1]
    owners = [p for _, ps, _ in s.members().values() for p in ps]
    assert sorted(owners) == [0, 1, 2, 3, 4, 5]
    s.check_replay()


def test_classic_members_get_no_rebalance_timeout_only_a_join_timer_on_rebalance_in_progress() -> None:
    """Kafka's maybeReconcile schedules the rebalance timeout only for consumer-protocol members;
    a classic member's join timer is armed by the REBALANCE_IN_PROGRESS answer of a Heartbeat or
    a SyncGroup (scheduleConsumerGroupJoinTimeoutIfAbsent)."""
    s = _consumer_group_with_x()
    s.join("C", api_version=3)
    s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    s.cg_beat("X", 1, owned=s.members()["X"][1])
    s.join("C", api_version=3)
    owned_c = partitions_of(s.sync("C", 2).assignment)
    s.cg_join("Y")
    join_timer, rebalance_timer = f"migration-join\x00{GROUP}\x00C", f"consumer-rebalance\x00{GROUP}\x00C"
    assert join_timer not in s.timers
    assert s.sync("C", 2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert join_timer in s.timers
    joined = s.join("C", owned=owned_c, api_version=3)
    assert joined.generation_id == 2 and s.members()["C"][2]  # still revoking
    assert join_timer not in s.timers and rebalance_timer not in s.timers
    assert s.heartbeat("C", 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert join_timer in s.timers and rebalance_timer not in s.timers


def test_classic_member_sync_and_heartbeat_errors() -> None:
    s = _consumer_group_with_x()
    s.join("C", api_version=3)
    assert s.sync("C", 7).error_code == ErrorCode.ILLEGAL_GENERATION
    assert s.heartbeat("C", 7) == ErrorCode.ILLEGAL_GENERATION
    assert s.heartbeat("nobody", 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert s.sync("C", 2, protocol="roundrobin").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # A consumer-protocol member cannot use the classic APIs.
    assert s.heartbeat("X", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    # Incompatible protocols are refused.
    assert s.join("D", protocols=("roundrobin",), api_version=3).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert s.join("D", session_timeout_ms=1, api_version=3).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    # A new epoch exists: SyncGroup says rebalance.
    s.cg_join("Y")
    assert s.sync("C", 2).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_classic_member_timeouts_fence_it() -> None:
    s = _consumer_group_with_x()
    s.join("C", api_version=3)
    s.join("D", api_version=3)
    # C never syncs: fenced after its rebalance timeout.
    assert f"migration-sync\x00{GROUP}\x00C" in s.timers
    s.sync("D", s.members()["D"][0])
    s.fire(f"migration-sync\x00{GROUP}\x00C")
    assert "C" not in s.members()
    # D is told to rejoin but never does: fenced by the join timeout, which heartbeats do not push.
    s.cg_join("Y")
    assert s.heartbeat("D", s.members()["D"][0]) == ErrorCode.REBALANCE_IN_PROGRESS
    deadline = s.timers[f"migration-join\x00{GROUP}\x00D"].deadline_ms
    s.now += 1000
    assert s.heartbeat("D", s.members()["D"][0]) == ErrorCode.REBALANCE_IN_PROGRESS
    assert s.timers[f"migration-join\x00{GROUP}\x00D"].deadline_ms == deadline
    s.fire(f"migration-join\x00{GROUP}\x00D")
    assert "D" not in s.members()
    # A classic member's session uses the JoinGroup session timeout.
    s.join("E", session_timeout_ms=7_000, api_version=3)
    assert s.timers[f"consumer-session\x00{GROUP}\x00E"].deadline_ms == s.now + 7_000
    s.fire(f"consumer-session\x00{GROUP}\x00E")
    assert "E" not in s.members()
    s.check_replay()


def test_classic_leave_of_all_classic_members_keeps_the_consumer_group() -> None:
    s = converted()
    response = s.leave("B", "C", "nobody")
    assert [m.error_code for m in response.members] == [0, 0, ErrorCode.UNKNOWN_MEMBER_ID]
    assert set(s.members()) == {"A"}
    assert s.epochs()[0] == 7  # one bump for the batch
    s.check_replay()


def test_reload_keeps_classic_members_and_their_sessions() -> None:
    s = converted()
    fresh_state = GroupCoordinatorState()
    for record in s.log:
        fresh_state.replay(record)
    loaded = s.handlers.on_loaded(fresh_state, s.now)
    sessions = {
        t.key: t.deadline_ms
        for t in loaded.timers
        if isinstance(t, ScheduleTimer) and t.key.startswith("consumer-session")
    }
    assert sessions[f"consumer-session\x00{GROUP}\x00B"] == s.now + 10_000
    assert sessions[f"consumer-session\x00{GROUP}\x00A"] == s.now + 45_000
    loaded_group = fresh_state.consumer.group(GROUP)
    assert loaded_group is not None and loaded_group.members["B"].uses_classic_protocol
    assert fresh_state.snapshot() == s.state.snapshot()


def test_static_classic_member_restarts_inside_a_consumer_group() -> None:
    s = _consumer_group_with_x()
    first = s.join("", instance_id="i-1")
    assert first.error_code == 0  # static members get their id at once
    old_id = first.member_id
    s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    s.cg_beat("X", 1, owned=s.members()["X"][1])
    again = s.join(old_id, instance_id="i-1")
    owned = partitions_of(s.sync(old_id, again.generation_id).assignment)
    assert len(owned) == 3
    epoch = s.epochs()[0]
    # The process restarts: same instance id, no member id. It takes over the old member and
    # its partitions, without a rebalance.
    restarted = s.join("", instance_id="i-1")
    assert restarted.error_code == 0 and restarted.member_id != old_id
    assert s.epochs()[0] == epoch and old_id not in s.members()
    assert s.members()[restarted.member_id][1] == owned
    assert partitions_of(s.sync(restarted.member_id, restarted.generation_id).assignment) == owned
    # The old incarnation is fenced.
    assert s.heartbeat(old_id, again.generation_id) == ErrorCode.UNKNOWN_MEMBER_ID
    assert s.join(old_id, instance_id="i-1").error_code == ErrorCode.FENCED_INSTANCE_ID
    s.check_replay()


def test_consumer_static_member_replaces_a_live_classic_static_member() -> None:
    """Kafka checks UNRELEASED_INSTANCE_ID only when neither side uses the classic protocol: a
    process upgraded to the consumer protocol takes its live classic predecessor's place."""
    s = _consumer_group_with_x()
    first = s.join("", instance_id="i-1")
    old_id = first.member_id
    s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    s.cg_beat("X", 1, owned=s.members()["X"][1])
    again = s.join(old_id, instance_id="i-1")
    owned = partitions_of(s.sync(old_id, again.generation_id).assignment)
    epoch = s.epochs()[0]
    upgraded = s.cg_heartbeat(
        cg_request(
            GROUP,
            "Y",
            0,
            instance_id="i-1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["foo"],
            topic_partitions=[],
        )
    )
    assert upgraded.error_code == ErrorCode.NONE
    assert old_id not in s.members() and s.members()["Y"][1] == owned
    assert s.epochs()[0] == epoch
    s.check_replay()


def test_downgraded_group_reloaded_before_its_rebalance_rebalances_on_load() -> None:
    """The reload concern, solved where clients cannot see it: a failover before the rebalance
    completes loads the downgrade's record (no leader) and prepares the rebalance again, so the
    leaving member's partitions are not stranded and members keep their generation."""
    s = converted()
    s.cg_beat("A", 6, owned=[])
    group_epoch = s.epochs()[0]
    _leave_consumer(s, "A")
    assert s.kind() == "classic"
    # A new coordinator loads the log before the members rejoined.
    fresh = GroupCoordinatorState()
    for record in s.log:
        fresh.replay(record)
    s.state = fresh
    s.timers.clear()
    s.apply(s.handlers.on_loaded(s.state, s.now))
    assert s.classic_group().state is ClassicGroupState.PREPARING_REBALANCE
    # The members hold the recorded generation: told to rejoin, and the leader hands out
    # everything, the partitions A had included.
    assert s.heartbeat("B", group_epoch) == ErrorCode.REBALANCE_IN_PROGRESS
    assert s.heartbeat("C", 5) == ErrorCode.ILLEGAL_GENERATION
    tb = s.join("B")
    tc = s.join("C")
    jb, jc = s.answer(tb), s.answer(tc)
    leader = jb if jb.members else jc
    assert leader.generation_id == group_epoch + 1
    s.sync(leader.member_id, leader.generation_id, {"B": assignment([0, 1, 2]), "C": assignment([3, 4, 5])})
    follower = "C" if leader.member_id == "B" else "B"
    assert partitions_of(s.sync(follower, leader.generation_id).assignment) in ([0, 1, 2], [3, 4, 5])
    assert s.classic_group().state is ClassicGroupState.STABLE
    s.check_replay()


# --- static replacement across protocols ----------------------------------------------------


def _with_static_consumer_member() -> Shard:
    s = Shard()
    s.load(classic_group_record(5, {"B": [0, 1, 2], "C": [3, 4, 5]}))
    x = s.cg_heartbeat(
        cg_request(
            GROUP,
            "X",
            0,
            instance_id="i-1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["foo"],
            topic_partitions=[],
        )
    )
    assert x.error_code == 0 and s.kind() == "consumer"
    return s


def test_classic_static_member_replaces_a_consumer_static_member_then_the_group_downgrades() -> None:
    """Kafka checks UNRELEASED_INSTANCE_ID only when neither side uses the classic protocol, and
    converts the group back to classic when only classic members remain
    (validateOnlineDowngradeWithReplacedMember)."""
    s = _with_static_consumer_member()
    # X crashed without leaving; its instance restarts as a classic consumer.
    joined = s.join("", instance_id="i-1")
    assert joined.error_code == ErrorCode.NONE and joined.member_id not in ("", "X")
    assert s.kind() == "classic" and s.state.consumer.group(GROUP) is None
    g = s.classic_group()
    assert set(g.members) == {"B", "C", joined.member_id}
    assert g.static_member_id("i-1") == joined.member_id
    # Same subscription, but B and C had not yet revoked what X's target holds: handing out the
    # targets without a rebalance would give those partitions two owners, so the group rebalances.
    assert g.state is ClassicGroupState.PREPARING_REBALANCE
    s.check_replay()


def _settled_static_x_and_classic_c() -> Shard:
    """A consumer group at rest: static consumer-protocol X (instance i-1) and classic C, each
    holding exactly its target at the group epoch."""
    s = Shard()
    x = s.cg_heartbeat(
        cg_request(
            GROUP,
            "X",
            0,
            instance_id="i-1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["foo"],
            topic_partitions=[],
        )
    )
    assert x.member_epoch == 1
    s.join("C", api_version=3)
    s.cg_beat("X", 1, owned=[0, 1, 2, 3, 4, 5])
    s.cg_beat("X", 1, owned=s.members()["X"][1])
    again = s.join("C", api_version=3)
    s.sync("C", again.generation_id)
    assert s.members() == {"C": (2, s.targets()["C"], []), "X": (2, s.targets()["X"], [])}
    return s


def test_downgrade_by_static_replacement_with_the_same_subscription_does_not_rebalance() -> None:
    """Kafka 4.4 (KAFKA-19546): the replacement takes the replaced member's assignment and the
    group turns classic without a rebalance, so a rolling downgrade stops no consumer."""
    s = _settled_static_x_and_classic_c()
    x_parts, c_parts = s.targets()["X"], s.targets()["C"]
    joined = s.join("", instance_id="i-1")  # X's process restarts as a classic consumer, same topics
    assert joined.error_code == ErrorCode.NONE and s.kind() == "classic"
    g = s.classic_group()
    assert g.state is ClassicGroupState.STABLE and g.generation_id == joined.generation_id == 2
    assert s.heartbeat("C", 2) == ErrorCode.NONE
    assert partitions_of(s.sync(joined.member_id, 2).assignment) == x_parts
    assert partitions_of(s.sync("C", 2).assignment) == c_parts
    s.check_replay()
    # A coordinator that reloads the group finds it settled as well.
    fresh = GroupCoordinatorState()
    for record in s.log:
        fresh.replay(record)
    s.state = fresh
    s.timers.clear()
    s.apply(s.handlers.on_loaded(s.state, s.now))
    assert s.classic_group().state is ClassicGroupState.STABLE


def test_downgrade_by_static_replacement_with_another_subscription_rebalances() -> None:
    s = _settled_static_x_and_classic_c()
    joined = s.join("", instance_id="i-1", topics=("foo", "bar"))
    assert joined.error_code == ErrorCode.NONE and s.kind() == "classic"
    g = s.classic_group()
    assert g.state is ClassicGroupState.PREPARING_REBALANCE and g.generation_id == 3
    # The changed subscription bumped the group epoch: C, at 2, is told to rejoin.
    assert s.heartbeat("C", 2) == ErrorCode.ILLEGAL_GENERATION
    s.check_replay()


def test_classic_static_member_replaces_a_consumer_static_member_that_left_with_epoch_minus_2() -> None:
    s = _with_static_consumer_member()
    epoch = s.members()["X"][0]
    left = s.cg_heartbeat(cg_request(GROUP, "X", -2, instance_id="i-1"))
    assert left.error_code == 0 and epoch > 0
    joined = s.join("", instance_id="i-1")
    assert joined.error_code == ErrorCode.NONE
    assert s.kind() == "classic" and set(s.classic_group().members) == {"B", "C", joined.member_id}
    s.check_replay()


def test_classic_static_member_replacing_a_consumer_member_keeps_the_group_while_another_remains() -> None:
    s = _with_static_consumer_member()
    assert s.cg_join("A").error_code == 0
    joined = s.join("", instance_id="i-1")
    assert joined.error_code == ErrorCode.NONE and s.kind() == "consumer"
    assert set(s.members()) == {"A", "B", "C", joined.member_id}
    s.check_replay()
