"""Pure offset logic: commit, fetch, delete, expiration, topic deletion."""

from __future__ import annotations

from typing import TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.offsets.handlers import CommitVerdict, commit_offsets, fetch_offsets
from groupcoord.coordinator.offsets.retention import (
    GroupRetentionView,
    all_offsets_expire,
    delete_group_offsets,
    delete_offsets,
    expire_offsets,
    offsets_of_deleted_topic,
)
from groupcoord.coordinator.offsets.state import OffsetsState
from groupcoord.coordinator.runtime.api import Park, Result
from tests.answers import answered
from tests.messages import (
    commit_partition,
    commit_request,
    commit_topic,
    delete_request,
    delete_topic,
    fetch_group,
    fetch_topic,
    tid,
)

CONFIG = OffsetsConfig()
T = TypeVar("T")
DAY = 24 * 3600 * 1000


def apply(state: OffsetsState, result: Result[T]) -> T | Park:
    for r in result.records:
        state.replay(r)
    return result.response


def commit(
    group: str,
    topic: str,
    offsets: dict[int, int],
    metadata: str = "",
    topic_id: str | None = None,
    retention: int = -1,
) -> OffsetCommitRequest:
    return commit_request(
        group,
        [commit_topic(topic, [commit_partition(p, o, 3, metadata) for p, o in offsets.items()], topic_id)],
        retention_time_ms=retention,
    )


def codes(response: OffsetCommitResponse | Park) -> list[int]:
    return [p.error_code for t in answered(response).topics for p in t.partitions]


def test_commit_writes_one_record_per_partition_and_fetch_reads_them() -> None:
    state = OffsetsState()
    result = commit_offsets(state, commit("g", "t", {0: 10, 1: 20}, "m", tid("t")), 1000, CONFIG)
    assert len(result.records) == 2 and state.offsets == {}  # the handler does not mutate
    response = apply(state, result)
    assert codes(response) == [0, 0]
    v = state.get("g", "t", 0)
    assert v is not None and (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.topic_id) == (
        10,
        3,
        "m",
        1000,
        tid("t"),
    )
    everything = fetch_offsets(state, fetch_group("g", None))
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in everything.topics] == [
        ("t", [(0, 10), (1, 20)])
    ]
    some = fetch_offsets(state, fetch_group("g", [fetch_topic("t", [1, 5]), fetch_topic("u", [0])]))
    assert [[(p.partition_index, p.committed_offset) for p in t.partitions] for t in some.topics] == [
        [(1, 20), (5, -1)],
        [(0, -1)],
    ]


def test_invalid_requests_write_nothing() -> None:
    state = OffsetsState()
    r = commit_offsets(state, commit("", "t", {0: 1}), 0, CONFIG)
    assert r.records == [] and codes(r.response) == [ErrorCode.INVALID_GROUP_ID]
    r = commit_offsets(state, commit("g", "t", {0: 1}), 0, CONFIG, CommitVerdict(ErrorCode.STALE_MEMBER_EPOCH))
    assert r.records == [] and codes(r.response) == [ErrorCode.STALE_MEMBER_EPOCH]
    big = commit_request(
        "g",
        [
            commit_topic(
                "t",
                [commit_partition(0, 1, -1, "x" * 4097), commit_partition(1, 1, -1, "ok")],
            )
        ],
    )
    r = commit_offsets(state, big, 0, CONFIG)
    assert r.records == []
    assert codes(r.response) == [ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE]
    # Kafka measures String.length(): UTF-16 code units.
    assert len(commit_offsets(state, commit("g", "t", {0: 1}, "é" * 4096), 0, CONFIG).records) == 1
    assert commit_offsets(state, commit("g", "t", {0: 1}, "\U0001f600" * 2049), 0, CONFIG).records == []


def test_expiration_respects_subscriptions_explicit_expiry_and_empty_since() -> None:
    state = OffsetsState()
    apply(state, commit_offsets(state, commit("g", "kept", {0: 1}), 0, CONFIG))
    apply(state, commit_offsets(state, commit("g", "old", {0: 1, 1: 2}), 0, CONFIG))
    apply(state, commit_offsets(state, commit("g", "explicit", {0: 1}, retention=1000), 0, CONFIG))
    view = GroupRetentionView(subscribed_topics=frozenset({"kept"}), is_empty=False, managed=True)
    assert [(r.key.topic, r.key.partition) for r in expire_offsets(state, "g", view, 999, 7 * DAY)] == []
    assert [(r.key.topic, r.key.partition) for r in expire_offsets(state, "g", view, 1000, 7 * DAY)] == [
        ("explicit", 0)
    ]
    expiring = expire_offsets(state, "g", view, 7 * DAY, 7 * DAY)
    assert [(r.key.topic, r.key.partition) for r in expiring] == [("explicit", 0), ("old", 0), ("old", 1)]
    assert all(r.value is None for r in expiring)
    assert not all_offsets_expire(state, "g", expiring)
    # A classic group that became empty on day 6 keeps its offsets until day 13.
    empty = GroupRetentionView(empty_since_ms=6 * DAY, managed=True)
    assert expire_offsets(state, "g", empty, 12 * DAY, 7 * DAY) == [
        expire_offsets(state, "g", empty, 12 * DAY, 7 * DAY)[0]
    ]
    assert len(expire_offsets(state, "g", empty, 13 * DAY, 7 * DAY)) == 4


def test_offset_delete() -> None:
    state = OffsetsState()
    apply(state, commit_offsets(state, commit("g", "a", {0: 1, 1: 1}), 0, CONFIG))
    apply(state, commit_offsets(state, commit("g", "b", {0: 1}), 0, CONFIG))
    missing = delete_offsets(state, delete_request("nope", [delete_topic("a", [0])]), None)
    assert answered(missing.response).error_code == ErrorCode.GROUP_ID_NOT_FOUND and missing.records == []
    view = GroupRetentionView(subscribed_topics=frozenset({"b"}), is_empty=False, managed=True)
    r = delete_offsets(
        state,
        delete_request("g", [delete_topic("a", [0, 7]), delete_topic("b", [0])]),
        view,
    )
    deleted = answered(r.response)
    assert deleted.error_code == 0
    assert [[(p.partition_index, p.error_code) for p in t.partitions] for t in deleted.topics] == [
        [(0, 0), (7, 0)],
        [(0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)],
    ]
    apply(state, r)
    assert state.get("g", "a", 0) is None and state.get("g", "a", 1) is not None and state.get("g", "b", 0) is not None


def test_topic_deletion_removes_only_that_incarnation() -> None:
    state = OffsetsState()
    apply(state, commit_offsets(state, commit("g1", "t", {0: 1}, topic_id=tid("old t")), 0, CONFIG))
    apply(state, commit_offsets(state, commit("g2", "t", {0: 1}, topic_id=tid("new t")), 0, CONFIG))
    apply(state, commit_offsets(state, commit("g3", "t", {0: 1}), 0, CONFIG))
    gone = offsets_of_deleted_topic(state, "t", tid("old t"))
    assert sorted(r.key.group for r in gone) == ["g1", "g3"]
    for r in gone:
        state.replay(r)
    assert state.has_group("g2") and not state.has_group("g1")
    assert [r.key.topic for r in delete_group_offsets(state, "g2")] == ["t"]
