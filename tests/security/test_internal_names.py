"""The sidecar's own topics and groups are out of reach through it, whatever the encoding (issue 22,
scenarios S1, S2 and S7 of the security review), against real ``serve`` processes and the local broker."""

from __future__ import annotations

import asyncio
import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka.record.memory_records import MemoryRecordsBuilder

from groupcoord.coordinator.gateway.apis import APIS, ApiKey
from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct, write_uvarint
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_response_header, encode_request_header
from groupcoord.coordinator.messages import delete_topics, list_offsets, produce
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Sidecar, wait_for

pytestmark = pytest.mark.integration

GROUP_AUTHORIZATION_FAILED = 30
FORGED_PORT = 6666


@pytest.fixture(scope="module")
def pair(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, Sidecar]]:
    """Two serve processes sharing one log topic (four shards), each owning some."""
    tmp = tmp_path_factory.mktemp("internal-names")
    topic = f"gc-internal-{uuid.uuid4().hex[:8]}"
    made = [Sidecar(bootstrap, topic, tmp / f"serve{i}.log", partitions=4) for i in range(2)]
    try:
        for s in made:
            s.spawn()
        for s in made:
            s.wait_listening()
        wait_for(lambda: all(s.owned() for s in made), 90, "both processes to own shards")
        yield made[0], made[1]
    finally:
        for s in made:
            s.stop()


def frame(key: int, version: int, body: Message, correlation_id: int = 1) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_request_header(RequestHeader(key, version, correlation_id, "attacker"), 2 if flexible else 1, out)
    encode_struct(body, version, flexible, out)
    return struct.pack(">i", len(out)) + bytes(out)


def padded(data: bytes, name: str) -> bytes:
    """The frame with ``name``'s compact-string length as a two-byte varint (``0x98 0x00`` for 23
    bytes), and the frame length fixed: a broker reads the same request."""
    raw = name.encode()
    canonical = bytes([len(raw) + 1]) + raw
    assert canonical in data
    body = data[4:].replace(canonical, bytes([(len(raw) + 1) | 0x80, 0x00]) + raw)
    return struct.pack(">i", len(body)) + body


_FORWARDED: dict[int, type[Message]] = {
    0: produce.ProduceResponse,
    2: list_offsets.ListOffsetsResponse,
    20: delete_topics.DeleteTopicsResponse,
}


async def exchange(port: int, data: bytes, key: int, version: int) -> Message | None:
    """Send one frame; its answer, or None when the sidecar closed the connection."""
    client = await WireClient.connect("127.0.0.1", port)
    try:
        client.send_raw(data)
        try:
            payload = await client.read_frame()
        except asyncio.IncompleteReadError:
            return None
    finally:
        await client.close()
    cls = _FORWARDED[key] if key in _FORWARDED else APIS[key].response
    flexible = version in cls.FLEXIBLE and key != ApiKey.API_VERSIONS
    _, pos = decode_response_header(payload, 1 if flexible else 0)
    return decode_struct(cls, memoryview(payload)[pos:], version, version in cls.FLEXIBLE)


async def call(port: int, key: int, version: int, body: Message) -> Any:
    answer = await exchange(port, frame(key, version, body), key, version)
    assert answer is not None, f"API {key} closed the connection"
    return answer


