"""A load places its OffsetCommit records in an ``OffsetsTable`` (log order, C-level chunks) and
shares the groups it makes between the shard's states: the state, the restores and the counts
must be exactly those of the plain paths, replaying each record one by one (eager) and replaying
the last record of each key in their order (the survivors' way, which the table replaces)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records import offset_commit_decoding as decoding
from groupcoord.records.definitions import (
    BatchAbortKey,
    BatchAbortValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    PendingTxnOffset,
    PendingTxnOffsetsKey,
    PendingTxnOffsetsValue,
    ShardEpochKey,
    ShardEpochValue,
)
from tests.unit.test_replayer_deferred import Msg

Entry = tuple[bytes, bytes | None, list[tuple[str, bytes]]]

# Names and partitions on both sides of the table's one-byte fast path (names under 64 bytes,
# partitions 0..63), and metadata or a topic id that make a value irregular.
_GROUPS = ["g", "h", "é", "x" * 70]
_TOPICS = ["t", "y" * 64]
_PARTITIONS = [0, 1, 63, 64, -1]
_PLACES = (
    st.integers(0, len(_GROUPS) - 1),
    st.integers(0, len(_TOPICS) - 1),
    st.sampled_from(_PARTITIONS),
    st.integers(0, 2**40),
    st.sampled_from([1, 1, 1, 2, 3]),  # writer epoch
    st.sampled_from([1, 1, 2, 3]),  # size of the atomic batch this record starts
)
_record = st.tuples(st.sampled_from(["plain", "plain", "plain", "metadata", "tombstone", "other"]), *_PLACES)


def make_record(kind: str, group: int, topic: int, partition: int, offset: int) -> CoordinatorRecord:
    if kind in ("txn", "txn-tombstone"):
        # A staged transactional offset of the group (of producer ``partition % 2``), or its removal.
        txn_key = PendingTxnOffsetsKey(_GROUPS[group], abs(partition) % 2, 0)
        if kind == "txn-tombstone":
            return CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, txn_key, None)
        staged = PendingTxnOffsetsValue("tx", 0, [PendingTxnOffset(_TOPICS[topic], partition, offset)], 0)
        return CoordinatorRecord(RecordType.PENDING_TXN_OFFSETS, txn_key, staged)
    if kind == "other":
        value = GroupMetadataValue("consumer", offset % 5, "range", None, 0, [])
        return CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey(_GROUPS[group]), value)
    key = OffsetCommitKey(_GROUPS[group], _TOPICS[topic], partition)
    if kind == "tombstone":
        return CoordinatorRecord(RecordType.OFFSET_COMMIT, key, None)
    topic_id = "AAAAAAAAAAAAAAAAAAAAA" + str(offset % 10)[-1] if offset % 3 else None
    metadata = "m" if kind == "metadata" else ""
    return CoordinatorRecord(
        RecordType.OFFSET_COMMIT, key, OffsetCommitValue(offset, 3, metadata, offset, -1, topic_id)
    )


def build_log(ops: list[tuple[str, int, int, int, int, int, int]], aborts: set[int]) -> list[Entry]:
    """The log the ops describe: owners whose epochs move forward while older ones keep
    writing (zombies), atomic batches, and batches cut short and aborted by the next owner."""
    entries: list[Entry] = []
    seen = 0
    at = 0
    while at < len(ops):
        *_, epoch, size = ops[at]
        if epoch > seen:
            shard_epoch = CoordinatorRecord(
                RecordType.SHARD_EPOCH, ShardEpochKey(epoch), ShardEpochValue(epoch, "p", 0)
            )
            entries.append((*encode(shard_epoch), make_headers(epoch, 0, 1)))
            seen = epoch
        batch = ops[at : at + size]
        for index, (kind, group, topic, partition, offset, _, _) in enumerate(batch):
            entries.append(
                (*encode(make_record(kind, group, topic, partition, offset)), make_headers(epoch, index, len(batch)))
            )
        if at in aborts:
            first = len(entries) - len(batch)
            abort = CoordinatorRecord(
                RecordType.BATCH_ABORT, BatchAbortKey(first), BatchAbortValue(first, len(entries) - 1, seen)
            )
            entries.append((*encode(abort), make_headers(seen, 0, 1)))
        at += size
    return entries


def load(
    entries: list[Entry], chunks: Sequence[int], targets: int = 1, of_class: type[Msg] | None = None
) -> tuple[list[GroupCoordinatorState], LogReplayer]:
    """A deferred load, fed as the reader feeds it: in deliveries of the given sizes (``of_class``:
    the messages' class, named by the reader as the log tailer names confluent-kafka's)."""
    states = [GroupCoordinatorState() for _ in range(targets)]
    replayer = LogReplayer("log", 0, states, deferred=True)
    messages = [Msg(offset, *entry) for offset, entry in enumerate(entries)]
    at = 0
    for size in [*chunks, len(messages)]:
        replayer.feed_messages(messages[at : at + size], of_class)
        at += size
    replayer.finish()
    return states, replayer


def eager(entries: list[Entry]) -> GroupCoordinatorState:
    state = GroupCoordinatorState()
    replayer = LogReplayer("log", 0, [state])
    for offset, (key, value, headers) in enumerate(entries):
        replayer.feed(offset, key, value, headers)
    return state


def outcome(state: GroupCoordinatorState, replayer: LogReplayer) -> tuple[Any, ...]:
    return (
        state.snapshot(),
        replayer.read,
        replayer.applied,
        replayer.skipped,
        replayer.open_batch(),
        replayer.restores(),
    )


@settings(max_examples=250, deadline=None)
@given(
    st.lists(_record, max_size=120),
    st.sets(st.integers(0, 119), max_size=3),
    st.lists(st.integers(1, 40), max_size=4),
    st.sampled_from([1, 2, 5, 16, decoding.TABLE_CHUNK]),
)
# A value kept aside (its metadata), then a plain value of the same key placed with the chunk's
# C-level steps: the later one is the key's value.
@example([("metadata", 0, 0, 1, 5, 1, 1), ("plain", 0, 0, 1, 7, 1, 1)], set(), [], 1)
@example([("metadata", 0, 0, 1, 5, 1, 1), *[("plain", g, 0, 1, 7, 1, 1) for g in (1, 0, 1)]], set(), [], 2)
def test_the_table_rebuilds_what_every_plain_path_does(
    ops: list[tuple[str, int, int, int, int, int, int]], aborts: set[int], deliveries: list[int], chunk: int
) -> None:
    entries = build_log(ops, aborts)
    with mock.patch.object(decoding, "TABLE_CHUNK", chunk):
        (table_state,), table_replayer = load(entries, deliveries)
    # The survivors' way: the same load with the table declined.
    with mock.patch.object(LogReplayer, "_offsets_table", return_value=None):
        (survivors_state,), survivors_replayer = load(entries, deliveries)
    assert outcome(table_state, table_replayer) == outcome(survivors_state, survivors_replayer)
    assert table_state.snapshot() == eager(entries).snapshot()
    assert_counted(table_state, survivors_state, eager(entries))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["plain", "plain", "tombstone", "metadata", "other", "txn", "txn-tombstone"]),
            *_PLACES,
        ),
        max_size=100,
    ),
    st.sets(st.integers(0, 99), max_size=3),
    st.lists(st.integers(1, 40), max_size=4),
)
def test_a_load_fed_by_a_reader_that_names_the_class_is_the_load_fed_without(
    ops: list[tuple[str, int, int, int, int, int, int]], aborts: set[int], deliveries: list[int]
) -> None:
    """The tailer names its messages' class, so a load reads them with that class's own methods
    (no check of each message's class): the same state, counts and restores as a load that
    checks, and as replaying each record one by one, on logs with overwrites, tombstones,
    zombies, aborted batches and staged transactional offsets (and their removal)."""
    # Runs of plain commits first (what is read in bulk), overwritten, removed or staged after.
    commits = [("plain", i % 3, i % 2, i % 5 - 1 if i % 7 else 64, i, 1, 1 + i % 2) for i in range(64)]
    entries = build_log(commits + ops, {at + len(commits) for at in aborts})
    with mock.patch.object(decoding, "TABLE_CHUNK", 8):
        (named_state,), named = load(entries, deliveries, of_class=Msg)
        (checked_state,), checked = load(entries, deliveries)
    assert outcome(named_state, named) == outcome(checked_state, checked)
    assert named_state.snapshot() == eager(entries).snapshot()
    assert named.bulk_read == checked.bulk_read


def assert_counted(*states: GroupCoordinatorState) -> None:
    """Each state's kept offset count (``OffsetsState.count``, what /metrics reads) is the
    number of offsets it holds, whichever replay paths placed and removed them."""
    for state in states:
        held = sum(len(parts) for topics in state.offsets.offsets.values() for parts in topics.values())
        assert state.offsets.count == held


@settings(max_examples=100, deadline=None)
@given(
    st.lists(_record, min_size=1, max_size=60),
    st.lists(
        st.tuples(
            st.sampled_from(["plain", "tombstone"]),
            st.integers(0, len(_GROUPS) - 1),
            st.integers(0, len(_TOPICS) - 1),
            st.sampled_from(_PARTITIONS),
            st.integers(0, 99),
        ),
        max_size=8,
    ),
)
def test_states_sharing_a_loaded_group_change_it_apart(
    ops: list[tuple[str, int, int, int, int, int, int]], later: list[tuple[str, int, int, int, int]]
) -> None:
    """A shard's committed and live states share what the load made; a commit or tombstone
    replayed into one (one by one or as a commit's records at once) leaves the other as loaded."""
    entries = build_log(ops, set())
    with mock.patch.object(decoding, "TABLE_CHUNK", 4):
        (live, committed), _ = load(entries, [], targets=2)
    loaded = eager(entries)
    records = [make_record(kind, group, topic, partition, offset) for kind, group, topic, partition, offset in later]
    expected = eager(entries)
    for record in records:
        expected.replay(record)
    half = len(records) // 2
    for record in records[:half]:
        live.replay(record)
    live.replay_all(records[half:])
    assert live.snapshot() == expected.snapshot()
    assert committed.snapshot() == loaded.snapshot()
    assert_counted(live, committed)


def test_a_log_of_many_groups_is_placed_in_chunks_without_a_record_left_to_decode() -> None:
    entries = [
        (*encode(make_record("plain", 0, 0, 0, 1)), make_headers(1, 0, 1)),
        *(
            (
                *encode(
                    CoordinatorRecord(
                        RecordType.OFFSET_COMMIT, OffsetCommitKey(f"group-{g}", "t", p), OffsetCommitValue(g, -1, "", 7)
                    )
                ),
                make_headers(1, p, 10),
            )
            for g in range(300)
            for p in range(10)
        ),
    ]
    with (
        mock.patch.object(
            decoding.OffsetsTable, "_add_each", side_effect=AssertionError("a record decoded one by one")
        ),
        mock.patch.object(decoding, "TABLE_CHUNK", 64),
    ):  # groups cut across chunks too
        (state,), replayer = load(entries, [500, 1000])
    assert state.snapshot() == eager(entries).snapshot()
    assert replayer.applied == 1 + 3000
