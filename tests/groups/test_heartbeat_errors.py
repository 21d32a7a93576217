"""Every error path of ConsumerGroupHeartbeat, in Kafka's validation order."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    heartbeat_error_response,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from tests.groups.harness import GROUP, Coordinator, assigned, image, topic, tps
from tests.messages import cg_request, tid

FOO = tid("foo")


def coordinator(**config: Any) -> Coordinator:
    return Coordinator(image(topic("foo", 4)), ConsumerGroupConfig(assignment_interval_ms=0, **config))


def join_request(**kw: object) -> ConsumerGroupHeartbeatRequest:
    fields: dict[str, object] = {
        "group_id": GROUP,
        "member_id": "m",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["foo"],
        "topic_partitions": [],
    }
    fields.update(kw)
    return cg_request(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("request_fields", "error", "fragment"),
    [
        ({"group_id": ""}, ErrorCode.INVALID_REQUEST, "GroupId"),
        ({"instance_id": ""}, ErrorCode.INVALID_REQUEST, "InstanceId"),
        ({"rack_id": ""}, ErrorCode.INVALID_REQUEST, "RackId"),
        ({"member_id": ""}, ErrorCode.INVALID_REQUEST, "MemberId"),
        ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs"),
        ({"topic_partitions": None}, ErrorCode.INVALID_REQUEST, "TopicPartitions"),
        ({"topic_partitions": tps(FOO, 0)}, ErrorCode.INVALID_REQUEST, "TopicPartitions"),
        ({"subscribed_topic_names": []}, ErrorCode.INVALID_REQUEST, "SubscribedTopicNames"),
        ({"subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST, "SubscribedTopicNames"),
        ({"member_epoch": -3}, ErrorCode.INVALID_REQUEST, "MemberEpoch"),
        ({"member_epoch": -2, "instance_id": None}, ErrorCode.INVALID_REQUEST, "InstanceId"),
        ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR, "sticky"),
        (
            {"subscribed_topic_names": None, "subscribed_topic_regex": "foo("},
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            "RE2",
        ),
        # RE2 has no look-around: a Java-only pattern is refused.
        (
            {"subscribed_topic_names": None, "subscribed_topic_regex": "(?!bar)foo"},
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            "",
        ),
    ],
)
def test_request_validation(request_fields: dict[str, object], error: ErrorCode, fragment: str) -> None:
    c = coordinator()
    r = c.heartbeat(join_request(**request_fields))
    assert r.error_code == error
    assert fragment in (r.error_message or "")
    assert c.log == [] and c.timers == {}


def test_validation_order_group_id_first() -> None:
    c = coordinator()
    r = c.heartbeat(join_request(group_id="", member_epoch=-7, server_assignor="nope"))
    assert r.error_code == ErrorCode.INVALID_REQUEST and "GroupId" in (r.error_message or "")


def test_epoch_above_zero_needs_member_id_on_v0() -> None:
    c = coordinator()
    r = c.heartbeat(cg_request(GROUP, "", 3), api_version=0)
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_v0_member_id_is_generated_deterministically() -> None:
    ids = []
    for _ in range(2):
        c = coordinator()
        r = c.heartbeat(join_request(member_id=""), api_version=0)
        assert r.error_code == ErrorCode.NONE and r.member_id
        assert len(r.member_id) == 22
        ids.append(r.member_id)
        r2 = c.heartbeat(join_request(member_id=""), api_version=0)
        assert r2.member_id != r.member_id
    assert ids[0] == ids[1]


def test_unknown_group_and_member() -> None:
    c = coordinator()
    assert c.beat("ghost", 3, []).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    c.join("A", ["foo"])
    assert c.beat("ghost", 3, []).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.beat("ghost", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_fenced_member_epoch() -> None:
    c = coordinator()
    r = c.join("A", ["foo"])
    assert r.member_epoch == 1
    # Ahead of the coordinator.
    assert c.beat("A", 2, tps(FOO, 0, 1, 2, 3)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3))
    c.beat("A", 1, tps(FOO, 0, 1))
    assert c.member("A") == (2, [0, 1], [])
    # The response moving A to epoch 2 was lost: A retries on epoch 1 owning a subset -> accepted.
    r = c.beat("A", 1, tps(FOO, 0, 1))
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, 2)
    # Previous epoch but owning partitions it no longer has -> fenced.
    assert c.beat("A", 1, tps(FOO, 0, 1, 2)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # Previous epoch without saying what it owns -> fenced (cannot prove it is safe).
    assert c.beat("A", 1, None).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # An older epoch than the previous one -> fenced.
    c.join("C", ["foo"])
    c.beat("A", 2, tps(FOO, 0, 1))
    c.beat("A", 2, tps(FOO, 0))
    assert c.member("A")[0] == 3
    assert c.beat("A", 1, tps(FOO, 0)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # ErrorCode write nothing.
    before = len(c.log)
    c.beat("A", 9, tps(FOO, 0))
    assert len(c.log) == before


def test_fenced_member_rejoins_with_epoch_zero() -> None:
    c = coordinator()
    c.join("A", ["foo"])
    assert c.beat("A", 5, tps(FOO, 0)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    r = c.join("A", ["foo"])
    assert (r.error_code, r.member_epoch, assigned(r)) == (ErrorCode.NONE, 1, [0, 1, 2, 3])


def test_group_max_size() -> None:
    c = coordinator(max_size=2)
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    r = c.join("C", ["foo"])
    assert r.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    # Existing members are still served.
    assert c.beat("A", 1, tps(FOO, 0, 1, 2, 3)).error_code == ErrorCode.NONE
    assert c.join("A", ["foo"]).error_code == ErrorCode.NONE


def test_unreleased_and_fenced_instance_id() -> None:
    c = coordinator()
    c.join("A", ["foo"], instance_id="i1")
    r = c.join("A2", ["foo"], instance_id="i1")
    assert r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    # Another member id using the instance id on a regular heartbeat is fenced.
    assert c.beat("A2", 1, tps(FOO), instance_id="i1").error_code == ErrorCode.FENCED_INSTANCE_ID
    assert c.beat("A2", -2, instance_id="i1").error_code == ErrorCode.FENCED_INSTANCE_ID
    # Unknown instance id.
    assert c.beat("Z", 1, tps(FOO), instance_id="nope").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.beat("Z", -2, instance_id="nope").error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_runtime_level_errors_have_responses() -> None:
    for error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
        r = heartbeat_error_response(error)
        assert r.error_code == error and r.assignment is None and r.member_id is None


def test_error_codes_are_kafkas() -> None:
    assert ErrorCode.UNKNOWN_MEMBER_ID == 25
    assert ErrorCode.FENCED_MEMBER_EPOCH == 110
    assert ErrorCode.UNRELEASED_INSTANCE_ID == 111
    assert ErrorCode.UNSUPPORTED_ASSIGNOR == 112
    assert ErrorCode.STALE_MEMBER_EPOCH == 113
    assert ErrorCode.GROUP_MAX_SIZE_REACHED == 81
    assert ErrorCode.INVALID_REGULAR_EXPRESSION == 128
    assert ErrorCode.INVALID_REQUEST == 42
    assert ErrorCode.NOT_COORDINATOR == 16
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS == 14
    assert ErrorCode.GROUP_ID_NOT_FOUND == 69
    assert ErrorCode.FENCED_INSTANCE_ID == 82


def test_leave_dynamic() -> None:
    c = coordinator()
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    ge = c.group().group_epoch
    r = c.beat("B", -1)
    assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.NONE, "B", -1)
    assert "B" not in c.group().members and "B" not in c.group().target
    assert c.group().group_epoch == ge + 1
    # The last member leaving: the target epoch follows with timestamp 0 (no throttling next time).
    c.beat("A", -1)
    g = c.group()
    assert not g.members and g.group_epoch == g.assignment_epoch == ge + 2 and g.assignment_timestamp == 0
    assert g.state().value == "Empty"
    assert c.replayed() == c.state.snapshot()


def test_member_in_unknown_state_must_start_over() -> None:
    from dataclasses import replace as dc_replace

    from groupcoord.coordinator.groups.consumer.log_records import current_assignment_record
    from groupcoord.coordinator.groups.consumer.member import MemberState

    c = coordinator()
    c.join("A", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3))
    # A record written by a newer coordinator with a state this one does not know.
    rec = current_assignment_record("grp", c.group().members["A"])
    assert rec.value is not None
    c.state.replay(dc_replace(rec, value=dc_replace(rec.value, state=99)))
    assert c.group().members["A"].state == MemberState.UNKNOWN
    c.join("B", ["foo"])
    assert c.beat("A", 1, tps(FOO, 0, 1, 2, 3)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    r = c.beat("A", 1, [])
    assert r.error_code == ErrorCode.NONE and c.group().members["A"].state != MemberState.UNKNOWN


def test_non_consumer_records_are_ignored() -> None:
    from groupcoord.records import CoordinatorRecord, RecordType
    from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue

    c = coordinator()
    c.state.replay(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("grp", "foo", 0), OffsetCommitValue(5)))
    assert c.state.snapshot() == {}