def topic_exists(bootstrap: str, topic: str) -> bool:
    return topic in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def assert_alive(s: Sidecar) -> None:
    assert s.alive
    versions = asyncio.run(
        call(s.port, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    )
    assert versions.error_code == 0


def test_s1_non_minimal_varints_do_not_reach_the_log_topic(bootstrap: str, pair: tuple[Sidecar, Sidecar]) -> None:
    p1, _ = pair
    log = p1.topic
    requests = [
        (
            20,
            5,
            delete_topics.DeleteTopicsRequest(topic_names=[log], timeout_ms=5000),
            delete_topics.DeleteTopicsResponse,
        ),
        (
            2,
            7,
            list_offsets.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    list_offsets.ListOffsetsTopic(
                        name=log, partitions=[list_offsets.ListOffsetsPartition(partition_index=0, timestamp=-1)]
                    )
                ],
            ),
            list_offsets.ListOffsetsResponse,
        ),
    ]
    for key, version, body, _ in requests:
        answer = asyncio.run(exchange(p1.port, padded(frame(key, version, body), log), key, version))
        # Closed (a malformed request), or refused: never served.
        if answer is not None:
            codes = {p.error_code for t in answer.topics for p in t.partitions} if key == 2 else None  # type: ignore[attr-defined]
            if key == 20:
                codes = {r.error_code for r in answer.responses}  # type: ignore[attr-defined]
            assert codes == {29}, (key, answer)
        assert topic_exists(bootstrap, log)
        assert_alive(p1)
    # The canonical encodings are answered 29, the connection kept.
    deleted = asyncio.run(call(p1.port, 20, 5, requests[0][2]))
    assert [(r.name, r.error_code) for r in deleted.responses] == [(log, 29)]
    assert topic_exists(bootstrap, log)


def _naming(name: str) -> list[tuple[int, int, Message]]:
    """DeleteTopics, ListOffsets and Produce naming ``name`` (all at flexible versions: compact strings)."""
    return [
        (20, 5, delete_topics.DeleteTopicsRequest(topic_names=[name], timeout_ms=5000)),
        (
            2,
            7,
            list_offsets.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    list_offsets.ListOffsetsTopic(
                        name=name, partitions=[list_offsets.ListOffsetsPartition(partition_index=0, timestamp=-1)]
                    )
                ],
            ),
        ),
        (
            0,
            9,
            produce.ProduceRequest(
                acks=-1,
                timeout_ms=10000,
                topic_data=[
                    produce.ProduceRequestTopicProduceData(
                        name=name,
                        partition_data=[
                            produce.ProduceRequestPartitionProduceData(index=0, records=_record(b"k", b"forged"))
                        ],
                    )
                ],
            ),
        ),
    ]


def _codes(key: int, answer: Message) -> set[int]:
    if key == 20:
        return {r.error_code for r in answer.responses}  # type: ignore[attr-defined]
    if key == 0:
        return {p.error_code for t in answer.responses for p in t.partition_responses}  # type: ignore[attr-defined]
    return {p.error_code for t in answer.topics for p in t.partitions}  # type: ignore[attr-defined]


def test_s1_padded_names_of_every_own_topic_are_refused(bootstrap: str, pair: tuple[Sidecar, Sidecar]) -> None:
    """The transaction topic (``<log>-txn``) and the directory topic, like the log topic: a padded
    varint in a forwarded DeleteTopics, ListOffsets or Produce is refused (or the connection closed),
    never served; the canonical encoding gets TOPIC_AUTHORIZATION_FAILED."""
    p1, _ = pair
    log = p1.topic
    for name in (log, f"{log}-txn", f"{log}-directory"):
        assert topic_exists(bootstrap, name), name
        for key, version, body in _naming(name):
            answer = asyncio.run(exchange(p1.port, padded(frame(key, version, body), name), key, version))
            if answer is not None:
                assert _codes(key, answer) == {29}, (name, key, answer)
            canonical = asyncio.run(call(p1.port, key, version, body))
            assert _codes(key, canonical) == {29}, (name, key, canonical)
            assert topic_exists(bootstrap, name), (name, key)
        assert_alive(p1)


def _record(key: bytes, value: bytes) -> bytes:
    builder = MemoryRecordsBuilder(2, 0, 1 << 20)
    builder.append(timestamp=None, key=key, value=value, headers=[])
    builder.close()
    return bytes(builder.buffer())


def _coordinator(port: int, group: str) -> FindCoordinatorResponse:
    found = asyncio.run(call(port, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=group, key_type=0)))
    assert isinstance(found, FindCoordinatorResponse)
    return found


