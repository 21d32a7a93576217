"""Forwarded requests that name the coordinator's log topic: its slots answered here, the rest forwarded.

A Kafka broker answers a request for a topic the caller may not touch with
TOPIC_AUTHORIZATION_FAILED (29) in that topic's slot and serves the rest of the request. The
gateway does the same for the log topic: ``split`` decodes the request (when its decoded topics
name a protected one: ``protect``), takes the log topic's entries out, and ``merge`` puts the answers back
together in the request's order: 29 for the log topic's entries, the cluster's answer for the
others. Per API (the topic list split, and what a refused entry gets):

- Produce (v3+): ``topic_data``; every partition 29, base offset -1.
- Fetch (v4+): ``topics``; every partition 29, watermarks -1, no records. Entries for the log
  topic in ``forgotten_topics_data`` are dropped. The rest is always forwarded, even when empty,
  so that an incremental fetch session goes on as the client expects.
- ListOffsets (v1+), OffsetForLeaderEpoch (v2+), DeleteRecords: ``topics``; every partition 29.
- CreateTopics (v2+), CreatePartitions, DeleteTopics (v1+; by name, or by id from v6): one
  result per topic, 29.
- DescribeTopicPartitions: 29 for the topic when named; every answer of it is filtered, so an
  all-topics describe (no names) leaves the log topic out, as Metadata does.

The cluster's answers never show a protected topic.

Configs requests (TOPIC resources) are split in ``gateway/configs`` terms by the connection.
Any other API, or a version below the ones above (Kafka 4 no longer has them), that names the
log topic still closes the connection (``split`` returns None). Pure: no I/O.
"""

from __future__ import annotations

