"""ConsumerProtocolSubscription / ConsumerProtocolAssignment codecs (v0-v3)."""

from __future__ import annotations

import struct

import pytest

from groupcoord.coordinator.groups.classic import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.groups.classic.consumer_protocol import ConsumerProtocolError, subscribed_topics

FULL = Subscription(
    topics=("a", "b"),
    user_data=b"\x01\x02",
    owned_partitions=(TopicPartitions("a", (0, 2)),),
    generation_id=7,
    rack_id="rack-1",
)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trip_per_version(version: int) -> None:
    decoded = decode_subscription(encode_subscription(FULL, version))
    assert decoded.topics == FULL.topics and decoded.user_data == FULL.user_data
    assert decoded.owned_partitions == (FULL.owned_partitions if version >= 1 else ())
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("rack-1" if version >= 3 else None)


def test_known_bytes_of_a_v0_subscription() -> None:
    # int16 version, [string] topics, nullable bytes user data (-1 = null).
    expected = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">i", -1)
    assert encode_subscription(Subscription(("t",)), 0) == expected


def test_newer_versions_are_read_with_the_newest_known_format() -> None:
    data = bytearray(encode_subscription(FULL, 3))
    data[0:2] = struct.pack(">h", 9)
    data += b"future fields"
    assert decode_subscription(bytes(data)).rack_id == "rack-1"
    assert subscribed_topics(bytes(data)) == ("a", "b")


def test_assignment_round_trip() -> None:
    a = Assignment((TopicPartitions("a", (1,)), TopicPartitions("b", (0, 3))), user_data=None)
    for version in range(4):
        assert decode_assignment(encode_assignment(a, version)) == a


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05ab", b"\xff\xff"])
def test_garbage_is_rejected(bad: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(bad)
