"""ConsumerGroupDescribe, group states, configuration, offset-commit checks, deletion."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import INT_MAX, ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    consumer_group_describe,
    delete_consumer_group,
    group_exists,
    is_group_empty,
    list_group_states,
    subscribed_topic_names,
    validate_offset_commit,
    validate_offset_fetch,
)
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.messages.offset_commit_columns import CommitColumns, OffsetCommitColumnsTopic
from groupcoord.coordinator.messages.schema import topic_id_string
from tests.groups.harness import Coordinator, image, topic, tps
from tests.messages import tid, wire_id

FOO = tid("foo")


def test_group_states() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"])
    assert c.group().state().value == "Stable"
    c.join("B", ["foo"])
    assert c.group().state().value == "Reconciling"  # A still owes foo-1
    c.beat("A", 1, tps(FOO, 0, 1))
    c.beat("A", 1, tps(FOO, 0))
    c.beat("B", 2, tps(FOO))
    assert c.group().state().value == "Stable"
    assert list_group_states(c.state) == [("grp", "Stable")]
    assert list_group_states(c.state, ["empty"]) == []
    c.beat("A", -1)
    c.beat("B", -1)
    assert list_group_states(c.state, ["Empty"]) == [("grp", "Empty")]


def test_describe() -> None:
    c = Coordinator(image(topic("foo", 2)))
    c.join("A", ["foo"], rack_id="r1", server_assignor="range")
    c.join("B", ["foo"], instance_id="b")
    resp = consumer_group_describe(c.state, ["grp", "nope"], c.metadata, c.config)
    g, missing = resp.groups
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND and missing.group_id == "nope"
    assert (g.group_id, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        "grp",
        "Reconciling",
        2,
        2,
        "range",
    )
    a, b = g.members
    assert (a.member_id, a.rack_id, a.member_epoch, a.subscribed_topic_names, a.client_id) == (
        "A",
        "r1",
        1,
        ["foo"],
        "client",
    )
    assert [(topic_id_string(tp.topic_id), tp.topic_name, tp.partitions) for tp in a.assignment.topic_partitions] == [
        (FOO, "foo", [0, 1])
    ]
    assert sum(len(tp.partitions) for tp in a.target_assignment.topic_partitions) == 1
    assert b.instance_id == "b" and b.member_type == 1


def test_accessors_for_offsets() -> None:
    c = Coordinator(image(topic("foo", 2), topic("bar", 1)))
    assert not group_exists(c.state, "grp") and is_group_empty(c.state, "grp")
    c.join("A", ["foo", "bar"])
    assert group_exists(c.state, "grp") and not is_group_empty(c.state, "grp")
    assert subscribed_topic_names(c.state, "grp") == frozenset({"foo", "bar"})


def test_kip1251_offset_commit_validation_uses_partition_assignment_epochs_for_older_epochs() -> None:
    c = Coordinator(image(topic("foo", 4)))
    c.join("A", ["foo"])  # A gets 0..3 at epoch 1
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3))  # revoking 2, 3
    ok = validate_offset_commit(c.state, "grp", "A", 1, [(FOO, 0), (FOO, 2)])
    # Partitions being revoked can still be committed: that is what a revoking consumer does.
    assert ok.error == ErrorCode.NONE and ok.partition_errors == {}
    c.beat("A", 1, tps(FOO, 0, 1))  # A moves to epoch 2, keeps 0 and 1 (assigned at 1)
    c.beat("B", 2, tps(FOO))  # B gets 2 and 3 at epoch 2
    # A lagging one epoch behind may commit what it held since then...
    assert validate_offset_commit(c.state, "grp", "A", 1, [(FOO, 0), (FOO, 1)]).error == ErrorCode.NONE
    # ...but not what moved to B: the whole commit is stale (KIP-1251).
    assert validate_offset_commit(c.state, "grp", "A", 1, [(FOO, 0), (FOO, 2)]).error == ErrorCode.STALE_MEMBER_EPOCH
    # At its current epoch a member's commit is not checked partition by partition (Kafka 4.4).
    assert validate_offset_commit(c.state, "grp", "A", 2, [(FOO, 2)]).error == ErrorCode.NONE
    # B's partitions were assigned at epoch 2: a commit claiming epoch 1 is stale.
    assert validate_offset_commit(c.state, "grp", "B", 1, [(FOO, 2)]).error == ErrorCode.STALE_MEMBER_EPOCH
    assert validate_offset_commit(c.state, "grp", "B", 3, [(FOO, 2)]).error == ErrorCode.STALE_MEMBER_EPOCH
    assert validate_offset_commit(c.state, "grp", "Z", 2, [(FOO, 2)]).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert validate_offset_commit(c.state, "nope", "A", 2).error == ErrorCode.GROUP_ID_NOT_FOUND
    # Admin commits (-1) only to empty groups.
    assert validate_offset_commit(c.state, "grp", "", -1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert validate_offset_fetch(c.state, "grp", "A", 2) == ErrorCode.NONE
    assert validate_offset_fetch(c.state, "grp", "A", 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert validate_offset_fetch(c.state, "grp", "Z", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert validate_offset_fetch(c.state, "grp", None, -1) == ErrorCode.NONE
    c.beat("A", -1)
    c.beat("B", -1)
    assert validate_offset_commit(c.state, "grp", "", -1).error == ErrorCode.NONE


def test_delete_group() -> None:
    c = Coordinator(image(topic("foo", 1)))
    c.join("A", ["foo"])
    assert delete_consumer_group(c.state, "grp").response == ErrorCode.NON_EMPTY_GROUP
    assert delete_consumer_group(c.state, "x").response == ErrorCode.GROUP_ID_NOT_FOUND
    c.beat("A", -1)
    result = delete_consumer_group(c.state, "grp")
    assert result.response == ErrorCode.NONE
    c.apply(result)
    assert not group_exists(c.state, "grp")
    assert c.replayed() == c.state.snapshot() == {}


def test_config_defaults_and_bounds() -> None:
    cfg = ConsumerGroupConfig()
    assert (cfg.session_timeout_ms, cfg.min_session_timeout_ms, cfg.max_session_timeout_ms) == (45000, 45000, 60000)
    assert (cfg.heartbeat_interval_ms, cfg.min_heartbeat_interval_ms, cfg.max_heartbeat_interval_ms) == (
        5000,
        5000,
        15000,
    )
    assert cfg.max_size == INT_MAX and cfg.assignors == ("uniform", "range") and cfg.default_assignor == "uniform"
    assert cfg.assignment_interval_ms == 1000 and cfg.regex_refresh_interval_ms == 600000
    with pytest.raises(ValueError):
        ConsumerGroupConfig(session_timeout_ms=30000)
    with pytest.raises(ValueError):
        ConsumerGroupConfig(heartbeat_interval_ms=20000)
    with pytest.raises(ValueError):
        ConsumerGroupConfig(assignors=("sticky",))
    with pytest.raises(ValueError):
        ConsumerGroupConfig(assignors=())
    with pytest.raises(ValueError):
        ConsumerGroupConfig(max_size=0)
    props = ConsumerGroupConfig.from_properties(
        {"group.consumer.assignors": "range, uniform", "group.consumer.max.size": "10", "unrelated": "x"}
    )
    assert props.assignors == ("range", "uniform") and props.max_size == 10


def test_assignor_choice_follows_members() -> None:
    c = Coordinator(image(topic("foo", 4)))
    c.join("A", ["foo"], server_assignor="range")
    c.join("B", ["foo"])
    c.join("C", ["foo"], server_assignor="uniform")
    # One vote each: the tie goes to the assignor configured first.
    assert consumer_group_describe(c.state, ["grp"], c.metadata, c.config).groups[0].assignor_name == "uniform"
    c.join("D", ["foo"], server_assignor="range")
    assert consumer_group_describe(c.state, ["grp"], c.metadata, c.config).groups[0].assignor_name == "range"


def test_a_commit_held_as_columns_is_validated_on_its_partitions_without_making_them() -> None:
    """The gateway hands commits over with their partitions as columns
    (``messages/offset_commit_columns``): the member's partitions are checked all the same."""
    c = Coordinator(image(topic("foo", 4)))
    c.join("A", ["foo"])
    c.join("B", ["foo"])
    c.beat("A", 1, tps(FOO, 0, 1, 2, 3))
    c.beat("A", 1, tps(FOO, 0, 1))  # A at epoch 2 keeps 0 and 1
    c.beat("B", 2, tps(FOO))  # B gets 2 and 3 at epoch 2
    group = c.state.group("grp")
    assert group is not None

    def commit(indexes: list[int]) -> tuple[ErrorCode, bool]:
        columns = CommitColumns(indexes, [7] * len(indexes), [-1] * len(indexes), [""] * len(indexes))
        topic = OffsetCommitColumnsTopic(name="foo", topic_id=wire_id(FOO), columns=columns)
        request = OffsetCommitRequest(group_id="grp", generation_id_or_member_epoch=1, member_id="A", topics=[topic])
        return group.validate_offset_commit(request, 10).error, topic.columns is not None

    assert commit([0, 1]) == (ErrorCode.NONE, True)
    assert commit([0, 2]) == (ErrorCode.STALE_MEMBER_EPOCH, True)
