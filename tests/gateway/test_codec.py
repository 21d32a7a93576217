"""Codec round trips for every API and version, checked against kafka-python's independent codec."""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

import pytest

from groupcoord.coordinator.gateway.apis import APIS, ApiSpec
from groupcoord.coordinator.gateway.codec import CodecError, decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import (
    UnsupportedApi,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from groupcoord.coordinator.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.samples import sample

kafka_api = pytest.importorskip("kafka.protocol.api_message")
pytest.importorskip("kafka.protocol.admin")
pytest.importorskip("kafka.protocol.consumer")
pytest.importorskip("kafka.protocol.metadata")


def _kafka_python_classes() -> dict[str, Any]:
    found: dict[str, Any] = {}
    stack = list(kafka_api.ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None:
            found.setdefault(cls.__name__, cls)
    return found


KAFKA_PYTHON = _kafka_python_classes()

# kafka-python loads its schemas through a deprecated importlib API.
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")

Case = tuple[ApiSpec, int, str]

CASES: list[Case] = [
    (spec, version, side)
    for spec in APIS.values()
    for version in range(spec.min_version, spec.max_version + 1)
    for side in ("request", "response")
]


def _ids(cases: list[Case]) -> list[str]:
    return [f"{spec.name}-v{version}-{side}" for spec, version, side in cases]


def _cls(spec: ApiSpec, side: str) -> type[Message]:
    return spec.request if side == "request" else spec.response


@pytest.mark.parametrize(("spec", "version", "side"), CASES, ids=_ids(CASES))
def test_round_trip(spec: ApiSpec, version: int, side: str) -> None:
    cls = _cls(spec, side)
    rng = random.Random(f"{spec.key}-{version}-{side}")
    for _ in range(5):
        original = sample(cls, version, rng)
        data = encode_struct(original, version, spec.flexible(version))
        assert decode_struct(cls, data, version, spec.flexible(version)) == original


# kafka-python has every API here except ConsumerGroupHeartbeat and ConsumerGroupDescribe; those
# two are checked against hand-assembled byte vectors below.
CROSS_CASES = [(spec, v, side) for spec, v, side in CASES if _cls(spec, side).__name__ in KAFKA_PYTHON]
TRUNCATION_CASES = [case for case in CASES if case[1] % 3 == 0]


def test_cross_check_covers_all_but_the_kip848_and_kip932_apis() -> None:
    # kafka-python has neither the consumer-group (KIP-848) nor the share-group (KIP-932) APIs.
    missing = {spec.name for spec, _, _ in CASES} - {spec.name for spec, _, _ in CROSS_CASES}
    # (ShareFetch and ShareAcknowledge are checked end to end against librdkafka: tests/share_data.
    # The share-group offsets APIs (90-92) have no client here to check them against: librdkafka
    # 2.16 has no share-group admin call.)
    assert missing == {
        "ConsumerGroupHeartbeat",
        "ConsumerGroupDescribe",
        "ShareGroupHeartbeat",
        "ShareGroupDescribe",
        "ShareFetch",
        "ShareAcknowledge",
        "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets",
    }


@pytest.mark.parametrize(("spec", "version", "side"), CROSS_CASES, ids=_ids(CROSS_CASES))
def test_matches_kafka_python(spec: ApiSpec, version: int, side: str) -> None:
    cls = _cls(spec, side)
    theirs = KAFKA_PYTHON[cls.__name__]
    rng = random.Random(f"kp-{spec.key}-{version}-{side}")
    for _ in range(5):
        original = sample(cls, version, rng)
        if isinstance(original, ApiVersionsResponse):
            # kafka-python reads any ApiVersions answer carrying an error as v0 (the KIP-511 rule).
            original.error_code = 0
        ours = bytes(encode_struct(original, version, spec.flexible(version)))
        decoded = theirs.decode(ours, version=version)
        assert version == decoded.API_VERSION
        assert bytes(decoded.encode()) == ours


def _kafka_python_request(name: str, version: int, correlation_id: int, client_id: str, **fields: Any) -> bytes:
    message = KAFKA_PYTHON[name][version](**fields)
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(message.encode(header=True, framed=True))


@pytest.mark.parametrize("version", [0, 3, 4])
def test_request_frames_match_kafka_python(version: int) -> None:
    from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest

    fields: dict[str, Any] = {"group_id": "g", "generation_id": 7, "member_id": "m"}
    if version >= 3:
        fields["group_instance_id"] = "static-1"
    ours = encode_request(RequestHeader(12, version, 99, "client-é"), HeartbeatRequest(**fields))
    assert ours == _kafka_python_request("HeartbeatRequest", version, 99, "client-é", **fields)
    decoded = decode_request(ours[4:])
    assert decoded.header == RequestHeader(12, version, 99, "client-é")
    assert decoded.body == HeartbeatRequest(**fields)


def test_response_frame_header_versions() -> None:
    body = ApiVersionsResponse(api_keys=[ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4)])
    # ApiVersions keeps response header v0 even at flexible v3: no tag byte after the correlation id.
    framed = encode_response(18, 3, 5, body)
    assert framed[4:8] == struct.pack(">i", 5)
    assert framed[8:10] == b"\x00\x00"
    correlation_id, decoded = decode_response(18, 3, framed[4:])
    assert (correlation_id, decoded) == (5, body)
    # A flexible non-ApiVersions response has header v1: an empty tag section after the id.
    hb = ConsumerGroupHeartbeatResponse(member_epoch=3, heartbeat_interval_ms=5000)
    framed = encode_response(68, 0, 6, hb)
    assert framed[4:9] == struct.pack(">i", 6) + b"\x00"


def test_consumer_group_heartbeat_request_vector() -> None:
    topic = uuid.UUID("00000000-0000-0000-0000-0000000000ab")
    body = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        subscribed_topic_regex="re",
        topic_partitions=[ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=topic, partitions=[0, 2])],
    )
    # Hand-assembled from the published v1 layout: compact strings/arrays are length+1 varints,
    # null is 0, and every struct ends with an (empty) tag section.
    expected = (
        b"\x02g"
        + b"\x03m1"
        + struct.pack(">i", 0)
        + b"\x00"  # instance id null
        + b"\x00"  # rack id null
        + struct.pack(">i", 30000)
        + b"\x02\x02t"
        + b"\x03re"
        + b"\x00"  # server assignor null
        + b"\x02"
        + topic.bytes
        + b"\x03"
        + struct.pack(">ii", 0, 2)
        + b"\x00"
        + b"\x00"
    )
    assert bytes(encode_struct(body, 1, True)) == expected
    assert decode_struct(ConsumerGroupHeartbeatRequest, expected, 1, True) == body
    # v0 has no regex field at all.
    v0 = bytes(encode_struct(body, 0, True))
    assert b"\x03re" not in v0
    assert decode_struct(ConsumerGroupHeartbeatRequest, v0, 0, True).subscribed_topic_regex is None


