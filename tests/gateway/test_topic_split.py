"""Splitting forwarded requests that name the log topic: its slots get 29, the rest is forwarded,
and the answers are merged in request order (groupcoord/coordinator/gateway/topic_split.py)."""

from __future__ import annotations

import uuid

from groupcoord.coordinator.gateway import topic_split
from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from groupcoord.coordinator.messages import (
    delete_records,
    delete_topics,
    describe_topic_partitions,
    fetch,
    list_offsets,
    offset_for_leader_epoch,
    produce,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message

LOG, LOG_ID = "__gc_log", uuid.uuid4()


def protected(name: str, topic_id: uuid.UUID) -> bool:
    return name == LOG or topic_id == LOG_ID


def request_payload(key: int, version: int, body: Message) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_request_header(RequestHeader(key, version, 42, "client"), 2 if flexible else 1, out)
    encode_struct(body, version, flexible, out)
    return bytes(out)


def response_payload(version: int, body: Message) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_response_header(42, 1 if flexible else 0, out)
    encode_struct(body, version, flexible, out)
    return bytes(out)


def forwarded_body(s: topic_split.Split) -> Message:
    payload = topic_split.encode_rest(s)
    version = s.header.api_version
    flexible = version in s.api.request.FLEXIBLE
    header, pos = decode_request_header(payload, 2 if flexible else 1)
    assert (header.correlation_id, header.client_id) == (42, "client")
    return decode_struct(s.api.request, memoryview(payload)[pos:], version, flexible)


def answer(cls: type[Message], version: int, payload: bytes) -> Message:
    flexible = version in cls.FLEXIBLE
    correlation_id, pos = decode_response_header(payload, 1 if flexible else 0)
    assert correlation_id == 42
    return decode_struct(cls, memoryview(payload)[pos:], version, flexible)


def offsets_topic(name: str) -> list_offsets.ListOffsetsTopic:
    return list_offsets.ListOffsetsTopic(
        name=name, partitions=[list_offsets.ListOffsetsPartition(partition_index=p, timestamp=-1) for p in (0, 1)]
    )


def test_list_offsets_log_topic_slots_refused_rest_forwarded_in_order() -> None:
    body = list_offsets.ListOffsetsRequest(topics=[offsets_topic("a"), offsets_topic(LOG), offsets_topic("b")])
    s = topic_split.split(request_payload(2, 7, body), protected)
    assert s is not None and set(s.refused) == {1}
    rest = forwarded_body(s)
    assert isinstance(rest, list_offsets.ListOffsetsRequest)
    assert [t.name for t in rest.topics] == ["a", "b"]
    # The cluster answers in its own order; the merged answer follows the request's.
    cluster = list_offsets.ListOffsetsResponse(
        throttle_time_ms=5,
        topics=[
            list_offsets.ListOffsetsTopicResponse(
                name=n, partitions=[list_offsets.ListOffsetsPartitionResponse(partition_index=0, offset=7)]
            )
            for n in ("b", "a")
        ],
    )
    merged = answer(list_offsets.ListOffsetsResponse, 7, topic_split.merge(s, response_payload(7, cluster)))
    assert isinstance(merged, list_offsets.ListOffsetsResponse)
    assert merged.throttle_time_ms == 5
    assert [t.name for t in merged.topics] == ["a", LOG, "b"]
    assert [(p.partition_index, p.error_code, p.offset) for p in merged.topics[1].partitions] == [
        (0, 29, -1),
        (1, 29, -1),
    ]
    assert merged.topics[0].partitions[0].error_code == 0


def produce_topic(name: str = "", topic_id: uuid.UUID = ZERO_UUID) -> produce.ProduceRequestTopicProduceData:
    return produce.ProduceRequestTopicProduceData(
        name=name,
        topic_id=topic_id,
        partition_data=[produce.ProduceRequestPartitionProduceData(index=0, records=b"\x00" * 70)],
    )


def test_produce_only_to_the_log_topic_is_answered_here_by_name_and_by_id() -> None:
    for version, topic in ((9, produce_topic(LOG)), (13, produce_topic(topic_id=LOG_ID))):
        body = produce.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[topic])
        s = topic_split.split(request_payload(0, version, body), protected)
        assert s is not None and s.rest is None
        merged = answer(produce.ProduceResponse, version, topic_split.merge(s, None))
        assert isinstance(merged, produce.ProduceResponse)
        (refused,) = merged.responses
        assert (refused.name, refused.topic_id) == (topic.name, topic.topic_id)
        assert [(p.index, p.error_code) for p in refused.partition_responses] == [(0, 29)]


