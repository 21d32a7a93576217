"""OffsetCommit's column decoder and answer encoder (``gateway/commit_columns``) against the
generic codec: the same values from the same bytes, the same refusals of bad bytes, the same
answer frames."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.gateway.codec import CodecError, decode_struct, encode_struct
from groupcoord.coordinator.gateway.commit_columns import decode_offset_commit
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.limits import count_elements
from groupcoord.coordinator.gateway.protocol import decode_request, encode_request, encode_response
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.offset_commit_columns import (
    AnswerColumns,
    OffsetCommitColumnsAnswerTopic,
    OffsetCommitColumnsTopic,
    request_columns,
)
from groupcoord.coordinator.observability.gateway import error_counts

VERSIONS = st.integers(2, 10)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
PLAIN_METADATA = st.sampled_from([None, ""])
ANY_METADATA = st.one_of(PLAIN_METADATA, st.text(max_size=5), st.text(min_size=126, max_size=130))
TAGS = st.dictionaries(st.integers(0, 300), st.binary(max_size=3), max_size=2)


def flexible(version: int) -> bool:
    return version >= 8


def partitions(metadata: st.SearchStrategy[str | None], tags: bool) -> st.SearchStrategy[OffsetCommitRequestPartition]:
    return st.builds(
        OffsetCommitRequestPartition,
        partition_index=INT32,
        committed_offset=INT64,
        committed_leader_epoch=INT32,
        committed_metadata=metadata,
        unknown_tagged_fields=TAGS if tags else st.just({}),
    )


@st.composite
def requests(draw: st.DrawFn, plain: bool) -> tuple[int, OffsetCommitRequest]:
    """A request as a client could send it at a version (fields of other versions at their
    defaults); ``plain``: every partition of the shape the column decoder reads."""
    version = draw(VERSIONS)
    by_id = version >= 10
    topic = st.builds(
        OffsetCommitRequestTopic,
        name=st.just("") if by_id else st.text(max_size=8),
        topic_id=st.uuids() if by_id else st.just(uuid.UUID(int=0)),
        partitions=st.lists(partitions(PLAIN_METADATA if plain else ANY_METADATA, not plain), max_size=12),
    )
    request = OffsetCommitRequest(
        group_id=draw(st.text(max_size=8)),
        generation_id_or_member_epoch=draw(INT32),
        member_id=draw(st.text(max_size=8)),
        group_instance_id=draw(st.one_of(st.none(), st.text(max_size=8))) if version >= 7 else None,
        retention_time_ms=draw(INT64) if version <= 4 else -1,
        topics=draw(st.lists(topic, max_size=3)),
    )
    if not version >= 6:
        for t in request.topics:
            for p in t.partitions:
                p.committed_leader_epoch = -1
    if not flexible(version):
        for t in request.topics:
            for p in t.partitions:
                p.unknown_tagged_fields = {}
    return version, request


def body(version: int, request: OffsetCommitRequest) -> bytes:
    return bytes(encode_struct(request, version, flexible(version)))


def generic(version: int, data: bytes) -> OffsetCommitRequest | CodecError:
    try:
        return decode_struct(OffsetCommitRequest, data, version, flexible(version))
    except CodecError as exc:
        return exc


@settings(max_examples=100, deadline=None)
@given(requests(plain=True))
def test_plain_commits_decode_as_columns_to_the_generic_values(drawn: tuple[int, OffsetCommitRequest]) -> None:
    version, request = drawn
    data = body(version, request)
    fast = decode_offset_commit(memoryview(data), version)
    assert fast is not None  # the shape it exists for is read here, not left to the codec
    assert all(request_columns(t) is not None for t in fast.topics)
    assert count_elements(fast, 10**9) == count_elements(request, 10**9)
    assert fast == generic(version, data) == request
    # Read as objects, the columns give the codec's objects (and are then gone).
    assert [t.partitions for t in fast.topics] == [t.partitions for t in request.topics]
    assert all(request_columns(t) is None for t in fast.topics)


@settings(max_examples=100, deadline=None)
@given(requests(plain=False))
def test_any_commit_decodes_to_the_generic_values(drawn: tuple[int, OffsetCommitRequest]) -> None:
    version, request = drawn
    data = body(version, request)
    fast = decode_offset_commit(memoryview(data), version)
    if fast is not None:
        assert fast == request
    header = RequestHeader(8, version, 7, "c")
    assert decode_request(encode_request(header, request)[4:]).body == request


@settings(max_examples=200, deadline=None)
@given(requests(plain=True), st.data())
def test_damaged_commits_are_refused_or_read_as_the_codec_does(
    drawn: tuple[int, OffsetCommitRequest], data: st.DataObject
) -> None:
    version, request = drawn
    raw = bytearray(body(version, request))
    for _ in range(data.draw(st.integers(1, 3))):
        action = data.draw(st.sampled_from(["flip", "cut", "append", "insert"]))
        at = data.draw(st.integers(0, len(raw)))
        byte = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFF]))
        if action == "flip" and at < len(raw):
            raw[at] = byte
        elif action == "cut":
            del raw[at:]
        elif action == "append":
            raw.append(byte)
        else:
            raw.insert(at, byte)
    damaged = bytes(raw)
    expected = generic(version, damaged)
    fast = decode_offset_commit(memoryview(damaged), version)
    if fast is not None:
        assert not isinstance(expected, CodecError), expected
        assert fast == expected
    # Through the gateway's decoder: the codec's value, or its very refusal.
    frame = encode_request(RequestHeader(8, version, 7, "c"), OffsetCommitRequest())
    header_size = len(frame) - 4 - len(body(version, OffsetCommitRequest()))
    payload = frame[4 : 4 + header_size] + damaged
    try:
        got: OffsetCommitRequest | CodecError = decode_request(payload).body  # type: ignore[assignment]
    except CodecError as exc:
        got = exc
    if isinstance(expected, CodecError):
        assert isinstance(got, CodecError) and str(got) == str(expected)
    else:
        assert got == expected


def test_a_padded_varint_is_refused_as_the_codec_refuses_it() -> None:
    request = OffsetCommitRequest(
        group_id="g",
        topics=[OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(partition_index=0)])],
    )
    data = bytearray(body(9, request))
    # The partition's metadata length, 1 (empty), spelled in two bytes: 0x81 0x00.
    at = len(data) - 4  # metadata length, the partition's tags, the topic's, the request's
    assert data[at] == 1
    data[at : at + 1] = b"\x81\x00"
    assert decode_offset_commit(memoryview(bytes(data)), 9) is None
    frame = encode_request(RequestHeader(8, 9, 7, "c"), OffsetCommitRequest())
    header = frame[4 : len(frame) - len(body(9, OffsetCommitRequest()))]
    try:
        decode_request(header + bytes(data))
    except CodecError as exc:
        assert "non-minimal varint" in str(exc)
    else:
        raise AssertionError("a padded varint was accepted")


@settings(max_examples=100, deadline=None)
@given(
    VERSIONS,
    st.lists(
        st.tuples(st.text(max_size=6), st.uuids(), st.lists(st.tuples(INT32, st.integers(-1, 130)), max_size=12)),
        max_size=3,
    ),
    st.integers(0, 1000),
    st.booleans(),
)
def test_column_answers_encode_as_the_codec_encodes_them(
    version: int, topics: list[tuple[str, uuid.UUID, list[tuple[int, int]]]], throttle: int, one_code: bool
) -> None:
    by_id = version >= 10

    def columns(parts: list[tuple[int, int]]) -> AnswerColumns:
        codes = [parts[0][1]] * len(parts) if one_code and parts else [c for _, c in parts]
        return AnswerColumns([i for i, _ in parts], codes)

    def plain(parts: list[tuple[int, int]]) -> list[OffsetCommitResponsePartition]:
        cols = columns(parts)
        return [OffsetCommitResponsePartition(partition_index=i, error_code=c) for i, c in zip(*cols, strict=True)]

    name = (lambda n: "") if by_id else (lambda n: n)
    ident = (lambda u: u) if by_id else (lambda u: uuid.UUID(int=0))
    as_columns = OffsetCommitResponse(
        throttle_time_ms=throttle if version >= 3 else 0,
        topics=[
            OffsetCommitColumnsAnswerTopic(name=name(n), topic_id=ident(u), columns=columns(parts))
            for n, u, parts in topics
        ],
    )
    as_objects = OffsetCommitResponse(
        throttle_time_ms=throttle if version >= 3 else 0,
        topics=[
            OffsetCommitResponseTopic(name=name(n), topic_id=ident(u), partitions=plain(parts))
            for n, u, parts in topics
        ],
    )
    counted: dict[int, int] = {}
    expected: dict[int, int] = {}
    error_counts(as_columns, counted)
    error_counts(as_objects, expected)
    assert counted == expected
    assert encode_response(8, version, 42, as_columns) == encode_response(8, version, 42, as_objects)
    assert as_columns == as_objects


def test_columns_are_dropped_once_the_partitions_are_read() -> None:
    request = decode_offset_commit(
        memoryview(
            body(
                9,
                OffsetCommitRequest(
                    topics=[
                        OffsetCommitRequestTopic(
                            name="t", partitions=[OffsetCommitRequestPartition(partition_index=3, committed_offset=9)]
                        )
                    ]
                ),
            )
        ),
        9,
    )
    assert request is not None
    (topic,) = request.topics
    assert isinstance(topic, OffsetCommitColumnsTopic) and topic.columns is not None
    topic.partitions[0].committed_offset = 10
    assert topic.columns is None
    assert topic.partitions[0].committed_offset == 10
