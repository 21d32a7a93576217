"""A plain commit's records as columns (``OffsetCommitRun``): the same bytes as fastavro writes for
each record, the same records, and the same offsets states as replaying the records one by one."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.offsets import handlers
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.offsets.handlers import CommitVerdict, commit_offsets
from groupcoord.coordinator.offsets.state import OffsetsState
from groupcoord.coordinator.runtime.api import replay_all
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.avro import to_avro
from groupcoord.records.definitions import DEFINITIONS, OffsetCommitKey, OffsetCommitValue
from groupcoord.records.offset_commit_decoding import PLAIN_VALUE
from groupcoord.records.offset_commit_run import RUNS_ENABLED, OffsetCommitRun, encode_columns

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_DEFINITION = next(d for d in DEFINITIONS if d.type == RecordType.OFFSET_COMMIT)
CONFIG = OffsetsConfig()


def _fastavro(schema: Any, datum: Any) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), to_avro(datum))
    return buf.getvalue()


def _expected(run: OffsetCommitRun) -> tuple[list[bytes], list[bytes]]:
    """Each record of ``run`` written by fastavro: the key, and the value in version 1 (a plain
    commit's, the oldest version that holds it)."""
    keys, values = [], []
    for name, topic_id, partitions, offsets, epochs in run.topics:
        for partition, offset, epoch in zip(partitions, offsets, epochs, strict=True):
            key = OffsetCommitKey(run.group, name, partition)
            value = OffsetCommitValue(offset, epoch, "", run.commit_timestamp, run.expire_timestamp, topic_id)
            keys.append(b"\x00\x01" + _fastavro(_DEFINITION.key_schema, key))
            values.append(b"\x00\x01\x00\x01" + _fastavro(_DEFINITION.value_schemas[1], value))
    return keys, values


@st.composite
def _runs(draw: st.DrawFn) -> OffsetCommitRun:
    topics = []
    for _ in range(draw(st.integers(0, 3))):
        # One-byte and two-byte partitions (those the encoder looks up), others, negative ones.
        partitions = draw(st.lists(st.integers(0, 63) | st.integers(64, 1100) | _INT32, max_size=8))
        # Offsets of every varint length the encoder makes in one call, and longer.
        offsets = draw(st.lists(_INT64 | st.integers(0, 2**36), min_size=len(partitions), max_size=len(partitions)))
        epochs = draw(st.lists(st.just(-1) | _INT32, min_size=len(partitions), max_size=len(partitions)))
        name = draw(st.sampled_from(["t", "topic-ü", "", "x" * 70]))
        topic_id = draw(st.none() | st.sampled_from(["AAAAAAAAAAAAAAAAAAAAAA", "q83vEjRWeJCrze8SNFZ4kA"]))
        topics.append((name, topic_id, partitions, offsets, epochs))
    group = draw(st.sampled_from(["g", "group-ü", ""]))
    committed = draw(st.sampled_from([0, 1795651224840, -1]))
    expires = draw(st.sampled_from([-1, 1795651224840, 2**62]))
    return OffsetCommitRun(group, committed, expires, topics)


pytestmark = pytest.mark.skipif(not RUNS_ENABLED, reason="the shipped definitions have no plain commit run")


@settings(max_examples=300)
@given(_runs())
def test_run_bytes_are_fastavro_bytes(run: OffsetCommitRun) -> None:
    keys, values = run.encoded()
    assert (keys, values) == _expected(run)
    # Each value kept by the states is the shape a load keeps (and decodes) without decoding.
    assert PLAIN_VALUE is not None
    assert all(PLAIN_VALUE.fullmatch(b"\x00\x01" + kept) for kept in run.kept())
    assert run.kept() == [v[2:] for v in values]


@settings(max_examples=100)
@given(_runs())
def test_run_is_its_records(run: OffsetCommitRun) -> None:
    records = [
        CoordinatorRecord(
            RecordType.OFFSET_COMMIT,
            OffsetCommitKey(run.group, name, partition),
            OffsetCommitValue(offset, epoch, "", run.commit_timestamp, run.expire_timestamp, topic_id),
        )
        for name, topic_id, partitions, offsets, epochs in run.topics
        for partition, offset, epoch in zip(partitions, offsets, epochs, strict=True)
    ]
    assert len(run) == len(records) and list(run) == records and run == records
    assert run[1:] == records[1:] and (not records or run[-1] == records[-1])
    # What the shard hands the log: the run's own columns, the codec's bytes for the records.
    assert encode_columns(run) == encode_columns(records)


@settings(max_examples=100)
@given(st.lists(_runs(), max_size=4))
def test_replaying_runs_is_replaying_their_records(runs: list[OffsetCommitRun]) -> None:
    by_run, by_record = GroupCoordinatorState(), GroupCoordinatorState()
    for run in runs:
        replay_all(by_run, run)
        for record in list(run):
            by_record.replay(record)
    assert by_run.snapshot() == by_record.snapshot()
    assert by_run.offsets.snapshot() == by_record.offsets.snapshot()


def test_a_run_replays_over_a_loaded_group_and_a_tombstone_after_it() -> None:
    state = OffsetsState()
    state.replay(
        CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 1), OffsetCommitValue(5, -1, "m", 1, -1))
    )
    state.replay_run(OffsetCommitRun("g", 7, -1, [("t", None, [0, 1], [10, 11], [-1, 3])]))
    assert state.get("g", "t", 1) == OffsetCommitValue(11, 3, "", 7, -1)
    state.replay(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), None))
    assert state.snapshot() == {"g": {"t": {1: OffsetCommitValue(11, 3, "", 7, -1)}}}


def _request(topics: list[tuple[str, list[tuple[int, int, str | None]]]], topic_id: uuid.UUID | None = None) -> Any:
    return OffsetCommitRequest(
        group_id="g",
        topics=[
            OffsetCommitRequestTopic(
                name=name,
                topic_id=topic_id or uuid.UUID(int=0),
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata=m)
                    for p, o, m in parts
                ],
            )
            for name, parts in topics
        ],
    )


@pytest.mark.parametrize(
    ("topics", "verdict", "as_run"),
    [
        ([("t", [(0, 5, ""), (1, 6, None)]), ("u", [(70, 2**40, "")])], CommitVerdict(), True),
        ([("t", [(0, 5, ""), (1, 6, "meta")])], CommitVerdict(), False),  # metadata: records as before
        (
            [("t", [(0, 5, ""), (1, 6, "")])],
            CommitVerdict(partition_errors={("t", 1): ErrorCode.STALE_MEMBER_EPOCH}),
            False,
        ),
        ([("t", [])], CommitVerdict(), False),  # nothing to write
        ([("t", [(3, 5, "")])], CommitVerdict(), False),  # one record: made as before
    ],
)
def test_the_handler_answers_and_writes_as_without_runs(
    topics: Any, verdict: CommitVerdict, as_run: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = _request(topics, uuid.UUID("abababab-abab-abab-abab-abababababab"))
    result = commit_offsets(OffsetsState(), request, 1000, CONFIG, verdict)
    assert (type(result.records) is OffsetCommitRun) == as_run
    monkeypatch.setattr(handlers, "RUNS_ENABLED", False)
    without = commit_offsets(OffsetsState(), request, 1000, CONFIG, verdict)
    assert type(without.records) is list
    assert result.response == without.response
    assert result.records == without.records and list(result.records) == without.records