import copy
import struct
import uuid
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.gateway.codec import CodecError, decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from groupcoord.coordinator.messages import (
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_topic_partitions,
    fetch,
    list_offsets,
    offset_for_leader_epoch,
    produce,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message

TOPIC_AUTHORIZATION_FAILED = 29
_MESSAGE = "Topic authorization failed."

Key = tuple[str, uuid.UUID]


def _key(item: Any) -> Key:
    """(name, topic id) of a request or response entry; a bare string is a name (DeleteTopics v0-5)."""
    if isinstance(item, str):
        return item, ZERO_UUID
    name = getattr(item, "name", None)
    if name is None:
        name = getattr(item, "topic", None)
    return name or "", getattr(item, "topic_id", ZERO_UUID)


@dataclass(frozen=True)
class _Api:
    request: type[Message]
    response: type[Message]
    # The request's topic list at a version, and the response's.
    request_field: Callable[[int], str]
    response_field: str
    refuse: Callable[[Any], Any]
    min_version: int = 0


def _produce_refusal(t: produce.ProduceRequestTopicProduceData) -> Any:
    return produce.ProduceResponseTopicProduceResponse(
        name=t.name,
        topic_id=t.topic_id,
        partition_responses=[
            produce.ProduceResponsePartitionProduceResponse(
                index=p.index, error_code=TOPIC_AUTHORIZATION_FAILED, base_offset=-1
            )
            for p in t.partition_data
        ],
    )


def _fetch_refusal(t: fetch.FetchTopic) -> Any:
    return fetch.FetchableTopicResponse(
        topic=t.topic,
        topic_id=t.topic_id,
        partitions=[
            fetch.FetchResponsePartitionData(
                partition_index=p.partition,
                error_code=TOPIC_AUTHORIZATION_FAILED,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                aborted_transactions=None,
                records=b"",
            )
            for p in t.partitions
        ],
    )


def _each_partition_refused(
    topic: Callable[..., Any], partition: Callable[..., Any], name_field: str, index_field: str, **refused: Any
) -> Callable[[Any], Any]:
    """The refusal of ListOffsets, OffsetForLeaderEpoch and DeleteRecords: the answer names the
    topic and each partition by the request's own fields (``name_field``, ``index_field``), each
    partition 29 and ``refused`` (the API's other answer fields for a partition it did not serve)."""

    def refuse(t: Any) -> Any:
        return topic(
            **{name_field: getattr(t, name_field)},
            partitions=[
                partition(**{index_field: getattr(p, index_field)}, error_code=TOPIC_AUTHORIZATION_FAILED, **refused)
                for p in t.partitions
            ],
        )

    return refuse


_list_offsets_refusal = _each_partition_refused(
    list_offsets.ListOffsetsTopicResponse, list_offsets.ListOffsetsPartitionResponse, "name", "partition_index"
)
_epoch_refusal = _each_partition_refused(
    offset_for_leader_epoch.OffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
    offset_for_leader_epoch.OffsetForLeaderEpochResponseEpochEndOffset,
    "topic",
    "partition",
)
_delete_records_refusal = _each_partition_refused(
    delete_records.DeleteRecordsTopicResult,
    delete_records.DeleteRecordsPartitionResult,
    "name",
    "partition_index",
    low_watermark=-1,
)


def _create_topics_refusal(t: create_topics.CreateTopicsRequestCreatableTopic) -> Any:
    return create_topics.CreateTopicsResponseCreatableTopicResult(
        name=t.name, error_code=TOPIC_AUTHORIZATION_FAILED, error_message=_MESSAGE
    )


def _delete_topics_refusal(t: Any) -> Any:
    name, topic_id = _key(t)
    return delete_topics.DeleteTopicsResponseDeletableTopicResult(
        name=name or None, topic_id=topic_id, error_code=TOPIC_AUTHORIZATION_FAILED, error_message=_MESSAGE
    )


def _create_partitions_refusal(t: create_partitions.CreatePartitionsTopic) -> Any:
    return create_partitions.CreatePartitionsTopicResult(
        name=t.name, error_code=TOPIC_AUTHORIZATION_FAILED, error_message=_MESSAGE
    )


def _describe_refusal(t: describe_topic_partitions.DescribeTopicPartitionsRequestTopicRequest) -> Any:
    return describe_topic_partitions.DescribeTopicPartitionsResponseTopic(
        name=t.name, error_code=TOPIC_AUTHORIZATION_FAILED
    )


def _always(name: str) -> Callable[[int], str]:
    return lambda version: name


APIS: dict[int, _Api] = {
    0: _Api(produce.ProduceRequest, produce.ProduceResponse, _always("topic_data"), "responses", _produce_refusal),
    1: _Api(fetch.FetchRequest, fetch.FetchResponse, _always("topics"), "responses", _fetch_refusal),
    2: _Api(
        list_offsets.ListOffsetsRequest,
        list_offsets.ListOffsetsResponse,
        _always("topics"),
        "topics",
        _list_offsets_refusal,
    ),
    19: _Api(
        create_topics.CreateTopicsRequest,
        create_topics.CreateTopicsResponse,
        _always("topics"),
        "topics",
        _create_topics_refusal,
    ),
    20: _Api(
        delete_topics.DeleteTopicsRequest,
        delete_topics.DeleteTopicsResponse,
        lambda version: "topics" if version >= 6 else "topic_names",
        "responses",
        _delete_topics_refusal,
    ),
    21: _Api(
        delete_records.DeleteRecordsRequest,
        delete_records.DeleteRecordsResponse,
        _always("topics"),
        "topics",
        _delete_records_refusal,
    ),
    23: _Api(
        offset_for_leader_epoch.OffsetForLeaderEpochRequest,
        offset_for_leader_epoch.OffsetForLeaderEpochResponse,
        _always("topics"),
        "topics",
        _epoch_refusal,
    ),
    37: _Api(
        create_partitions.CreatePartitionsRequest,
        create_partitions.CreatePartitionsResponse,
        _always("topics"),
        "results",
        _create_partitions_refusal,
    ),
    75: _Api(
        describe_topic_partitions.DescribeTopicPartitionsRequest,
        describe_topic_partitions.DescribeTopicPartitionsResponse,
        _always("topics"),
        "topics",
        _describe_refusal,
    ),
}
FETCH = 1
# Answers of this API list topics the request did not name (none named: all of them), so its
# answers always go through ``merge``, which leaves the protected topics out.
DESCRIBE_TOPIC_PARTITIONS = 75


@dataclass
class Split:
    """A request with the protected topics taken out."""

    header: RequestHeader
    request: Message
    # What is forwarded (None: nothing), and the refused entries' answers by their request index.
    rest: Message | None
    refused: dict[int, Any]
    is_protected: Callable[[str, uuid.UUID], bool]

    @property
    def api(self) -> _Api:
        return APIS[self.header.api_key]


def split(payload: bytes, is_protected: Callable[[str, uuid.UUID], bool]) -> Split | None:
    """Take the protected topics out of a forwarded request; None when the API or version is not
    one split here, or the request does not decode (the caller then refuses it whole)."""
    buf = memoryview(payload)
    key = int.from_bytes(buf[0:2], "big", signed=True)
    version = int.from_bytes(buf[2:4], "big", signed=True)
    api = APIS.get(key)
    if api is None or version not in api.request.VALID:
        return None
    flexible = version in api.request.FLEXIBLE
    try:
        header, pos = decode_request_header(buf, 2 if flexible else 1)
        # As the broker reads it (bytes after the message are ignored), as protection decided on.
        request = decode_struct(api.request, buf[pos:], version, flexible, exact=False)
    except (CodecError, ValueError, IndexError, struct.error):
        return None
    field = api.request_field(version)
    items = list(getattr(request, field))
    refused = {i: api.refuse(item) for i, item in enumerate(items) if is_protected(*_key(item))}
    rest = copy.copy(request)
    setattr(rest, field, [item for i, item in enumerate(items) if i not in refused])
    if key == FETCH:
        assert isinstance(rest, fetch.FetchRequest)
        rest.forgotten_topics_data = [t for t in rest.forgotten_topics_data if not is_protected(*_key(t))]
        return Split(header, request, rest, refused, is_protected)
    everything_refused = bool(items) and len(refused) == len(items)
    return Split(header, request, None if everything_refused else rest, refused, is_protected)


def encode_rest(s: Split) -> bytes:
    """The forwarded part as a request payload (no length prefix), under the client's header."""
    assert s.rest is not None
    version = s.header.api_version
    flexible = version in s.api.request.FLEXIBLE
    out = bytearray()
    encode_request_header(s.header, 2 if flexible else 1, out)
    encode_struct(s.rest, version, flexible, out)
    return bytes(out)


def merge(s: Split, forwarded: bytes | None) -> bytes:
    """The answer to the whole request, as a response payload (no length prefix): the refused
    entries' answers and the cluster's (``forwarded``, a response payload) in request order."""
    api, version = s.api, s.header.api_version
    flexible = version in api.response.FLEXIBLE
    answers: list[Any] = []
    if forwarded is not None:
        _, pos = decode_response_header(forwarded, 1 if flexible else 0)
        response = decode_struct(api.response, memoryview(forwarded)[pos:], version, flexible)
        answers = list(getattr(response, api.response_field))
    else:
        response = api.response()
    by_name: dict[str, deque[int]] = defaultdict(deque)
    by_id: dict[uuid.UUID, deque[int]] = defaultdict(deque)
    # The cluster's answers never show a protected topic (all-topics describes included).
    answers = [a for a in answers if not s.is_protected(*_key(a))]
    for i, answer in enumerate(answers):
        name, topic_id = _key(answer)
        if name:
            by_name[name].append(i)
        if topic_id != ZERO_UUID:
            by_id[topic_id].append(i)
    used: set[int] = set()
    out: list[Any] = []
    for i, item in enumerate(getattr(s.request, api.request_field(version))):
        if i in s.refused:
            out.append(s.refused[i])
            continue
        name, topic_id = _key(item)
        queue = by_name.get(name) if name else by_id.get(topic_id)
        while queue and queue[0] in used:
            queue.popleft()
        if queue:
            j = queue.popleft()
            used.add(j)
            out.append(answers[j])
    # Whatever the cluster answered that matched no entry (a fetch session's partitions the
    # request did not list, say) is kept, after the rest.
    out += [a for j, a in enumerate(answers) if j not in used]
    setattr(response, api.response_field, out)
    body = bytearray()
    encode_response_header(s.header.correlation_id, 1 if flexible else 0, body)
    encode_struct(response, version, flexible, body)
    return bytes(body)