def test_a_mixed_produce_forwards_the_other_topics_records_untouched() -> None:
    other = produce.ProduceRequestTopicProduceData(
        name="orders", partition_data=[produce.ProduceRequestPartitionProduceData(index=3, records=b"batch")]
    )
    body = produce.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[produce_topic(LOG), other])
    s = topic_split.split(request_payload(0, 11, body), protected)
    assert s is not None
    rest = forwarded_body(s)
    assert isinstance(rest, produce.ProduceRequest) and rest.topic_data == [other]


def test_fetch_is_always_forwarded_and_forgets_nothing_of_the_log_topic() -> None:
    body = fetch.FetchRequest(
        session_id=9,
        session_epoch=3,
        topics=[fetch.FetchTopic(topic_id=LOG_ID, partitions=[fetch.FetchPartition(partition=0)])],
        forgotten_topics_data=[
            fetch.FetchRequestForgottenTopic(topic_id=LOG_ID, partitions=[1]),
            fetch.FetchRequestForgottenTopic(topic_id=uuid.uuid4(), partitions=[0]),
        ],
    )
    s = topic_split.split(request_payload(1, 15, body), protected)
    assert s is not None
    rest = forwarded_body(s)
    assert isinstance(rest, fetch.FetchRequest)
    assert rest.topics == [] and [t.topic_id for t in rest.forgotten_topics_data] == [
        body.forgotten_topics_data[1].topic_id
    ]
    cluster = fetch.FetchResponse(session_id=9)
    merged = answer(fetch.FetchResponse, 15, topic_split.merge(s, response_payload(15, cluster)))
    assert isinstance(merged, fetch.FetchResponse) and merged.session_id == 9
    (refused,) = merged.responses
    assert refused.topic_id == LOG_ID
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in refused.partitions] == [(0, 29, -1)]


def test_delete_topics_by_name_before_v6_and_by_id_after() -> None:
    s = topic_split.split(request_payload(20, 5, delete_topics.DeleteTopicsRequest(topic_names=[LOG, "x"])), protected)
    assert s is not None
    rest = forwarded_body(s)
    assert isinstance(rest, delete_topics.DeleteTopicsRequest) and rest.topic_names == ["x"]
    body6 = delete_topics.DeleteTopicsRequest(
        topics=[delete_topics.DeleteTopicsRequestDeleteTopicState(topic_id=LOG_ID)]
    )
    s6 = topic_split.split(request_payload(20, 6, body6), protected)
    assert s6 is not None and s6.rest is None
    merged = answer(delete_topics.DeleteTopicsResponse, 6, topic_split.merge(s6, None))
    assert isinstance(merged, delete_topics.DeleteTopicsResponse)
    assert [(r.topic_id, r.error_code) for r in merged.responses] == [(LOG_ID, 29)]


def test_apis_and_versions_not_split_here_are_left_to_the_caller() -> None:
    # AddPartitionsToTxn (24) is not split; Produce v2 is older than Kafka 4 knows.
    assert topic_split.split(request_payload(24, 3, list_offsets.ListOffsetsRequest()), protected) is None
    payload = bytearray(request_payload(0, 9, produce.ProduceRequest(topic_data=[produce_topic(LOG)])))
    payload[2:4] = (2).to_bytes(2, "big")
    assert topic_split.split(bytes(payload), protected) is None


