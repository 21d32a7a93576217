"""Frame splitting, header peeking and Produce acks parsing."""

from __future__ import annotations

import struct

import pytest

from groupcoord.coordinator.gateway.codec import CodecError
from groupcoord.coordinator.gateway.framing import (
    FrameError,
    FrameSplitter,
    RequestHeader,
    decode_request_header,
    encode_request_header,
    frame,
    peek_request,
    produce_acks,
)


def test_frames_split_across_arbitrary_chunks() -> None:
    payloads = [b"", b"a", b"hello" * 100, bytes(range(256))]
    stream = b"".join(frame(p) for p in payloads)
    for step in (1, 3, 7, len(stream)):
        splitter = FrameSplitter(max_frame_bytes=10_000)
        got: list[bytes] = []
        for i in range(0, len(stream), step):
            got.extend(splitter.feed(stream[i : i + step]))
        assert got == payloads
        assert splitter.pending == 0


def test_partial_frame_waits() -> None:
    splitter = FrameSplitter(max_frame_bytes=100)
    assert splitter.feed(struct.pack(">i", 10) + b"12345") == []
    assert splitter.feed(b"67890" + b"\x00") == [b"1234567890"]
    assert splitter.pending == 1


def test_oversized_and_negative_lengths() -> None:
    with pytest.raises(FrameError, match="exceeds"):
        FrameSplitter(max_frame_bytes=100).feed(struct.pack(">i", 101))
    with pytest.raises(FrameError, match="negative"):
        FrameSplitter(max_frame_bytes=100).feed(struct.pack(">i", -5))
    assert FrameSplitter(max_frame_bytes=100).feed(frame(b"x" * 100)) == [b"x" * 100]


def test_peek_needs_a_whole_fixed_header() -> None:
    with pytest.raises(FrameError):
        peek_request(b"\x00\x12\x00")
    assert peek_request(struct.pack(">hhi", 18, 3, -7)) == (18, 3, -7)


@pytest.mark.parametrize("header_version", [0, 1, 2])
@pytest.mark.parametrize("client_id", [None, "", "cli-é"])
def test_request_header_round_trip(header_version: int, client_id: str | None) -> None:
    header = RequestHeader(3, 12, 42, client_id if header_version else None)
    if header_version == 2:
        header.unknown_tagged_fields[5] = b"zz"
    out = bytearray()
    encode_request_header(header, header_version, out)
    decoded, pos = decode_request_header(bytes(out) + b"BODY", header_version)
    assert decoded == header
    assert pos == len(out)


def test_truncated_client_id() -> None:
    with pytest.raises(CodecError):
        decode_request_header(struct.pack(">hhih", 3, 1, 1, 10) + b"abc", 1)


def _kafka_python_produce(version: int, acks: int, transactional_id: str | None) -> bytes:
    from kafka.protocol.producer import ProduceRequest

    fields = {"acks": acks, "timeout_ms": 1000, "topic_data": []}
    if version >= 3:
        fields["transactional_id"] = transactional_id
    message = ProduceRequest[version](**fields)
    message.with_header(correlation_id=1, client_id="p")
    return bytes(message.encode(header=True, framed=False))


@pytest.mark.parametrize("version", range(3, 12))
@pytest.mark.parametrize("acks", [0, 1, -1])
@pytest.mark.parametrize("transactional_id", [None, "txn-é"])
def test_produce_acks_against_kafka_python(version: int, acks: int, transactional_id: str | None) -> None:
    pytest.importorskip("kafka.protocol.producer")
    assert produce_acks(_kafka_python_produce(version, acks, transactional_id), version) == acks
