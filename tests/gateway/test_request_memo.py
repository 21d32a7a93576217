"""``RequestMemo`` (the at-once path's decoder) gives exactly what ``decode_request`` gives, and
``ResponseMemo`` (its encoder) exactly what ``encode_response`` gives."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.gateway import protocol
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import (
    RequestMemo,
    ResponseMemo,
    decode_request,
    encode_request,
    encode_response,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.schema import Message


def payload(key: int, version: int, correlation_id: int, client_id: str | None, body: Message) -> bytes:
    return encode_request(RequestHeader(key, version, correlation_id, client_id), body)[4:]


def test_the_memo_decodes_every_frame_as_decode_request_does() -> None:
    steady = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    frames = [
        payload(68, 1, 1, "c", steady),
        payload(68, 1, 2, "c", steady),  # the same but for the correlation id
        payload(68, 1, -7, "c", steady),
        payload(68, 1, 3, "other", steady),  # another client id
        payload(68, 1, 4, None, steady),
        payload(68, 0, 5, None, steady),  # another version
        payload(68, 0, 6, None, ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=4)),
        payload(12, 4, 6, None, HeartbeatRequest(group_id="g", generation_id=4, member_id="m")),  # another API
        payload(12, 4, 7, None, HeartbeatRequest(group_id="g", generation_id=4, member_id="m")),
        payload(68, 0, 8, None, ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=4)),
    ]
    memo = RequestMemo()
    for frame in frames:
        assert memo.decode(frame) == decode_request(frame)
        assert memo.decode(bytearray(frame)) == decode_request(frame)  # as the stream hands it over


def test_a_repeated_frame_shares_the_body_and_gets_its_own_header() -> None:
    steady = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    memo = RequestMemo()
    first, second = memo.decode(payload(68, 1, 1, "c", steady)), memo.decode(payload(68, 1, 2, "c", steady))
    assert second.body is first.body
    assert (first.header.correlation_id, second.header.correlation_id) == (1, 2)


def assigned(*partitions: int) -> ConsumerGroupHeartbeatResponseAssignment:
    return ConsumerGroupHeartbeatResponseAssignment(
        topic_partitions=[
            ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=uuid.UUID(int=7), partitions=list(partitions))
        ]
    )


def test_the_answer_memo_encodes_every_answer_as_encode_response_does() -> None:
    steady = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=4500)
    answers: list[tuple[int, int, int, Message]] = [
        (68, 1, 1, steady),
        (68, 1, 2, ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=4500)),
        (68, 1, -9, steady),
        (68, 0, 3, steady),  # another version
        (68, 1, 4, ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, heartbeat_interval_ms=4500)),
        (68, 1, 5, ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, assignment=assigned(1, 2))),
        (68, 1, 6, ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, assignment=assigned(1, 2))),
        (68, 1, 7, ConsumerGroupHeartbeatResponse(error_code=25, error_message="unknown member")),
        (68, 1, 8, ConsumerGroupHeartbeatResponse(error_code=25, error_message="unknown member")),
        (12, 4, 9, HeartbeatResponse()),  # another API
        (12, 4, 10, HeartbeatResponse()),
        (68, 1, 11, ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, unknown_tagged_fields={9: b"x"})),
    ]
    memo = ResponseMemo()
    for key, version, correlation_id, body in answers:
        assert memo.encode(key, version, correlation_id, body) == encode_response(key, version, correlation_id, body)


def test_a_repeated_answer_is_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[int] = []

    def counting(key: int, version: int, correlation_id: int, body: Message) -> bytes:
        encoded.append(correlation_id)
        return encode_response(key, version, correlation_id, body)

    monkeypatch.setattr(protocol, "encode_response", counting)
    memo = ResponseMemo()
    for correlation_id in (1, 2, 3):
        answer = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=4500)
        frame = memo.encode(68, 1, correlation_id, answer)
        assert frame == encode_response(68, 1, correlation_id, answer)
    assert encoded == [1]


def test_an_answer_with_a_nested_struct_is_encoded_each_time() -> None:
    # The same object, its assignment changed in place: equal to itself, yet other bytes.
    answer = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, assignment=assigned(1))
    memo = ResponseMemo()
    first = memo.encode(68, 1, 1, answer)
    assert answer.assignment is not None
    answer.assignment.topic_partitions[0].partitions.append(2)
    assert memo.encode(68, 1, 1, answer) != first
    assert memo.encode(68, 1, 1, answer) == encode_response(68, 1, 1, answer)


def test_only_a_routed_request_is_repeated_and_with_its_new_correlation_id() -> None:
    steady = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    memo = RequestMemo()
    first = memo.decode(payload(68, 1, 1, "c", steady))
    assert memo.repeated(payload(68, 1, 2, "c", steady)) is None  # decoded, but not taken by routing
    memo.routed(first)
    again = memo.repeated(payload(68, 1, 2, "c", steady))
    assert again is not None and again.body is first.body
    assert again == decode_request(payload(68, 1, 2, "c", steady))
    assert memo.repeated(payload(68, 1, 3, "other", steady)) is None  # another client id
    memo.decode(payload(68, 1, 4, "c", ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=4)))
    assert memo.repeated(payload(68, 1, 5, "c", steady)) is None  # no longer the last one decoded
    memo.routed(first)  # not the last one decoded: nothing to repeat
    assert memo.repeated(payload(68, 1, 5, "c", steady)) is None
