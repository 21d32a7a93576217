"""Offset and ListGroups rules as Kafka 4.x answers them (GroupCoordinatorService, OffsetMetadataManager,
ConsumerGroup/ClassicGroup validation): retention 0, OffsetFetch member checks, OffsetDelete on a
group whose subscription is not known yet, ListGroups over shards that cannot all answer."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer import validate_offset_fetch
from groupcoord.coordinator.groups.group import GroupSummary
from groupcoord.coordinator.service.service import list_groups_answer
from groupcoord.records.definitions import ClassicMemberInConsumerGroup
from tests.answers import answered
from tests.groups.harness import Coordinator, image, topic
from tests.messages import client, delete_request, delete_topic, join_protocol, join_request
from tests.unit.test_group_shard import HANDLERS, GroupCoordinatorState, apply, commit, commit_at


def test_retention_time_zero_expires_at_commit_time_and_only_minus_one_means_default() -> None:
    state = GroupCoordinatorState()
    request, v2 = commit("s", {0: 9}, version=2)
    zero = replace(request, retention_time_ms=0)
    (record,) = HANDLERS.commit_offsets(state, zero, 1234, v2).records
    assert record.value.expire_timestamp == 1234  # type: ignore[union-attr]
    default = replace(zero, retention_time_ms=-1)
    (record,) = HANDLERS.commit_offsets(state, default, 1234, v2).records
    assert record.value.expire_timestamp == -1  # type: ignore[union-attr]
    apply(state, HANDLERS.commit_offsets(state, zero, 1234, v2))
    # The sweep at the commit's own instant already removes it.
    assert [r.value for r in HANDLERS.expire_offsets(state, 1234).records] == [None]


def test_offset_fetch_checks_a_member_id_given_without_epoch_and_classic_members_on_generation() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    # Only "no member id and no epoch" (admin clients) skips the checks.
    assert validate_offset_fetch(c.state, "grp", None, -1) == ErrorCode.NONE
    assert validate_offset_fetch(c.state, "grp", "Z", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert validate_offset_fetch(c.state, "grp", "A", -1) == ErrorCode.STALE_MEMBER_EPOCH
    assert validate_offset_fetch(c.state, "grp", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    group = c.group()
    group.members["A"] = replace(
        group.members["A"], classic_member_metadata=ClassicMemberInConsumerGroup(session_timeout_ms=10_000)
    )
    epoch = group.members["A"].member_epoch
    assert validate_offset_fetch(c.state, "grp", "A", epoch) == ErrorCode.NONE
    assert validate_offset_fetch(c.state, "grp", "A", epoch - 1) == ErrorCode.ILLEGAL_GENERATION


def test_offset_delete_on_a_consumer_protocol_classic_group_with_unknown_subscription_is_refused() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 5}), 0))
    join = join_request(
        "g",
        10_000,
        protocol_type="consumer",
        protocols=(join_protocol("range", b""),),
        rebalance_timeout_ms=10_000,
    )
    first = HANDLERS.join_group(state, join, "tok", 0, client(9))
    apply(state, first)
    joined = answered(first.response)
    if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        rejoin = replace(join, member_id=joined.member_id)
        apply(state, HANDLERS.join_group(state, rejoin, "tok2", 0, client(9)))
    # First rebalance still running: no protocol chosen, so the subscription is not known.
    assert state.group_type("g") == "classic" and state.classic.subscribed_topics("g") is None
    request = delete_request("g", [delete_topic("t", [0])])
    answer = HANDLERS.delete_offsets(state, request, 0)
    deleted = answered(answer.response)
    assert deleted.error_code == ErrorCode.NONE
    assert [p.error_code for t in deleted.topics for p in t.partitions] == [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC]
    assert answer.records == []
    assert state.offsets.get("g", "t", 0) is not None


def test_offset_delete_with_an_empty_group_id_is_an_invalid_group_id() -> None:
    """As GroupCoordinatorService.deleteOffsets checks before the shard (was GROUP_ID_NOT_FOUND)."""
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("", {0: 5}), 0))
    answer = HANDLERS.delete_offsets(state, delete_request("", [delete_topic("t", [0])]), 0)
    assert answered(answer.response).error_code == ErrorCode.INVALID_GROUP_ID
    assert answer.records == []


A = GroupSummary("a", "consumer", "Stable", "consumer")
B = GroupSummary("b", "consumer", "Empty", "classic")


def test_list_groups_leaves_out_shards_that_are_no_longer_ours() -> None:
    assert asyncio.run(list_groups_answer([[B], ErrorCode.NOT_COORDINATOR, [A]])) == (ErrorCode.NONE, [A, B])


def test_list_groups_answers_another_shard_failure_with_an_empty_list() -> None:
    assert asyncio.run(list_groups_answer([[A], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [B]])) == (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        [],
    )
