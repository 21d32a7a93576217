"""Record codecs: round trips, deterministic keys, tombstones, schema evolution, bad bytes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.records import CoordinatorRecord, RecordCodec, RecordDecodeError, RecordType, decode, encode, encode_key
from groupcoord.records.avro import record
from groupcoord.records.codec import VALUE_MEMO_KEYS
from groupcoord.records.definitions import (
    DEFINITIONS,
    ClassicMemberInConsumerGroup,
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberKey,
    ConsumerGroupMemberMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDef,
    TopicPartitionsWithEpochs,
)


def test_every_dataclass_matches_its_newest_schema() -> None:
    for d in DEFINITIONS:
        schema_fields = [f["name"] for f in d.value_schemas[d.latest_version]["fields"]]
        assert schema_fields == [f.name for f in dataclasses.fields(d.value_cls)], d.type.name
        key_fields = [f["name"] for f in d.key_schema["fields"]]
        assert key_fields == [f.name for f in dataclasses.fields(d.key_cls)], d.type.name


def test_added_fields_always_have_defaults() -> None:
    for d in DEFINITIONS:
        versions = sorted(d.value_schemas)
        for old, new in zip(versions, versions[1:], strict=False):
            old_names = {f["name"] for f in d.value_schemas[old]["fields"]}
            for f in d.value_schemas[new]["fields"]:
                assert f["name"] in old_names or "default" in f, (
                    f"{d.type.name} v{new} adds {f['name']} without default"
                )


@given(
    group=st.text(max_size=20),
    topic=st.text(max_size=20),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(-1, 2**63 - 1),
    metadata=st.text(max_size=50),
    topic_id=st.none() | st.text(min_size=1, max_size=22),
)
def test_offset_commit_round_trip(
    group: str, topic: str, partition: int, offset: int, metadata: str, topic_id: str | None
) -> None:
    r = CoordinatorRecord(
        RecordType.OFFSET_COMMIT,
        OffsetCommitKey(group, topic, partition),
        OffsetCommitValue(offset, 3, metadata, 1234, -1, topic_id),
    )
    assert decode(*encode(r)) == r


def test_nested_records_round_trip() -> None:
    classic = CoordinatorRecord(
        RecordType.GROUP_METADATA,
        GroupMetadataKey("g"),
        GroupMetadataValue(
            "consumer", 4, "range", "m1", 99, [ClassicMemberMetadata("m1", "i1", "c", "h", 1, 2, b"s", b"a")]
        ),
    )
    current = CoordinatorRecord(
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        ConsumerGroupMemberKey("g", "m"),
        ConsumerGroupCurrentMemberAssignmentValue(
            3, 2, 1, [TopicPartitionsWithEpochs("tid", [0, 1], [3, 3])], [TopicPartitionsWithEpochs("x", [2], [1])]
        ),
    )
    for r in (classic, current):
        assert decode(*encode(r)) == r


def test_tombstone_and_deterministic_keys() -> None:
    key = OffsetCommitKey("g", "t", 1)
    tomb = CoordinatorRecord(RecordType.OFFSET_COMMIT, key, None)
    k, v = encode(tomb)
    assert v is None
    assert decode(k, v) == tomb
    assert encode_key(RecordType.OFFSET_COMMIT, key) == encode_key(
        RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 1)
    )
    # Same fields under a different record type are a different slot.
    member = ConsumerGroupMemberKey("g", "m")
    assert encode_key(RecordType.CONSUMER_GROUP_MEMBER_METADATA, member) != encode_key(
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, member
    )


@dataclass(frozen=True, slots=True)
class _KeyV:
    group: str


@dataclass(frozen=True, slots=True)
class _ValueV1:
    count: int


@dataclass(frozen=True, slots=True)
class _ValueV2:
    count: int
    label: str = "none"
    tags: list[str] = dataclasses.field(default_factory=list)


def test_version_n_is_read_after_version_n_plus_1_adds_a_field() -> None:
    key_schema = record("K", [("group", "string")])
    v1 = record("V", [("count", "long")])
    v2 = record(
        "V", [("count", "long"), ("label", "string", "none"), ("tags", {"type": "array", "items": "string"}, [])]
    )
    old = RecordCodec((RecordDef(RecordType.OFFSET_COMMIT, _KeyV, key_schema, _ValueV1, {1: v1}),))
    new = RecordCodec((RecordDef(RecordType.OFFSET_COMMIT, _KeyV, key_schema, _ValueV2, {1: v1, 2: v2}),))
    written_by_old = old.encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, _KeyV("g"), _ValueV1(7)))
    read = new.decode(*written_by_old)
    assert read.value == _ValueV2(7, "none", [])
    written_by_new = new.encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, _KeyV("g"), _ValueV2(8, "x", ["a"])))
    assert new.decode(*written_by_new).value == _ValueV2(8, "x", ["a"])
    # Keys never change across versions, so compaction still pairs old and new records.
    assert written_by_old[0] == written_by_new[0]


_COMMIT_VALUE = encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), OffsetCommitValue(1)))[
    1
]
assert _COMMIT_VALUE is not None


@pytest.mark.parametrize(
    "key,value",
    [
        (None, b"x"),
        (b"\x00", None),
        (b"\x00\x63\x00", None),  # unknown type 99
        (b"\x00\x01\x02g", b"\x00\x01\x00\x01"),  # truncated key body
        (
            encode_key(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0)),
            b"\x00\x01\x00\x09\x02",
        ),  # unknown version
        (encode_key(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0)), b"\x00\x02\x00\x01\x02"),  # type mismatch
        (encode_key(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0)), b"\x00\x01\x00\x01\xff\xff"),
        (encode_key(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0)), _COMMIT_VALUE + b"junk"),
    ],
)
def test_unreadable_bytes_raise_decode_error(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(RecordDecodeError):
        decode(key, value)


def test_a_value_is_written_in_the_oldest_version_that_holds_it() -> None:
    """A plain commit stays OffsetCommitValue v1, which every earlier release reads (a rolling
    upgrade moves shards between releases); only a transaction's commit, with its producer id,
    needs v2."""
    from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
    from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue

    key = OffsetCommitKey("g", "t", 0)
    for value, version in ((OffsetCommitValue(5, metadata="m"), 1), (OffsetCommitValue(5, producer_id=7), 2)):
        record = CoordinatorRecord(RecordType.OFFSET_COMMIT, key, value)
        raw_key, raw_value = encode(record)
        assert raw_value is not None and int.from_bytes(raw_value[2:4], "big") == version
        assert decode(raw_key, raw_value) == record


# Per memoized value class: each field's value in a base value and another one (a field added to
# the class and not here fails the test: its memo key must take the new field too).
_MEMO_FIELDS: dict[type, dict[str, tuple[object, object]]] = {
    ConsumerGroupMemberMetadataValue: {
        "client_id": ("c", "d"),
        "client_host": ("/h", "/i"),
        "rebalance_timeout_ms": (1000, 2000),
        "instance_id": (None, "i"),
        "rack_id": (None, "r"),
        "subscribed_topic_names": (["a"], ["a", "b"]),
        "subscribed_topic_regex": (None, "a.*"),
        "server_assignor": (None, "range"),
        "classic_member_metadata": (None, None),  # a value with it is never memoized
    },
    ConsumerGroupCurrentMemberAssignmentValue: {
        "member_epoch": (3, 4),
        "previous_member_epoch": (2, 3),
        "state": (0, 1),
        "assigned_partitions": ([], []),  # a value with partitions is never memoized
        "partitions_pending_revocation": ([], []),
    },
}


@pytest.mark.parametrize("record_type", sorted(VALUE_MEMO_KEYS))
def test_a_memoized_value_is_keyed_by_every_field_and_written_as_without_the_memo(record_type: RecordType) -> None:
    cls = next(d.value_cls for d in DEFINITIONS if d.type == record_type)
    alternatives = _MEMO_FIELDS[cls]
    assert set(alternatives) == {f.name for f in dataclasses.fields(cls)}
    memo_key = VALUE_MEMO_KEYS[record_type]
    codec = RecordCodec()
    base = cls(**{name: pair[0] for name, pair in alternatives.items()})
    key = ConsumerGroupMemberKey("g", "m")
    for name, (_, other) in alternatives.items():
        changed = dataclasses.replace(base, **{name: other})
        assert (memo_key(changed) == memo_key(base)) == (changed == base), name
        for value in (base, changed, base, changed):  # the second time from the memo
            assert codec.encode_all([CoordinatorRecord(record_type, key, value)]) == [
                (encode_key(record_type, key), RecordCodec().encode_value(record_type, value))
            ]
    for value in (
        dataclasses.replace(base, classic_member_metadata=ClassicMemberInConsumerGroup(45000))
        if cls is ConsumerGroupMemberMetadataValue
        else dataclasses.replace(base, assigned_partitions=[TopicPartitionsWithEpochs("t", [0], [3])]),
    ):
        assert memo_key(value) is None
