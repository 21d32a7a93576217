"""A load leaves OffsetCommit values encoded (``groupcoord/records/offset_commit_decoding.py``):
what it takes must read back exactly as decoding each record at the load would have, and what it
cannot vouch for (damaged bytes, metadata, unusual keys) is left to the codec's path."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from groupcoord.coordinator.offsets import state as offsets_state
from groupcoord.coordinator.offsets.handlers import fetch_offsets, fetch_size
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.records import CoordinatorRecord, RecordDecodeError, RecordType, decode, encode
from groupcoord.records.codec import DEFAULT_CODEC
from groupcoord.records.definitions import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    PendingTxnOffset,
    PendingTxnOffsetsKey,
    PendingTxnOffsetsValue,
)
from groupcoord.records.offset_commit_decoding import (
    PLAIN_VALUE,
    KeptTimestamps,
    OffsetCommitRuns,
    Raw,
    decode_offset_value,
)

_LONG = st.integers(-(2**63), 2**63 - 1)
_TOPIC_ID = st.one_of(
    st.none(), st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=22, max_size=22)
)
_VALUES = st.builds(
    OffsetCommitValue,
    offset=_LONG,
    leader_epoch=st.integers(-(2**31), 2**31 - 1),
    metadata=st.one_of(st.just(""), st.text(max_size=5)),
    commit_timestamp=_LONG,
    expire_timestamp=_LONG,
    topic_id=st.one_of(_TOPIC_ID, st.text(max_size=30)),
    producer_id=st.one_of(st.just(-1), _LONG),
)
HANDLERS = GroupCoordinatorShard()
_NAMES = st.one_of(st.sampled_from(["g", "orders", "é"]), st.text(max_size=80))


def encoded_value(value: OffsetCommitValue) -> bytes:
    data = DEFAULT_CODEC.encode_value(RecordType.OFFSET_COMMIT, value)
    assert data is not None
    return data


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_a_value_left_encoded_reads_back_as_the_codec_decodes_it(value: OffsetCommitValue) -> None:
    data = encoded_value(value)
    plain = value.metadata == "" and (
        value.topic_id is None or (len(value.topic_id) == 22 and value.topic_id.isascii())
    )
    assert (PLAIN_VALUE is not None and PLAIN_VALUE.fullmatch(data) is not None) == plain
    if plain:
        assert decode_offset_value(data[2:]) == value == DEFAULT_CODEC.decode_value(RecordType.OFFSET_COMMIT, data)
        # The retention sweep's reading of the timestamps alone, twice (the second remembered).
        read = KeptTimestamps()
        assert read(data[2:]) == read(data[2:]) == (value.commit_timestamp, value.expire_timestamp)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.lists(st.tuples(st.sampled_from("fdit"), st.integers(0, 80), st.integers(0, 255)), max_size=3))
def test_damaged_values_are_left_encoded_only_when_they_decode(
    value: OffsetCommitValue, damage: list[tuple[str, int, int]]
) -> None:
    data = bytearray(encoded_value(value))
    for kind, at, byte in damage:
        at = min(at, len(data))
        if kind == "f" and at < len(data):
            data[at] = byte
        elif kind == "d" and at < len(data):
            del data[at]
        elif kind == "i":
            data.insert(at, byte)
        else:
            del data[at:]
    assert PLAIN_VALUE is not None
    if PLAIN_VALUE.fullmatch(bytes(data)) is not None:
        assert decode_offset_value(bytes(data[2:])) == DEFAULT_CODEC.decode_value(RecordType.OFFSET_COMMIT, bytes(data))


def _record(kind: int, group: str, topic: str, partition: int, value: OffsetCommitValue) -> tuple[bytes, bytes | None]:
    if kind == 0:
        return encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, topic, partition), value))
    if kind == 1:  # a tombstone
        return encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, topic, partition), None))
    if kind == 2:  # another record type
        return encode(
            CoordinatorRecord(
                RecordType.GROUP_METADATA, GroupMetadataKey(group), GroupMetadataValue("consumer", 1, None, None)
            )
        )
    key, data = encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, topic, partition), value))
    if kind == 3:  # bytes after the partition: the codec's path decides
        return key + b"\x00", data
    return key[:-1], data  # a truncated key: unreadable


_RECORDS = st.lists(
    st.tuples(
        st.sampled_from([0, 0, 0, 0, 1, 2, 3, 4]),
        _NAMES,
        st.sampled_from(["t", "topic-é"]),
        st.one_of(st.integers(0, 70), st.integers(-(2**31), 2**31 - 1)),
        _VALUES,
        st.integers(1, 4),  # how many partitions of the same group and topic follow
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(_RECORDS)
def test_runs_place_every_record_they_take_where_decoding_it_would(
    specs: list[tuple[int, str, str, int, OffsetCommitValue, int]],
) -> None:
    raws: list[Raw] = []
    for kind, group, topic, partition, value, repeat in specs:
        for p in range(partition, partition + repeat):
            key, data = _record(kind, group, topic, p, value)
            raws.append((len(raws), key, data))
    runs = OffsetCommitRuns()
    at = 0
    while at < len(raws):
        taken, stop = runs.read(raws, at)
        placed: dict[tuple[str, str, int], OffsetCommitValue] = {}
        for g, t, encoded in taken:
            placed.update(((g, t, p), decode_offset_value(v)) for p, v in encoded.items())
        expected = {}
        for _, key, data in raws[at:stop]:
            record = decode(key, data)
            expected[(record.key.group, record.key.topic, record.key.partition)] = record.value
        assert placed == expected
        if stop < len(raws):  # left to the codec: a tombstone, another type, or bytes it must judge
            assert not takeable(raws[stop][1], raws[stop][2])
        at = stop + 1


def takeable(key: bytes, data: bytes | None) -> bool:
    """An OffsetCommit record with a plain value and its key as the codec writes it."""
    try:
        record = decode(key, data)
    except RecordDecodeError:
        return False
    plain = data is not None and PLAIN_VALUE is not None and PLAIN_VALUE.fullmatch(data) is not None
    return record.type == RecordType.OFFSET_COMMIT and plain and encode(record)[0] == key


def load(entries: list[tuple[bytes, bytes | None]], eager: bool) -> GroupCoordinatorState:
    """A deferred load of the entries; ``eager``: into a state that takes records one by one only."""
    state = GroupCoordinatorState()

    class OneByOne:
        replay = state.replay
        snapshot = state.snapshot

    replayer = LogReplayer("log", 0, [OneByOne() if eager else state], deferred=True)
    for offset, (key, value) in enumerate(entries):
        replayer.feed(offset, key, value, make_headers(1, 0, 1))
    replayer.finish()
    return state


def test_a_load_keeps_offset_values_encoded_and_reads_them_as_an_eager_load() -> None:
    rng = random.Random(26)
    entries = []
    for i in range(400):
        group, partition = f"g{rng.randrange(40)}", rng.randrange(12)
        value = OffsetCommitValue(i, rng.choice([-1, 3]), rng.choice(["", "", "", "meta"]), 1_000 + i, -1, None)
        entries.append(
            encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, "t", partition), value))
        )
        if rng.random() < 0.1:
            entries.append(
                encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, "t", partition), None))
            )
    lazy, eager = load(entries, eager=False), load(entries, eager=True)
    assert lazy.snapshot() == eager.snapshot()
    held = [v for topics in lazy.offsets.offsets.values() for ps in topics.values() for v in ps.slots.values()]
    assert held and any(type(v) is bytes for v in held)  # left encoded
    assert all(
        type(v) is OffsetCommitValue
        for ts in eager.offsets.offsets.values()
        for ps in ts.values()
        for v in ps.slots.values()
    )
    for group, topics in eager.offsets.offsets.items():
        for topic, partitions in topics.items():
            for partition, value in partitions.items():
                assert lazy.offsets.get(group, topic, partition) == value


def test_a_plain_commit_loaded_after_a_staged_transactional_offset_still_overtakes_it() -> None:
    staged = PendingTxnOffsetsValue("tx", 0, [PendingTxnOffset("t", 0, 5), PendingTxnOffset("t", 1, 6)], 0)
    entries = [
        encode(CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, PendingTxnOffsetsKey("g", 7, 0), staged)),
        *(
            encode(
                CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(g, "t", p), OffsetCommitValue(9, -1, "", 1))
            )
            for g in ("g", "other")
            for p in (0, 2)
        ),
    ]
    lazy, eager = load(entries, eager=False), load(entries, eager=True)
    assert lazy.snapshot() == eager.snapshot()
    assert lazy.txn.pending[7][(0, "g")].superseded == {("t", 0)}


def test_an_offset_fetch_decodes_each_value_kept_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sizing the answer (``fetch_size``) reads no kept value: they have no metadata.
    entries = [
        encode(
            CoordinatorRecord(
                RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", p), OffsetCommitValue(p, -1, "", 1_000 + p)
            )
        )
        for p in range(20)
    ]
    lazy, eager = load(entries, eager=False), load(entries, eager=True)
    decoded: list[bytes] = []

    def counting(kept: bytes) -> OffsetCommitValue:
        decoded.append(kept)
        return decode_offset_value(kept)

    monkeypatch.setattr(offsets_state, "decode_offset_value", counting)
    for request in (
        OffsetFetchRequestGroup(group_id="g", topics=None),
        OffsetFetchRequestGroup(
            group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0, 5, 99])]
        ),
    ):
        decoded.clear()
        answer = (fetch_size(lazy.offsets, request), fetch_offsets(lazy.offsets, request))
        assert answer == (fetch_size(eager.offsets, request), fetch_offsets(eager.offsets, request))
        assert len(decoded) == (20 if request.topics is None else 2)


def test_the_retention_sweep_reads_kept_values_without_decoding_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    entries = [
        encode(
            CoordinatorRecord(
                RecordType.OFFSET_COMMIT,
                OffsetCommitKey(f"g{g}", "t", p),
                OffsetCommitValue(p, -1, "", rng.choice([1_000, 5_000, 9_000]), rng.choice([-1, -1, 4_000])),
            )
        )
        for g in range(5)
        for p in range(8)
    ]
    lazy, eager = load(entries, eager=False), load(entries, eager=True)
    decoded: list[bytes] = []

    def counting(kept: bytes) -> OffsetCommitValue:
        decoded.append(kept)
        return decode_offset_value(kept)

    monkeypatch.setattr(offsets_state, "decode_offset_value", counting)
    week = 7 * 24 * 3_600_000  # the default retention
    sizes = []
    for now in (3_000, 4_000, week + 2_000, week + 6_000, week + 10_000):
        swept = [(r.key, r.value) for r in HANDLERS.expire_offsets(lazy, now).records]
        assert swept == [(r.key, r.value) for r in HANDLERS.expire_offsets(eager, now).records]
        sizes.append(len(swept))
    assert sizes[0] == 0 < sizes[1] < sizes[2] < sizes[3] < sizes[4]  # each timestamp decides
    assert decoded == []
