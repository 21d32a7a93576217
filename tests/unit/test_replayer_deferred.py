"""A deferred load (decode only the last effective record of each key) rebuilds exactly the
state that replaying every record one by one does, under every log rule: tombstones, atomic
batches, batch aborts and fenced epochs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.group_shard import GroupCoordinatorState
from coordinator.runtime.headers import make_headers
from coordinator.runtime.replayer import LogReadError, LogReplayer
from records import CoordinatorRecord, RecordType, encode
from records.definitions import (
    BatchAbortKey,
    BatchAbortValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShardEpochKey,
    ShardEpochValue,
)

Entry = tuple[bytes, bytes | None, list[tuple[str, bytes]]]


@dataclass
class LogBuilder:
    entries: list[Entry]

    def add(self, record: CoordinatorRecord, epoch: int, index: int = 0, count: int = 1) -> None:
        key, value = encode(record)
        self.entries.append((key, value, make_headers(epoch, index, count)))


def commit(group: str, partition: int, offset: int | None) -> CoordinatorRecord:
    value = None if offset is None else OffsetCommitValue(offset, -1, "", 1_000 + offset, -1, None)
    return CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, "t", partition), value)


def shard_epoch(epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.SHARD_EPOCH, ShardEpochKey(epoch), ShardEpochValue(epoch, "p", 0))


def replay(entries: list[Entry], deferred: bool) -> tuple[GroupCoordinatorState, LogReplayer]:
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 0, [state], deferred=deferred)
    for offset, (key, value, headers) in enumerate(entries):
        replayer.feed(offset, key, value, headers)
    replayer.finish()
    return state, replayer


def assert_same_state(entries: list[Entry]) -> LogReplayer:
    eager, _ = replay(entries, deferred=False)
    deferred, replayer = replay(entries, deferred=True)
    assert deferred.snapshot() == eager.snapshot()
    return replayer


def test_deferred_load_keeps_the_last_value_of_each_key_and_decodes_only_those() -> None:
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    for i in range(100):
        log.add(commit("g", i % 4, i), 1)
    log.add(commit("g", 3, None), 1)  # a tombstone is the last word for its key
    replayer = assert_same_state(log.entries)
    assert replayer.read == 102
    assert replayer.applied == 4  # three surviving offsets and one tombstone


def test_deferred_load_drops_fenced_and_aborted_records_like_a_full_replay() -> None:
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    log.add(commit("g", 0, 5), 1)
    log.add(shard_epoch(2), 2)
    log.add(commit("g", 0, 99), 1)  # a zombie of epoch 1 writes after epoch 2 began: ignored
    log.add(commit("g", 1, 7), 2, 0, 2)  # a batch cut short ...
    log.add(
        CoordinatorRecord(RecordType.BATCH_ABORT, BatchAbortKey(4), BatchAbortValue(4, 4, 3)), 3
    )  # ... aborted by the next owner
    log.add(commit("g", 2, 8), 3, 0, 2)
    log.add(commit("g", 2, 9), 3, 1, 2)  # a complete batch applies
    state, _ = replay(log.entries, deferred=True)
    assert_same_state(log.entries)
    assert state.offsets.get("g", "t", 0) is not None and state.offsets.get("g", "t", 0).offset == 5
    assert state.offsets.get("g", "t", 1) is None
    assert state.offsets.get("g", "t", 2) is not None and state.offsets.get("g", "t", 2).offset == 9


def test_a_batch_still_open_at_the_end_of_a_deferred_load_is_reported_and_never_applied() -> None:
    log = LogBuilder([])
    log.add(commit("g", 0, 1), 1)
    log.add(commit("g", 1, 2), 1, 0, 3)
    log.add(commit("g", 2, 3), 1, 1, 3)
    state, replayer = replay(log.entries, deferred=True)
    assert replayer.open_batch() == (1, 2)
    assert state.offsets.get("g", "t", 1) is None
    assert state.offsets.get("g", "t", 0) is not None


def test_an_unreadable_surviving_record_fails_the_deferred_load_naming_its_offset() -> None:
    log = LogBuilder([])
    log.add(commit("g", 0, 1), 1)
    key, _ = encode(commit("g", 1, 1))
    log.entries.append((key, b"\x00\x01\x00\x01garbage", make_headers(1, 0, 1)))
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 7, [state], deferred=True)
    for offset, (k, v, h) in enumerate(log.entries):
        replayer.feed(offset, k, v, h)
    with pytest.raises(LogReadError, match="partition 7 offset 1"):
        replayer.finish()


def test_records_fed_after_finish_apply_at_once() -> None:
    log = LogBuilder([])
    log.add(commit("g", 0, 1), 1)
    state, replayer = replay(log.entries, deferred=True)
    key, value = encode(commit("g", 0, 2))
    replayer.feed(1, key, value, make_headers(1, 0, 1))
    assert state.offsets.get("g", "t", 0) is not None and state.offsets.get("g", "t", 0).offset == 2


def test_classic_group_records_survive_a_deferred_load() -> None:
    log = LogBuilder([])
    for generation in range(3):
        value = GroupMetadataValue("consumer", generation, "range", None, 0, [])
        log.add(CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey("cg"), value), 1)
    assert_same_state(log.entries)


# A random log of commits and tombstones over a few keys, cut into batches, written by owners
# whose epochs move forward while some old owners keep writing (zombies), with aborts.
_op = st.tuples(
    st.integers(0, 5),  # partition (the key)
    st.one_of(st.none(), st.integers(0, 1000)),  # offset or tombstone
    st.integers(1, 4),  # writer epoch
    st.integers(1, 3),  # batch size this record starts (1 = no batch)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_op, max_size=60), st.lists(st.integers(0, 59), max_size=4))
def test_deferred_and_eager_replays_agree_on_random_logs(
    ops: list[tuple[int, int | None, int, int]], aborts: list[int]
) -> None:
    log = LogBuilder([])
    epoch_seen = 0
    i = 0
    while i < len(ops):
        partition, offset, epoch, size = ops[i]
        if epoch > epoch_seen:
            log.add(shard_epoch(epoch), epoch)
            epoch_seen = epoch
        batch = ops[i : i + size]
        for index, (p, o, _, _) in enumerate(batch):
            log.add(commit("g", p, o), epoch, index, len(batch))
        if i in aborts:
            first = len(log.entries) - len(batch)
            abort = BatchAbortValue(first, len(log.entries) - 1, epoch_seen)
            log.add(CoordinatorRecord(RecordType.BATCH_ABORT, BatchAbortKey(first), abort), epoch_seen)
        i += size
    assert_same_state(log.entries)
