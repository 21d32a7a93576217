"""Group read answers are bounded before they are built (review S3: one ConsumerGroupDescribe
naming a large group 100 times made the process build gigabytes), and duplicates are answered
once each, from one computation."""

from __future__ import annotations

import asyncio
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.protocol import encode_response
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups.consumer.describe import consumer_group_describe, describe_size
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeResponse
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsResponse
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchResponse
from groupcoord.coordinator.offsets.handlers import fetch_offsets, fetch_size
from groupcoord.coordinator.runtime.shard import ShardStatus
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests.messages import (
    cg_request,
    client,
    commit_partition,
    commit_request,
    commit_topic,
    fetch_group,
    join_protocol,
    join_request,
    tid,
)

BIG = 32_767  # the longest string the protocol carries
TOPIC = TopicImage(name="orders", topic_id=tid("orders"), partitions=2)


class _Shard:
    """One shard over a state built by the real handlers; counts the reads it serves."""

    status = ShardStatus.ACTIVE

    def __init__(self, state: GroupCoordinatorState) -> None:
        self.state = state
        self.reads = 0

    def read(self, fn: Any) -> Any:
        self.reads += 1
        return fn(self.state)

    read_live = read

    async def write(self, op: Any) -> Any:
        result = op(self.state, 0)
        for record in result.records:
            self.state.replay(record)
        return result.response


class _Runtime:
    partitions = 1

    def __init__(self, shard: _Shard) -> None:
        self._shard = shard

    def shard(self, partition: int) -> _Shard:
        return self._shard


def _image() -> TopicsImage:
    return TopicsImage.of([TOPIC])


def _service(state: GroupCoordinatorState, limit: int) -> tuple[GroupCoordinatorService, _Shard]:
    shard = _Shard(state)
    handlers = GroupCoordinatorShard(metadata=_image)
    return GroupCoordinatorService(_Runtime(shard), handlers, limit), shard  # type: ignore[arg-type]


def _apply(state: GroupCoordinatorState, result: Any) -> Any:
    for record in result.records:
        state.replay(record)
    return result.response


def _large_consumer_group(members: int) -> GroupCoordinatorState:
    """S3's group, scaled: members with 32 KB member, instance and rack ids."""
    state = GroupCoordinatorState()
    handlers = GroupCoordinatorShard(metadata=_image)
    for i in range(members):
        tag = f"{i:04d}"
        request = cg_request(
            "big",
            member_id=(tag * BIG)[:BIG],
            instance_id=("i" + tag * BIG)[:BIG],
            rack_id=("r" + tag * BIG)[:BIG],
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=["orders"],
            topic_partitions=[],
        )
        answer = _apply(state, handlers.consumer_group_heartbeat(state, request, i, client(1)))
        assert answer.error_code == 0, answer.error_message
    return state


def test_describe_size_bounds_the_encoded_answer() -> None:
    state = _large_consumer_group(3)
    described = consumer_group_describe(state.consumer, ["big"], _image())
    encoded = len(encode_response(69, 0, 1, described))
    assert encoded <= describe_size(state.consumer, "big") < 2 * encoded


def test_a_group_named_100_times_is_described_once_and_the_answer_stays_under_the_cap() -> None:
    state = _large_consumer_group(20)  # about 2 MB described
    service, shard = _service(state, limit=8 * 1024 * 1024)
    # Named twice: both entries get the one description (built once).
    twice = asyncio.run(service.consumer_group_describe(["big", "big"]))
    assert [len(a.members) for a in twice] == [20, 20] and twice[0] is twice[1]
    assert shard.reads == 2  # its size, then its description
    # Named 100 times (200 MB sent): every entry refused, with a message saying why.
    answer = asyncio.run(service.consumer_group_describe(["big"] * 100 + ["unknown"]))
    assert len(answer) == 101
    assert {a.error_code for a in answer[:100]} == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert all(a.group_id == "big" and "max_group_response_bytes" in (a.error_message or "") for a in answer[:100])
    assert answer[-1].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    encoded = encode_response(69, 0, 1, ConsumerGroupDescribeResponse(groups=answer))
    assert len(encoded) <= 64 * 1024


def test_a_group_larger_than_the_cap_is_refused_without_being_built() -> None:
    state = _large_consumer_group(20)
    service, shard = _service(state, limit=1024 * 1024)
    (answer,) = asyncio.run(service.consumer_group_describe(["big"]))
    assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and not answer.members
    assert shard.reads == 1  # the size only


def _classic_group(state: GroupCoordinatorState, metadata_bytes: int) -> None:
    handlers = GroupCoordinatorShard()
    request = join_request(
        "classic", 10_000, protocol_type="consumer", protocols=[join_protocol("range", b"x" * metadata_bytes)]
    )
    _apply(state, handlers.join_group(state, request, ("join", 1), 0, client(3)))


def test_describe_groups_answers_duplicates_from_one_computation_within_the_cap() -> None:
    state = GroupCoordinatorState()
    _classic_group(state, 900_000)
    service, shard = _service(state, limit=2 * 1024 * 1024)
    assert [a.error_code for a in asyncio.run(service.describe_groups(["classic"] * 2, 5))] == [0, 0]
    assert shard.reads == 2
    answer = asyncio.run(service.describe_groups(["classic"] * 10, 5))
    assert {a.error_code for a in answer} == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert len(encode_response(15, 5, 1, DescribeGroupsResponse(groups=answer))) <= 64 * 1024


def _offsets_with_metadata(partitions: int, metadata: int) -> GroupCoordinatorState:
    state = GroupCoordinatorState()
    handlers = GroupCoordinatorShard(metadata=_image)
    request = commit_request(
        "offsets",
        [commit_topic("orders", [commit_partition(p, p, metadata="m" * metadata) for p in range(partitions)])],
    )
    _apply(state, handlers.commit_offsets(state, request, 0, client(8)))
    return state


def test_offset_fetch_size_bounds_the_encoded_answer() -> None:
    state = _offsets_with_metadata(50, 4000)
    group = fetch_group("offsets", None)
    answer = fetch_offsets(state.offsets, group)
    encoded = len(encode_response(9, 8, 1, OffsetFetchResponse(groups=[answer])))
    assert encoded <= fetch_size(state.offsets, group) < 2 * encoded


def test_offset_fetch_of_many_identical_groups_stays_under_the_cap() -> None:
    state = _offsets_with_metadata(250, 4000)  # about 1 MB of metadata
    service, shard = _service(state, limit=4 * 1024 * 1024)
    three = asyncio.run(service.fetch_offsets([fetch_group("offsets", None)] * 3))
    assert [len(a.topics[0].partitions) for a in three] == [250] * 3 and shard.reads == 1
    answer = asyncio.run(service.fetch_offsets([fetch_group("offsets", None)] * 50))
    assert len(answer) == 50 and {a.error_code for a in answer} == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert len(encode_response(9, 8, 1, OffsetFetchResponse(groups=answer))) <= 64 * 1024


def test_delete_groups_deletes_a_duplicate_once_and_answers_both_entries() -> None:
    state = _offsets_with_metadata(2, 0)
    service, _ = _service(state, limit=1024 * 1024)
    seen: list[list[str]] = []
    original = service.handlers.delete_groups

    def spy(state: GroupCoordinatorState, ids: list[str], now: int) -> Any:
        seen.append(list(ids))
        return original(state, ids, now)

    object.__setattr__(service.handlers, "delete_groups", spy)
    answer = asyncio.run(service.delete_groups(["offsets", "offsets", "none"]))
    assert answer == [("offsets", 0), ("offsets", 0), ("none", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert seen == [["offsets", "none"]]