def test_consumer_group_heartbeat_response_vector() -> None:
    topic = uuid.UUID(int=7)
    body = ConsumerGroupHeartbeatResponse(
        error_code=0,
        member_id="m1",
        member_epoch=5,
        heartbeat_interval_ms=5000,
        assignment=ConsumerGroupHeartbeatResponseAssignment(
            topic_partitions=[ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=topic, partitions=[1])]
        ),
    )
    expected = (
        struct.pack(">ih", 0, 0)
        + b"\x00"  # error message null
        + b"\x03m1"
        + struct.pack(">ii", 5, 5000)
        + b"\x01"  # nullable struct present
        + b"\x02"
        + topic.bytes
        + b"\x02"
        + struct.pack(">i", 1)
        + b"\x00"
        + b"\x00"  # assignment tags
        + b"\x00"  # message tags
    )
    assert bytes(encode_struct(body, 0, True)) == expected
    assert decode_struct(ConsumerGroupHeartbeatResponse, expected, 0, True) == body
    no_assignment = bytes(encode_struct(ConsumerGroupHeartbeatResponse(member_epoch=1), 1, True))
    assert no_assignment[-2:] == b"\xff\x00"


def test_consumer_group_describe_request_vector() -> None:
    body = ConsumerGroupDescribeRequest(group_ids=["a", "b"], include_authorized_operations=True)
    expected = b"\x03\x02a\x02b\x01\x00"
    assert bytes(encode_struct(body, 0, True)) == expected


def test_unknown_tagged_fields_survive() -> None:
    body = ConsumerGroupDescribeRequest(group_ids=["a"], unknown_tagged_fields={9: b"xyz", 3: b""})
    data = encode_struct(body, 1, True)
    assert decode_struct(ConsumerGroupDescribeRequest, data, 1, True) == body


def test_known_tagged_fields_written_only_when_set() -> None:
    plain = ApiVersionsResponse()
    assert bytes(encode_struct(plain, 3, True))[-1:] == b"\x00"
    tagged = ApiVersionsResponse(finalized_features_epoch=42, zk_migration_ready=True)
    decoded = decode_struct(ApiVersionsResponse, encode_struct(tagged, 3, True), 3, True)
    assert (decoded.finalized_features_epoch, decoded.zk_migration_ready) == (42, True)


@pytest.mark.parametrize(("spec", "version", "side"), TRUNCATION_CASES, ids=_ids(TRUNCATION_CASES))
def test_every_truncation_is_rejected(spec: ApiSpec, version: int, side: str) -> None:
    cls = _cls(spec, side)
    data = bytes(encode_struct(sample(cls, version, random.Random(1)), version, spec.flexible(version)))
    for cut in range(len(data)):
        with pytest.raises(CodecError):
            decode_struct(cls, data[:cut], version, spec.flexible(version))
    with pytest.raises(CodecError):
        decode_struct(cls, data + b"\x00", version, spec.flexible(version))


def test_hostile_array_count_is_rejected_cheaply() -> None:
    data = b"\x7f\xff\xff\xff"  # DescribeGroups v0: groups array claiming 2^31-1 entries
    with pytest.raises(CodecError):
        decode_struct(APIS[15].request, data, 0, False)


def test_unknown_api_and_version() -> None:
    with pytest.raises(UnsupportedApi):
        decode_request(struct.pack(">hhi", 999, 0, 1) + b"\xff\xff")
    with pytest.raises(UnsupportedVersion):
        decode_request(struct.pack(">hhi", 12, 99, 1) + b"\xff\xff")
