"""The commit path's fast pieces give exactly what the plain ones give: records made by slot
(``offset_commit_record``), a run of OffsetCommit records encoded in one loop
(``OffsetCommitEncoder.encode_run`` through ``encode_all``), and a commit's records replayed in
one loop (``GroupCoordinatorState.replay_all``)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.runtime.api import replay_all
from groupcoord.records import CoordinatorRecord, RecordCodec, RecordType
from groupcoord.records.definitions import (
    OffsetCommitKey,
    OffsetCommitValue,
    PendingTxnOffset,
    PendingTxnOffsetsKey,
    PendingTxnOffsetsValue,
)
from groupcoord.records.offset_commit_records import offset_commit_record, plain_offset_commit_record

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_ROWS = st.tuples(
    st.sampled_from(["g", "group-ü", ""]),
    st.sampled_from(["t", "topic-2"]),
    st.one_of(st.integers(0, 200), _INT32),
    st.one_of(st.integers(0, 10**6), _INT64),
    st.one_of(st.just(-1), _INT32),
    st.one_of(st.just(""), st.text(max_size=80)),
    st.sampled_from([0, 1795651224840, -1]),
    st.sampled_from([-1, 1795651224840]),
    st.none() | st.sampled_from(["AAAAAAAAAAAAAAAAAAAAAA", "x"]),
)


@settings(deadline=None)
@given(_ROWS)
def test_made_by_slot_equals_the_constructors(row: tuple[Any, ...]) -> None:
    fast, plain = offset_commit_record(*row), plain_offset_commit_record(*row)
    assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
    assert type(fast.key) is OffsetCommitKey and type(fast.value) is OffsetCommitValue
    assert type(plain.value) is OffsetCommitValue
    assert fast.value.producer_id == -1
    assert pickle.loads(pickle.dumps(fast)) == plain
    assert replace(fast.value, offset=7) == replace(plain.value, offset=7)


def _record(row: tuple[Any, ...], producer_id: int, tombstone: bool) -> CoordinatorRecord:
    record = offset_commit_record(*row)
    if tombstone:
        return CoordinatorRecord(RecordType.OFFSET_COMMIT, record.key, None)
    if producer_id < 0:
        return record
    assert record.value is not None
    return replace(record, value=replace(record.value, producer_id=producer_id))


# Staged transactional offsets of partitions the runs commit: replayed among them, they make
# the later plain commits overtake them (record by record, see ``replay_all``).
_OTHER = CoordinatorRecord(
    RecordType.PENDING_TXN_OFFSETS,
    PendingTxnOffsetsKey(group="g", producer_id=7, txn_offset=3),
    PendingTxnOffsetsValue("tx", 1, [PendingTxnOffset("t", 1, 5), PendingTxnOffset("topic-2", 0, 6)]),
)


@st.composite
def _commit_logs(draw: st.DrawFn) -> list[CoordinatorRecord]:
    """Runs of commits (several sharing group, topic and timestamps, as one commit's do) mixed
    with tombstones, transactional commits (version 2) and another record type."""
    out: list[CoordinatorRecord] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["run", "run", "tombstone", "txn", "other"]))
        row = draw(_ROWS)
        if kind == "other":
            out.append(_OTHER)
            continue
        for partition in draw(st.lists(st.integers(0, 300), min_size=1, max_size=8)):
            offset = draw(st.integers(0, 2**40))
            one = (*row[:2], partition, offset, *row[4:])
            out.append(_record(one, 9 if kind == "txn" else -1, kind == "tombstone"))
    return out


@settings(max_examples=200, deadline=None)
@given(_commit_logs())
def test_encode_all_of_commit_runs_is_encode_of_each(records: list[CoordinatorRecord]) -> None:
    codec = RecordCodec()
    assert codec.encode_all(records) == [codec.encode(r) for r in records]


@settings(max_examples=200, deadline=None)
@given(_commit_logs(), _commit_logs())
def test_replay_all_is_replay_of_each(before: list[CoordinatorRecord], records: list[CoordinatorRecord]) -> None:
    bulk, each = GroupCoordinatorState(), GroupCoordinatorState()
    for record in before:
        bulk.replay(record)
        each.replay(record)
    replay_all(bulk, records)
    for record in records:
        each.replay(record)
    assert bulk.snapshot() == each.snapshot()
