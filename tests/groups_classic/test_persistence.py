"""The GroupMetadata record: written when Kafka writes it, and a reload rebuilds the group."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    ClassicGroupConfig,
    ClassicGroupsState,
    ClassicGroupState,
    group_metadata_tombstone,
)
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.runtime.api import Park, Result
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ClassicMemberMetadata,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from tests.groups_classic.harness import GROUP, Coordinator, protocols, settle
from tests.messages import member_identity

S = ClassicGroupState


def test_records_are_written_exactly_at_kafkas_moments() -> None:
    c = Coordinator()
    _, m1 = c.join_new(client_id="a")
    assert [r.value.generation for r in c.log if r.value] == [0]  # new group: empty record
    _, m2 = c.join_new(client_id="b")
    c.advance(6000)
    assert len(c.log) == 1  # joins, barrier, CompletingRebalance: nothing durable yet
    settle(c, m1, m2)
    assert len(c.log) == 2 and c.log[-1].value is not None and c.log[-1].value.generation == 1
    c.heartbeat(m1, 1)
    c.join(m2)  # follower with unchanged metadata
    assert len(c.log) == 2
    c.join(m1)  # leader rejoin: rebalance (not persisted)
    assert len(c.log) == 2
    c.advance(40000)  # everyone times out: Empty is persisted
    assert len(c.log) == 3 and c.log[-1].value is not None and c.log[-1].value.members == []
    for record in c.log:
        assert record.type == RecordType.GROUP_METADATA and record.key == GroupMetadataKey(GROUP)
    c.assert_replay_matches()


def test_reload_rebuilds_a_stable_group_that_keeps_serving() -> None:
    c = Coordinator()
    _, m1 = c.join_new(client_id="a")
    _, m2 = c.join_new(client_id="b")
    c.advance(6000)
    settle(c, m1, m2)
    live = c.group().to_record_value()
    c.reload()
    group = c.group()
    assert group.state is S.STABLE and group.to_record_value() == live
    assert group.leader_id == m1 and group.protocol_name == "range" and group.subscribed_topics is None
    # on_loaded armed every member's session.
    assert sum("heartbeat" in k for k in c.timers) == 2
    assert c.heartbeat(m1, 1).error_code == ErrorCode.NONE
    _, s = c.sync(m2, 1)
    assert s.assignment == f"a-{m2}".encode()  # type: ignore[union-attr]
    _, r = c.join(m2)
    assert isinstance(r, JoinGroupResponse) and r.generation_id == 1
    # Only the chosen protocol was recorded: rejoining with a longer list is changed metadata.
    _, r = c.join(m2, protocols_=protocols("range", "roundrobin"))
    assert isinstance(r, Park) and c.group().state is S.PREPARING_REBALANCE


def test_reload_mid_rebalance_falls_back_to_the_last_stable_generation() -> None:
    c = Coordinator()
    _, m1 = c.join_new(client_id="a")
    c.advance(3000)
    settle(c, m1)
    c.join(m1)  # PreparingRebalance, then (alone) CompletingRebalance generation 2
    assert c.group().generation_id == 2 and c.group().state is S.COMPLETING_REBALANCE
    c.reload()
    group = c.group()
    assert group.state is S.STABLE and group.generation_id == 1
    _, s = c.sync(m1, 2)
    assert s.error_code == ErrorCode.ILLEGAL_GENERATION  # type: ignore[union-attr]


def test_reload_of_an_empty_group_and_of_a_new_group() -> None:
    c = Coordinator()
    c.join(client_id="a")  # MEMBER_ID_REQUIRED: only the empty record exists
    c.reload()
    group = c.group()
    assert group.state is S.EMPTY and group.generation_id == 0 and not group.pending_join_members
    c2 = Coordinator()
    _, m = c2.join_new()
    c2.advance(3000)
    settle(c2, m)
    c2.leave(member_identity(m))
    c2.reload()
    group = c2.group()
    assert group.state is S.EMPTY and group.generation_id == 2 and group.protocol_type == "consumer"
    assert group.current_state_timestamp == c2.log[-1].value.current_state_timestamp  # type: ignore[union-attr]


def test_reload_over_max_size_rebalances() -> None:
    c = Coordinator()
    ids = [c.join_new(client_id=f"c{i}")[1] for i in range(3)]
    c.advance(12000)
    settle(c, *ids)
    c.config = ClassicGroupConfig(max_size=2)
    c.reload()
    assert c.group().state is S.PREPARING_REBALANCE


def test_tombstone_deletes_the_group() -> None:
    c = Coordinator()
    _, m = c.join_new()
    c.advance(3000)
    settle(c, m)
    assert c.state.validate_delete_group(GROUP) == ErrorCode.NON_EMPTY_GROUP
    c.advance(10000)
    assert c.state.validate_delete_group(GROUP) == ErrorCode.NONE
    group = c.group()
    records = c.state.delete_group_records(GROUP)
    assert records == [group_metadata_tombstone(GROUP)]
    c.apply(Result(None, records))
    assert c.state.group(GROUP) is None and group.state is S.DEAD
    assert c.state.validate_delete_group(GROUP) == ErrorCode.GROUP_ID_NOT_FOUND
    assert c.replayed().snapshot() == c.state.snapshot() == {}
    # A member id of the deleted group is unknown; a fresh join recreates it.
    _, r = c.join(m)
    assert isinstance(r, JoinGroupResponse) and r.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_replay_ignores_other_record_types_and_orphan_tombstones() -> None:
    state = ClassicGroupsState()
    state.replay(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), OffsetCommitValue(1)))
    state.replay(group_metadata_tombstone("g"))
    assert state.snapshot() == {} and not state.groups


def test_legacy_record_without_rebalance_timeout_loads() -> None:
    state = ClassicGroupsState()
    value = GroupMetadataValue(
        "consumer", 4, "range", "m", -1, [ClassicMemberMetadata("m", None, "c", "h", -1, 7000, b"", b"x")]
    )
    state.replay(CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey("g"), value))
    group = state.group("g")
    assert group is not None and group.members["m"].rebalance_timeout_ms == 7000
    assert group.current_state_timestamp is None and group.state is S.STABLE
