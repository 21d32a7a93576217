"""A deferred load (decode only the last effective record of each key) rebuilds exactly the
state that replaying every record one by one does, under every log rule: tombstones, atomic
batches, batch aborts and fenced epochs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.runtime import replayer as replayer_module
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.replayer import LogReadError, LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import (
    BatchAbortKey,
    BatchAbortValue,
    GroupMetadataKey,
    GroupMetadataValue,
    LogSkipKey,
    LogSkipValue,
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
    assert (committed := state.offsets.get("g", "t", 0)) is not None and committed.offset == 5
    assert state.offsets.get("g", "t", 1) is None
    assert (committed := state.offsets.get("g", "t", 2)) is not None and committed.offset == 9


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
    assert (committed := state.offsets.get("g", "t", 0)) is not None and committed.offset == 2


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


def random_log(ops: list[tuple[int, int | None, int, int]], aborts: list[int], runtime_records: bool) -> LogBuilder:
    """The log the ops describe; with ``runtime_records``, also what a load writes under the new
    epoch (the earlier owners' ShardEpoch tombstones) and an operator's LogSkip after each abort."""
    log = LogBuilder([])
    epoch_seen = 0
    i = 0
    while i < len(ops):
        partition, offset, epoch, size = ops[i]
        if epoch > epoch_seen:
            log.add(shard_epoch(epoch), epoch)
            if runtime_records:
                for old in range(1, epoch):
                    log.add(CoordinatorRecord(RecordType.SHARD_EPOCH, ShardEpochKey(old), None), epoch)
            epoch_seen = epoch
        batch = ops[i : i + size]
        for index, (p, o, _, _) in enumerate(batch):
            log.add(commit("g", p, o), epoch, index, len(batch))
        if i in aborts:
            first = len(log.entries) - len(batch)
            abort = BatchAbortValue(first, len(log.entries) - 1, epoch_seen)
            log.add(CoordinatorRecord(RecordType.BATCH_ABORT, BatchAbortKey(first), abort), epoch_seen)
            if runtime_records:
                skip = LogSkipValue(first, "operator", 0, "test")
                log.add(CoordinatorRecord(RecordType.LOG_SKIP, LogSkipKey(first), skip), epoch_seen)
        i += size
    return log


@settings(max_examples=200, deadline=None)
@given(st.lists(_op, max_size=60), st.lists(st.integers(0, 59), max_size=4))
def test_deferred_and_eager_replays_agree_on_random_logs(
    ops: list[tuple[int, int | None, int, int]], aborts: list[int]
) -> None:
    assert_same_state(random_log(ops, aborts, runtime_records=False).entries)


# --- bulk loading (``feed_messages``) ---------------------------------------------------------


@dataclass
class Msg:
    """A consumed record as the reader hands it over (the methods of ``confluent_kafka.Message``)."""

    _offset: int
    _key: bytes | None
    _value: bytes | None
    _headers: list[tuple[str, bytes]] | None

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


def outcome(state: GroupCoordinatorState, replayer: LogReplayer) -> tuple[object, ...]:
    return (
        state.snapshot(),
        replayer.read,
        replayer.applied,
        replayer.skipped,
        replayer.next_offset,
        replayer.max_epoch,
        replayer.epoch_keys,
        replayer.skip_decisions,
        replayer.open_batch(),
        replayer.restores(),
    )


def replay_in_bulk(messages: Sequence[Any], chunk_sizes: list[int]) -> tuple[GroupCoordinatorState, LogReplayer]:
    """Feed the messages as the reader would, in chunks of the given sizes (the rest in one)."""
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 0, [state], deferred=True)
    at = 0
    for size in [*chunk_sizes, len(messages)]:
        replayer.feed_messages(messages[at : at + size])
        at += size
    replayer.finish()
    return state, replayer


def replay_one_by_one(messages: list[Msg]) -> tuple[GroupCoordinatorState, LogReplayer]:
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 0, [state], deferred=True)
    for m in messages:
        if m.offset() >= replayer.next_offset:
            replayer.feed(m.offset(), m.key(), m.value(), m.headers())
    replayer.finish()
    return state, replayer


def test_a_run_of_plain_commits_is_taken_in_bulk_and_rebuilds_the_same_state() -> None:
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    for i in range(500):
        log.add(commit("g", i % 7, i), 1)
    log.add(commit("g", 3, None), 1)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    state, replayer = replay_in_bulk(messages, [])
    eager, _ = replay(log.entries, deferred=False)
    assert state.snapshot() == eager.snapshot()
    assert replayer.read == 502
    assert replayer.bulk_read >= 400  # all but the ShardEpoch record and what sits beside it
    assert replayer.applied == 7


def test_bulk_loading_leaves_runtime_records_batches_and_zombies_to_the_record_rules() -> None:
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    for i in range(100):
        log.add(commit("g", i % 5, i), 1)
    log.add(shard_epoch(2), 2)  # a new owner in the middle of a long run ...
    for i in range(100):
        log.add(commit("g", i % 5, 1000 + i), 1)  # ... so its fenced predecessor's writes are ignored
    for i in range(100):
        log.add(commit("h", i % 5, i), 2, i % 4, 4)  # batches of 4
    log.add(commit("h", 9, 9), 2, 0, 3)  # a batch cut short at the end of the log
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    eager = replay_one_by_one(messages)
    bulk = replay_in_bulk(messages, [37, 150, 3])
    assert outcome(*bulk) == outcome(*eager)
    assert bulk[1].bulk_read > 0
    assert (committed := bulk[0].offsets.get("g", "t", 0)) is not None and committed.offset == 95
    assert bulk[1].open_batch() == (302, 302)


def test_bulk_loading_passes_over_records_read_already_and_gaps_left_by_compaction() -> None:
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    for i in range(300):
        log.add(commit("g", i % 3, i), 1)
    # Compaction removed every other record; the reader then hands some records over twice.
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries) if offset % 2 == 0 or offset < 3]
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 0, [state], deferred=True)
    replayer.feed_messages(messages[:100])
    replayer.feed_messages(messages[50:])
    replayer.finish()
    expected = replay_one_by_one(messages)
    assert outcome(state, replayer) == outcome(*expected)
    assert replayer.next_offset == 301


def test_a_record_without_a_key_in_a_bulk_run_is_reported_unreadable_as_one_by_one() -> None:
    log = LogBuilder([])
    for i in range(100):
        log.add(commit("g", i % 3, i), 1)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    messages[60] = Msg(60, None, b"x", make_headers(1, 0, 1))
    with pytest.raises(LogReadError, match="offset 60"):
        replay_in_bulk(messages, [])


class OtherReaderMsg:
    """The same record as another reader hands it over: another class, other attribute names."""

    __slots__ = ("record",)

    def __init__(self, record: Msg) -> None:
        self.record = record

    def offset(self) -> int:
        return self.record.offset()

    def key(self) -> bytes | None:
        return self.record.key()

    def value(self) -> bytes | None:
        return self.record.value()

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self.record.headers()


def test_a_delivery_of_records_of_several_classes_is_read_through_each_ones_own_methods() -> None:
    # One class's methods are used on the whole delivery only when every record is of it.
    log = LogBuilder([])
    log.add(shard_epoch(1), 1)
    for i in range(200):
        log.add(commit("g", i % 5, i), 1)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    mixed: list[Any] = [m if m.offset() % 3 else OtherReaderMsg(m) for m in messages]
    state, replayer = replay_in_bulk(mixed, [])
    assert outcome(state, replayer) == outcome(*replay_one_by_one(messages))
    assert replayer.bulk_read > 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_op, max_size=80),
    st.lists(st.integers(0, 79), max_size=4),
    st.lists(st.integers(0, 9), max_size=6),  # offsets compaction removed
    st.lists(st.integers(1, 30), max_size=6),  # how the reader cuts the log into deliveries
    st.sampled_from([1, 2, 3, 8]),  # the shortest run taken in bulk
)
def test_bulk_and_one_by_one_loading_agree_on_random_logs(
    ops: list[tuple[int, int | None, int, int]],
    aborts: list[int],
    removed: list[int],
    chunks: list[int],
    min_run: int,
) -> None:
    log = random_log(ops, aborts, runtime_records=True)
    gone = {offset * 7 % max(len(log.entries), 1) for offset in removed}
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries) if offset not in gone]
    default, replayer_module.BULK_MIN_RUN = replayer_module.BULK_MIN_RUN, min_run
    try:
        assert outcome(*replay_in_bulk(messages, chunks)) == outcome(*replay_one_by_one(messages))
    finally:
        replayer_module.BULK_MIN_RUN = default


class ReplayOrder:
    """A shard state that only notes the order records are replayed in."""

    def __init__(self) -> None:
        self.keys: list[object] = []

    def replay(self, record: CoordinatorRecord) -> None:
        self.keys.append(record.key)

    def snapshot(self) -> object:
        return list(self.keys)


def test_a_load_replays_the_surviving_records_in_the_order_of_those_last_records() -> None:
    # Key 0 is written first and last: compaction would leave key 1's record before key 0's.
    log = LogBuilder([])
    for i in range(40):
        log.add(commit("g", 0, i), 1)
    for i in range(40):
        log.add(commit("g", 1, i), 1)
    log.add(commit("g", 0, 99), 1)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    for feed in ("bulk", "one by one"):
        order = ReplayOrder()
        replayer = LogReplayer("log", 0, [order], deferred=True)
        if feed == "bulk":
            replayer.feed_messages(messages)
        else:
            for m in messages:
                replayer.feed(m.offset(), m.key(), m.value(), m.headers())
        replayer.finish()
        assert order.keys == [OffsetCommitKey("g", "t", 1), OffsetCommitKey("g", "t", 0)], feed


def test_a_replay_failure_names_the_offset_fed_or_the_finish_and_an_unreadable_record_its_own_offset() -> None:
    replayer = LogReplayer("log", 0, [GroupCoordinatorState()], deferred=True)
    replayer.next_offset = 8
    boom = RuntimeError("boom")
    assert replayer.failure(boom) == "replay failed at offset 7: RuntimeError('boom')"
    assert replayer.failure(boom, finishing=True) == "replay failed while finishing the load: RuntimeError('boom')"
    unreadable = LogReadError("log", 0, 3, "bad value")
    assert replayer.failure(unreadable) == replayer.failure(unreadable, finishing=True) == str(unreadable)


def batched_log(batches: int, size: int, last_of_each: bool = False) -> LogBuilder:
    """Commits of ``batches`` groups, ``size`` partitions each, every commit one atomic batch as
    the shard writes it (``last_of_each``: every record marked the last of a batch of ``size``)."""
    log = LogBuilder([])
    log.add(shard_epoch(2), 2)
    for b in range(batches):
        for i in range(size):
            log.add(commit(f"g{b}", i, b * size + i), 2, size - 1 if last_of_each else i, size)
    return log


def test_whole_atomic_batches_are_taken_in_bulk_even_when_deliveries_cut_them() -> None:
    log = batched_log(200, 10)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    bulk = replay_in_bulk(messages, [37, 500, 3, 700])  # deliveries that start and end mid-batch
    assert outcome(*bulk) == outcome(*replay_one_by_one(messages))
    assert bulk[1].bulk_read >= 0.9 * bulk[1].read
    # Every record the last of its batch: each closes its batch at once.
    log = batched_log(100, 10, last_of_each=True)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries)]
    bulk = replay_in_bulk(messages, [])
    assert outcome(*bulk) == outcome(*replay_one_by_one(messages))
    assert bulk[1].bulk_read >= 0.9 * bulk[1].read


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 5),  # batch size
    st.integers(0, 30),  # batches
    st.booleans(),  # every record marked the last of its batch
    st.lists(st.integers(0, 200), max_size=3),  # delivery sizes
    st.lists(st.integers(0, 400), max_size=3),  # offsets compaction removed
    st.one_of(st.none(), st.integers(0, 400)),  # where a zombie's record (an older epoch) sits
    st.one_of(st.none(), st.integers(0, 400)),  # where a record of another batch size sits
)
def test_runs_of_atomic_batches_in_bulk_and_one_by_one_agree(
    size: int,
    batches: int,
    last_of_each: bool,
    chunks: list[int],
    removed: list[int],
    zombie: int | None,
    odd: int | None,
) -> None:
    log = batched_log(batches, size, last_of_each)
    if zombie is not None:
        key, value = encode(commit("z", 0, 1))
        log.entries.insert(1 + zombie % len(log.entries), (key, value, make_headers(1, 0, 1)))
    if odd is not None:
        key, value = encode(commit("odd", 0, 1))
        log.entries.insert(1 + odd % len(log.entries), (key, value, make_headers(2, 0, size + 1)))
    gone = {offset % len(log.entries) for offset in removed}
    messages = [Msg(offset, *entry) for offset, entry in enumerate(log.entries) if offset not in gone]
    default, replayer_module.BULK_MIN_RUN = replayer_module.BULK_MIN_RUN, 4
    try:
        assert outcome(*replay_in_bulk(messages, chunks)) == outcome(*replay_one_by_one(messages))
    finally:
        replayer_module.BULK_MIN_RUN = default