def test_describe_topic_partitions_answers_never_show_the_log_topic() -> None:
    dtp = describe_topic_partitions
    # All topics (none named): forwarded whole, the log topic taken out of the answer.
    s = topic_split.split(request_payload(75, 0, dtp.DescribeTopicPartitionsRequest()), protected)
    assert s is not None and s.rest is not None and not s.refused
    cluster = dtp.DescribeTopicPartitionsResponse(
        topics=[dtp.DescribeTopicPartitionsResponseTopic(name=n) for n in ("a", LOG, "b")],
        next_cursor=dtp.DescribeTopicPartitionsResponseCursor(topic_name="c"),
    )
    merged = answer(dtp.DescribeTopicPartitionsResponse, 0, topic_split.merge(s, response_payload(0, cluster)))
    assert isinstance(merged, dtp.DescribeTopicPartitionsResponse)
    assert [t.name for t in merged.topics] == ["a", "b"]
    assert merged.next_cursor is not None and merged.next_cursor.topic_name == "c"
    # Named: 29 for the log topic.
    named = dtp.DescribeTopicPartitionsRequest(
        topics=[dtp.DescribeTopicPartitionsRequestTopicRequest(name=n) for n in (LOG, "a")]
    )
    s = topic_split.split(request_payload(75, 0, named), protected)
    assert s is not None
    rest = forwarded_body(s)
    assert isinstance(rest, dtp.DescribeTopicPartitionsRequest) and [t.name for t in rest.topics] == ["a"]
    cluster = dtp.DescribeTopicPartitionsResponse(topics=[dtp.DescribeTopicPartitionsResponseTopic(name="a")])
    merged = answer(dtp.DescribeTopicPartitionsResponse, 0, topic_split.merge(s, response_payload(0, cluster)))
    assert isinstance(merged, dtp.DescribeTopicPartitionsResponse)
    assert [(t.name, t.error_code) for t in merged.topics] == [(LOG, 29), ("a", 0)]


def test_each_partition_of_the_log_topic_is_refused_under_the_request_s_own_names() -> None:
    """ListOffsets, OffsetForLeaderEpoch and DeleteRecords: one answer per requested partition,
    29 (DeleteRecords: low watermark -1), nothing forwarded when only the log topic is named."""
    epoch = offset_for_leader_epoch
    cases: list[tuple[int, int, Message, Message]] = [
        (
            2,
            7,
            list_offsets.ListOffsetsRequest(topics=[offsets_topic(LOG)]),
            list_offsets.ListOffsetsResponse(
                topics=[
                    list_offsets.ListOffsetsTopicResponse(
                        name=LOG,
                        partitions=[
                            list_offsets.ListOffsetsPartitionResponse(partition_index=p, error_code=29) for p in (0, 1)
                        ],
                    )
                ]
            ),
        ),
        (
            23,
            4,
            epoch.OffsetForLeaderEpochRequest(
                topics=[
                    epoch.OffsetForLeaderEpochRequestOffsetForLeaderTopic(
                        topic=LOG,
                        partitions=[
                            epoch.OffsetForLeaderEpochRequestOffsetForLeaderPartition(partition=p) for p in (3, 5)
                        ],
                    )
                ]
            ),
            epoch.OffsetForLeaderEpochResponse(
                topics=[
                    epoch.OffsetForLeaderEpochResponseOffsetForLeaderTopicResult(
                        topic=LOG,
                        partitions=[
                            epoch.OffsetForLeaderEpochResponseEpochEndOffset(partition=p, error_code=29) for p in (3, 5)
                        ],
                    )
                ]
            ),
        ),
        (
            21,
            2,
            delete_records.DeleteRecordsRequest(
                topics=[
                    delete_records.DeleteRecordsTopic(
                        name=LOG,
                        partitions=[delete_records.DeleteRecordsPartition(partition_index=p, offset=9) for p in (0, 2)],
                    )
                ]
            ),
            delete_records.DeleteRecordsResponse(
                topics=[
                    delete_records.DeleteRecordsTopicResult(
                        name=LOG,
                        partitions=[
                            delete_records.DeleteRecordsPartitionResult(
                                partition_index=p, low_watermark=-1, error_code=29
                            )
                            for p in (0, 2)
                        ],
                    )
                ]
            ),
        ),
    ]
    for key, version, body, expected in cases:
        s = topic_split.split(request_payload(key, version, body), protected)
        assert s is not None and s.rest is None
        assert answer(type(expected), version, topic_split.merge(s, None)) == expected
