"""Protection decided on decoded requests: canonical varints only, Kafka 4.4's decoding caps, and
every forwarded API's topic fields read (issue 22, items 1 and 7)."""

from __future__ import annotations

import contextlib
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.gateway import named_topics
from groupcoord.coordinator.gateway.codec import (
    MAX_ARRAY_ELEMENTS,
    MAX_TAGGED_FIELDS,
    CodecError,
    decode_struct,
    encode_struct,
    read_uvarint,
    write_uvarint,
)
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_request_header, encode_request_header
from groupcoord.coordinator.gateway.protect import NotForwardable, ProtectedTopics
from groupcoord.coordinator.messages import (
    add_partitions_to_txn,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_records,
    delete_topics,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    elect_leaders,
    fetch,
    incremental_alter_configs,
    list_offsets,
    list_partition_reassignments,
    offset_for_leader_epoch,
    write_txn_markers,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message

LOG = "__group_coordinator_log"
DIRECTORY = f"{LOG}-directory"
LOG_ID = uuid.UUID(int=0x1234)


def payload(key: int, version: int, body: Message) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_request_header(RequestHeader(key, version, 7, "t"), 2 if flexible else 1, out)
    encode_struct(body, version, flexible, out)
    return bytes(out)


def padded(data: bytes, name: str) -> bytes:
    """``data`` with the compact-string length of ``name`` written as a two-byte varint."""
    raw = name.encode()
    canonical = bytes([len(raw) + 1]) + raw
    assert canonical in data
    return data.replace(canonical, bytes([(len(raw) + 1) | 0x80, 0x00]) + raw)


def protected() -> ProtectedTopics:
    p = ProtectedTopics([LOG, DIRECTORY], ["groupcoord-placement-x"])
    p.add_id(LOG_ID)
    return p


# --- codec ----------------------------------------------------------------------------------


def test_varints_are_read_in_their_canonical_encoding_only() -> None:
    for value in (0, 1, 24, 127, 128, 300, 2**21, 2**32 - 1):
        out = bytearray()
        write_uvarint(out, value)
        assert read_uvarint(memoryview(bytes(out)), 0) == (value, len(out))
    for bad in (b"\x98\x00", b"\x80\x00", b"\x81\x80\x00", b"\xff\xff\xff\xff\x7f"):
        with pytest.raises(CodecError):
            read_uvarint(memoryview(bad), 0)


def _flexible_array_of(count: int, filler: int) -> bytes:
    # CGH v1 fields up to its first array (subscribed_topic_names, nullable compact array).
    body = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", subscribed_topic_names=[])
    data = bytearray(encode_struct(body, 1, True))
    out = bytearray()
    write_uvarint(out, count + 1)
    marker = bytes([1])  # the empty array's compact length
    head = data[: data.index(marker, 4)]
    return bytes(head + out + b"\x01" * filler)


def test_arrays_over_a_million_elements_are_refused_before_allocating() -> None:
    # The elements are there (one byte each, empty strings): only the cap refuses them.
    data = _flexible_array_of(MAX_ARRAY_ELEMENTS + 1, MAX_ARRAY_ELEMENTS + 1)
    with pytest.raises(CodecError, match="exceeds the limit"):
        decode_struct(ConsumerGroupHeartbeatRequest, data, 1, True, exact=False)


def _tagged(count: int) -> bytes:
    body = encode_struct(ConsumerGroupHeartbeatRequest(group_id="g", member_id="m"), 1, True)
    assert body[-1] == 0  # no tagged fields
    out = bytearray(body[:-1])
    write_uvarint(out, count)
    for tag in range(count):
        write_uvarint(out, 1000 + tag)  # unknown tags, empty
        out.append(0)
    return bytes(out)


def test_more_than_ten_thousand_tagged_fields_are_refused() -> None:
    decoded = decode_struct(ConsumerGroupHeartbeatRequest, _tagged(MAX_TAGGED_FIELDS), 1, True)
    assert len(decoded.unknown_tagged_fields) == MAX_TAGGED_FIELDS
    with pytest.raises(CodecError, match="tagged fields"):
        decode_struct(ConsumerGroupHeartbeatRequest, _tagged(MAX_TAGGED_FIELDS + 1), 1, True)


def test_request_header_tagged_fields_are_capped_too() -> None:
    out = bytearray()
    encode_request_header(RequestHeader(68, 1, 7, "t"), 2, out)
    out = out[:-1]
    write_uvarint(out, MAX_TAGGED_FIELDS + 1)
    out += b"\x01\x00" * (MAX_TAGGED_FIELDS + 1)
    with pytest.raises(CodecError):
        decode_request_header(memoryview(bytes(out)), 2)


# --- every forwarded API's topics ---------------------------------------------------------------


def _requests(topic: str) -> list[tuple[int, int, Message]]:
    return [
        (1, 12, fetch.FetchRequest(topics=[fetch.FetchTopic(topic=topic, partitions=[fetch.FetchPartition()])])),
        (2, 7, list_offsets.ListOffsetsRequest(topics=[list_offsets.ListOffsetsTopic(name=topic)])),
        (
            19,
            7,
            create_topics.CreateTopicsRequest(topics=[create_topics.CreateTopicsRequestCreatableTopic(name=topic)]),
        ),
        (20, 5, delete_topics.DeleteTopicsRequest(topic_names=["other", topic])),
        (21, 2, delete_records.DeleteRecordsRequest(topics=[delete_records.DeleteRecordsTopic(name=topic)])),
        (
            23,
            4,
            offset_for_leader_epoch.OffsetForLeaderEpochRequest(
                topics=[offset_for_leader_epoch.OffsetForLeaderEpochRequestOffsetForLeaderTopic(topic=topic)]
            ),
        ),
        (
            24,
            3,
            add_partitions_to_txn.AddPartitionsToTxnRequest(
                v3_and_below_topics=[add_partitions_to_txn.AddPartitionsToTxnTopic(name=topic)]
            ),
        ),
        (
            27,
            1,
            write_txn_markers.WriteTxnMarkersRequest(
                markers=[
                    write_txn_markers.WriteTxnMarkersRequestWritableTxnMarker(
                        topics=[write_txn_markers.WriteTxnMarkersRequestWritableTxnMarkerTopic(name=topic)]
                    )
                ]
            ),
        ),
        (
            32,
            4,
            describe_configs.DescribeConfigsRequest(
                resources=[describe_configs.DescribeConfigsResource(resource_type=2, resource_name=topic)]
            ),
        ),
        (
            44,
            1,
            incremental_alter_configs.IncrementalAlterConfigsRequest(
                resources=[
                    incremental_alter_configs.IncrementalAlterConfigsRequestAlterConfigsResource(
                        resource_type=2, resource_name=topic
                    )
                ]
            ),
        ),
        (
            34,
            2,
            alter_replica_log_dirs.AlterReplicaLogDirsRequest(
                dirs=[
                    alter_replica_log_dirs.AlterReplicaLogDirsRequestAlterReplicaLogDir(
                        path="/d",
                        topics=[alter_replica_log_dirs.AlterReplicaLogDirsRequestAlterReplicaLogDirTopic(name=topic)],
                    )
                ]
            ),
        ),
        (
            35,
            4,
            describe_log_dirs.DescribeLogDirsRequest(
                topics=[describe_log_dirs.DescribeLogDirsRequestDescribableLogDirTopic(topic=topic)]
            ),
        ),
        (
            37,
            3,
            create_partitions.CreatePartitionsRequest(topics=[create_partitions.CreatePartitionsTopic(name=topic)]),
        ),
        (
            43,
            2,
            elect_leaders.ElectLeadersRequest(
                topic_partitions=[elect_leaders.ElectLeadersRequestTopicPartitions(topic=topic)]
            ),
        ),
        (
            45,
            0,
            alter_partition_reassignments.AlterPartitionReassignmentsRequest(
                topics=[alter_partition_reassignments.AlterPartitionReassignmentsRequestReassignableTopic(name=topic)]
            ),
        ),
        (
            46,
            0,
            list_partition_reassignments.ListPartitionReassignmentsRequest(
                topics=[list_partition_reassignments.ListPartitionReassignmentsTopics(name=topic)]
            ),
        ),
        (
            61,
            0,
            describe_producers.DescribeProducersRequest(
                topics=[describe_producers.DescribeProducersRequestTopicRequest(name=topic)]
            ),
        ),
    ]


@pytest.mark.parametrize("index", range(len(_requests("x"))))
def test_every_forwarded_api_naming_a_protected_topic_is_found_decoded(index: int) -> None:
    p = protected()
    key, version, body = _requests(DIRECTORY)[index]
    data = payload(key, version, body)
    assert p.in_request(data, key, version)
    other_key, other_version, other = _requests("orders")[index]
    assert not p.in_request(payload(other_key, other_version, other), other_key, other_version)
    if version in type(body).FLEXIBLE:
        # The same request with the name's length padded: no longer readable, so not forwardable.
        with pytest.raises(NotForwardable):
            p.in_request(padded(data, DIRECTORY), key, version)


def test_topic_ids_are_found_wherever_a_request_carries_them() -> None:
    p = protected()
    by_id = fetch.FetchRequest(topics=[fetch.FetchTopic(topic_id=LOG_ID, partitions=[fetch.FetchPartition()])])
    assert p.in_request(payload(1, 13, by_id), 1, 13)
    forgotten = fetch.FetchRequest(forgotten_topics_data=[fetch.FetchRequestForgottenTopic(topic_id=LOG_ID)])
    assert p.in_request(payload(1, 13, forgotten), 1, 13)
    deleted = delete_topics.DeleteTopicsRequest(
        topics=[delete_topics.DeleteTopicsRequestDeleteTopicState(topic_id=LOG_ID)]
    )
    assert p.in_request(payload(20, 6, deleted), 20, 6)
    named = MetadataRequest(topics=[MetadataRequestTopic(topic_id=LOG_ID, name=None)])
    assert p.in_metadata(payload(3, 12, named), 12) == {LOG_ID}
    assert not p.in_metadata(payload(3, 12, MetadataRequest(topics=None)), 12)


def _cluster_answer() -> MetadataResponse:
    """What the cluster answers about the log topic and another, however they were asked for."""
    return MetadataResponse(
        topics=[
            MetadataResponseTopic(name=LOG, topic_id=LOG_ID, partitions=[MetadataResponsePartition()]),
            MetadataResponseTopic(name="orders", topic_id=uuid.UUID(int=7)),
        ]
    )


@pytest.mark.parametrize(
    ("asked", "version", "refused"),
    [
        # As Kafka refuses a topic the caller may not DESCRIBE: asked by name, no id; by id, no
        # name (a null name from v12); so neither gives the other away.
        (MetadataRequestTopic(name=LOG), 12, (LOG, ZERO_UUID)),
        (MetadataRequestTopic(topic_id=LOG_ID, name=None), 12, (None, LOG_ID)),
        (MetadataRequestTopic(name=LOG), 9, (LOG, ZERO_UUID)),
    ],
)
def test_a_metadata_answer_refuses_the_log_topic_without_linking_its_name_and_id(
    asked: MetadataRequestTopic, version: int, refused: tuple[str | None, uuid.UUID]
) -> None:
    p = protected()
    request = MetadataRequest(topics=[asked, MetadataRequestTopic(name="orders")])
    answer = _cluster_answer()
    p.filter_metadata(p.in_metadata(payload(3, version, request), version), answer, version)
    (log, orders) = answer.topics
    assert (log.name, log.topic_id, log.error_code, log.partitions) == (*refused, 29, [])
    assert (orders.name, orders.error_code) == ("orders", 0)
    # Asked for every topic: left out.
    answer = _cluster_answer()
    p.filter_metadata(p.in_metadata(payload(3, version, MetadataRequest(topics=None)), version), answer, version)
    assert [t.name for t in answer.topics] == ["orders"]


def test_acl_changes_covering_a_protected_topic_or_group_are_found() -> None:
    p = protected()

    def creation(kind: int, name: str, pattern: int) -> bytes:
        binding = create_acls.CreateAclsRequestAclCreation(
            resource_type=kind, resource_name=name, resource_pattern_type=pattern, principal="User:x", host="*"
        )
        return payload(30, 3, create_acls.CreateAclsRequest(creations=[binding]))

    assert p.in_request(creation(2, LOG, 3), 30, 3)
    assert p.in_request(creation(2, "__group", 4), 30, 3)  # PREFIXED
    assert p.in_request(creation(2, "*", 3), 30, 3)
    assert p.in_request(creation(3, "groupcoord-placement-x", 3), 30, 3)
    assert not p.in_request(creation(2, "orders", 3), 30, 3)
    assert not p.in_request(creation(3, LOG, 3), 30, 3)  # a group named like the topic
    delete_any = delete_acls.DeleteAclsRequest(
        filters=[delete_acls.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None)]
    )
    assert p.in_request(payload(31, 3, delete_any), 31, 3)


def test_apis_the_gateway_cannot_read_are_not_forwarded() -> None:
    p = protected()
    # Share and streams group heartbeats, an API newer than the table.
    for key in (76, 78, 88, 200):
        with pytest.raises(NotForwardable):
            p.in_request(struct.pack(">hhih", key, 0, 1, -1) + b"\x00", key, 0)
    # Beyond the versions the gateway reads: refused, not scanned.
    with pytest.raises(NotForwardable):
        p.in_request(payload(2, 7, list_offsets.ListOffsetsRequest())[:4] + b"\x00" * 8, 2, 99)
    assert not p.in_request(struct.pack(">hhih", 22, 1, 1, -1) + b"\x00" * 20, 22, 1)
    assert named_topics.decoded_range(76) is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_requests_are_read_or_refused_never_crash(data: st.DataObject) -> None:
    p = protected()
    key, version, body = data.draw(st.sampled_from(_requests(LOG)))
    raw = bytearray(payload(key, version, body))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(8, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(8, len(raw)))
    with contextlib.suppress(NotForwardable):
        assert isinstance(p.in_request(bytes(raw[:cut]), key, version), bool)
