"""ShareFetch and ShareAcknowledge v2 (Kafka 4.2: KIP-1206 ShareAcquireMode, KIP-1222 IsRenewAck and
the AcquisitionLockTimeoutMs of ShareAcknowledge's answer) against byte vectors assembled by hand
from the published schemas. No client here speaks v2 (librdkafka 2.16's ShareConsumer sends v1), so
the layout is checked field by field: compact strings and arrays are length+1 varints, every struct
ends with an empty tag section."""

from __future__ import annotations

import struct
import uuid

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf

TOPIC = uuid.UUID(int=0xAB)


def _fetch() -> sf.ShareFetchRequest:
    batch = sf.ShareFetchRequestAcknowledgementBatch(first_offset=10, last_offset=11, acknowledge_types=[4])
    return sf.ShareFetchRequest(
        group_id="g",
        member_id="m",
        share_session_epoch=3,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=0,
        max_records=0,
        batch_size=0,
        share_acquire_mode=1,
        is_renew_ack=True,
        topics=[
            sf.ShareFetchRequestFetchTopic(
                topic_id=TOPIC,
                partitions=[sf.ShareFetchRequestFetchPartition(partition_index=2, acknowledgement_batches=[batch])],
            )
        ],
    )


def _fetch_head(version_2: bool) -> bytes:
    head = b"\x02g" + b"\x02m" + struct.pack(">iiiiii", 3, 0, 0, 0, 0, 0)
    # v2: ShareAcquireMode (int8) then IsRenewAck (bool), between BatchSize and Topics.
    return head + (b"\x01\x01" if version_2 else b"")


_FETCH_TOPICS = (
    b"\x02"
    + TOPIC.bytes
    + b"\x02"
    + struct.pack(">i", 2)
    + b"\x02"
    + struct.pack(">qq", 10, 11)
    + b"\x02\x04"
    + b"\x00"  # batch tags
    + b"\x00"  # partition tags
    + b"\x00"  # topic tags
    + b"\x01"  # no forgotten topics
    + b"\x00"  # message tags
)


def test_share_fetch_request_v2_vector() -> None:
    expected = _fetch_head(True) + _FETCH_TOPICS
    assert bytes(encode_struct(_fetch(), 2, True)) == expected
    assert decode_struct(sf.ShareFetchRequest, expected, 2, True) == _fetch()


def test_share_fetch_request_v1_has_neither_acquire_mode_nor_renew_flag() -> None:
    v1 = bytes(encode_struct(_fetch(), 1, True))
    assert v1 == _fetch_head(False) + _FETCH_TOPICS
    decoded = decode_struct(sf.ShareFetchRequest, v1, 1, True)
    assert (decoded.share_acquire_mode, decoded.is_renew_ack) == (0, False)


def test_share_acknowledge_request_v2_vector() -> None:
    batch = sa.ShareAcknowledgeRequestAcknowledgementBatch(first_offset=5, last_offset=6, acknowledge_types=[4, 1])
    body = sa.ShareAcknowledgeRequest(
        group_id="g",
        member_id="m",
        share_session_epoch=7,
        is_renew_ack=True,
        topics=[
            sa.ShareAcknowledgeRequestAcknowledgeTopic(
                topic_id=TOPIC,
                partitions=[
                    sa.ShareAcknowledgeRequestAcknowledgePartition(partition_index=0, acknowledgement_batches=[batch])
                ],
            )
        ],
    )
    tail = (
        b"\x02"
        + TOPIC.bytes
        + b"\x02"
        + struct.pack(">i", 0)
        + b"\x02"
        + struct.pack(">qq", 5, 6)
        + b"\x03\x04\x01"
        + b"\x00\x00\x00\x00"
    )
    expected = b"\x02g\x02m" + struct.pack(">i", 7) + b"\x01" + tail
    assert bytes(encode_struct(body, 2, True)) == expected
    assert decode_struct(sa.ShareAcknowledgeRequest, expected, 2, True) == body
    assert bytes(encode_struct(body, 1, True)) == b"\x02g\x02m" + struct.pack(">i", 7) + tail


def test_share_acknowledge_response_v2_carries_the_lock_timeout() -> None:
    body = sa.ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=30_000,
        responses=[
            sa.ShareAcknowledgeTopicResponse(
                topic_id=TOPIC,
                partitions=[
                    sa.ShareAcknowledgeResponsePartitionData(
                        partition_index=1,
                        error_code=0,
                        current_leader=sa.ShareAcknowledgeResponseLeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
                    )
                ],
            )
        ],
    )
    head = struct.pack(">ih", 0, 0) + b"\x00"  # throttle, error, null message
    tail = (
        b"\x02"
        + TOPIC.bytes
        + b"\x02"
        + struct.pack(">ih", 1, 0)
        + b"\x00"  # null message
        + struct.pack(">ii", -1, -1)
        + b"\x00"  # leader tags
        + b"\x00\x00"  # partition, topic tags
        + b"\x01"  # no node endpoints
        + b"\x00"
    )
    expected = head + struct.pack(">i", 30_000) + tail
    assert bytes(encode_struct(body, 2, True)) == expected
    assert decode_struct(sa.ShareAcknowledgeResponse, expected, 2, True) == body
    # v1 has no such field: the same answer without it.
    assert bytes(encode_struct(body, 1, True)) == head + tail


def test_share_fetch_response_v2_is_v1() -> None:
    """ShareFetchResponse v2 adds no field (its AcquisitionLockTimeoutMs is there since v1)."""
    body = sf.ShareFetchResponse(acquisition_lock_timeout_ms=15_000)
    assert bytes(encode_struct(body, 2, True)) == bytes(encode_struct(body, 1, True))