def test_s2_the_directory_cannot_redirect_routing(bootstrap: str, pair: tuple[Sidecar, Sidecar]) -> None:
    p1, p2 = pair
    directory = f"{p1.topic}-directory"
    # A group that P2 coordinates, as P1 routes it.
    groups = [f"g{i}" for i in range(64)]
    wait_for(lambda: any(_coordinator(p1.port, g).port == p2.port for g in groups), 60, "P1 to route a group to P2")
    group = next(g for g in groups if _coordinator(p1.port, g).port == p2.port)
    p2_node = _coordinator(p1.port, group).node_id
    forged = json.dumps({"host": "127.0.0.1", "port": FORGED_PORT}).encode()

    # Through P1: the directory topic is refused like the log topic.
    produced = asyncio.run(
        call(
            p1.port,
            0,
            9,
            produce.ProduceRequest(
                acks=-1,
                timeout_ms=10000,
                topic_data=[
                    produce.ProduceRequestTopicProduceData(
                        name=directory,
                        partition_data=[
                            produce.ProduceRequestPartitionProduceData(
                                index=0, records=_record(str(p2_node).encode(), forged)
                            )
                        ],
                    )
                ],
            ),
        )
    )
    assert [p.error_code for t in produced.responses for p in t.partition_responses] == [29]
    named = asyncio.run(call(p1.port, 3, 12, MetadataRequest(topics=None)))
    assert isinstance(named, MetadataResponse) and directory not in {t.name for t in named.topics}

    # Written straight to the cluster (no ACLs here): P1 ignores an address that does not give
    # P2's node id.
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(directory, key=str(p2_node).encode(), value=forged)
    assert producer.flush(20) == 0
    wait_for(
        lambda: any("ignoring a directory record" in str(r.get("msg")) for r in p1.records()),
        30,
        "P1 to read the forged record",
    )
    for g in groups:
        assert _coordinator(p1.port, g).port != FORGED_PORT
    brokers = asyncio.run(call(p1.port, 3, 12, MetadataRequest(topics=[]))).brokers
    assert FORGED_PORT not in {b.port for b in brokers}
    assert _coordinator(p1.port, group).port == p2.port

    # The placement groups are not served through the sidecar: not even looked up.
    placement = f"groupcoord-placement-{p1.topic}"
    for name in (placement, f"{placement}-directory"):
        found = _coordinator(p1.port, name)
        assert (found.error_code, found.port) == (GROUP_AUTHORIZATION_FAILED, -1)
        port = p1.port
        described = asyncio.run(call(port, 15, 5, DescribeGroupsRequest(groups=[name])))
        assert isinstance(described, DescribeGroupsResponse)
        assert described.groups[0].error_code == GROUP_AUTHORIZATION_FAILED
        joined = asyncio.run(
            call(
                port,
                11,
                7,
                JoinGroupRequest(
                    group_id=name,
                    session_timeout_ms=10000,
                    rebalance_timeout_ms=10000,
                    member_id="",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
                ),
            )
        )
        assert isinstance(joined, JoinGroupResponse) and joined.error_code == GROUP_AUTHORIZATION_FAILED
        fetched = asyncio.run(call(port, 9, 7, OffsetFetchRequest(group_id=name, topics=None)))
        assert isinstance(fetched, OffsetFetchResponse) and fetched.error_code == GROUP_AUTHORIZATION_FAILED
    assert_alive(p1)
    assert_alive(p2)


def test_s7_ten_thousand_and_one_tagged_fields_close_the_connection(pair: tuple[Sidecar, Sidecar]) -> None:
    p1, _ = pair
    body = ConsumerGroupHeartbeatRequest(
        group_id="s7", member_id="", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=["t"]
    )

    def heartbeat(tags: int) -> bytes:
        out = bytearray()
        encode_request_header(RequestHeader(68, 1, 1, "attacker"), 2, out)
        encoded = encode_struct(body, 1, True)
        assert encoded[-1] == 0
        out += encoded[:-1]
        write_uvarint(out, tags)
        for tag in range(tags):
            write_uvarint(out, 1000 + tag)
            out.append(0)
        return struct.pack(">i", len(out)) + bytes(out)

    assert asyncio.run(exchange(p1.port, heartbeat(10_001), 68, 1)) is None
    answered = asyncio.run(exchange(p1.port, heartbeat(3), 68, 1))
    assert answered is not None
    assert_alive(p1)
