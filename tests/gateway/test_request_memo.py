"""``RequestMemo`` (the at-once path's decoder) gives exactly what ``decode_request`` gives."""

from __future__ import annotations

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import RequestMemo, decode_request, encode_request
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest
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
