"""LogReplayer, the one replay path: atomic batches, aborts, epoch fencing, compaction."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.log import TAILER_SETTINGS
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import (
    BatchAbortKey,
    BatchAbortValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShardEpochKey,
    ShardEpochValue,
)


class Recorder:
    """A shard state that remembers the latest value per key."""

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}

    def replay(self, record: CoordinatorRecord) -> None:
        if record.value is None:
            self.values.pop(record.key, None)
        else:
            self.values[record.key] = record.value

    def snapshot(self) -> Any:
        return dict(self.values)


def commit(partition: int, offset: int | None) -> CoordinatorRecord:
    value = None if offset is None else OffsetCommitValue(offset)
    return CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", partition), value)


def epoch_record(epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.SHARD_EPOCH, ShardEpochKey(epoch), ShardEpochValue(epoch, "o", 0))


def abort(first: int, last: int, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.BATCH_ABORT, BatchAbortKey(first), BatchAbortValue(first, last, epoch))


Log = list[tuple[int, CoordinatorRecord, int, int, int]]  # offset, record, epoch, index, count


def replay(log: Log, deferred: bool = False) -> tuple[LogReplayer, Recorder]:
    """Replay ``log``; ``deferred`` replays it as a load does (``finish`` at the end)."""
    state = Recorder()
    replayer = LogReplayer("log", 0, [state], deferred=deferred)
    for offset, record, epoch, index, count in log:
        key, value = encode(record)
        replayer.feed(offset, key, value, make_headers(epoch, index, count))
    if deferred:
        replayer.finish()
    return replayer, state


def offsets(state: Recorder) -> dict[int, int]:
    return {k.partition: v.offset for k, v in state.values.items() if isinstance(k, OffsetCommitKey)}


def test_a_batch_applies_only_when_its_last_record_is_read() -> None:
    replayer, state = replay([(0, commit(0, 1), 1, 0, 2)])
    assert offsets(state) == {} and replayer.open_batch() == (0, 0)
    replayer.feed(1, *encode(commit(1, 1)), make_headers(1, 1, 2))
    assert offsets(state) == {0: 1, 1: 1} and replayer.open_batch() is None


@pytest.mark.parametrize("deferred", [False, True])
def test_a_batch_cut_short_is_discarded_when_a_later_record_takes_its_offsets(deferred: bool) -> None:
    # A batch of three got two records in; the writer's next record took offset 2.
    _, state = replay([(0, commit(0, 1), 1, 0, 3), (1, commit(1, 1), 1, 1, 3), (2, commit(5, 9), 1, 0, 0)], deferred)
    assert offsets(state) == {5: 9}


@pytest.mark.parametrize("deferred", [False, True])
def test_a_batch_whose_rest_was_compacted_away_is_applied(deferred: bool) -> None:
    # Offsets 1-2 of the batch were removed by compaction (superseded by offsets 4 and 5).
    _, state = replay([(0, commit(0, 1), 1, 0, 3), (4, commit(1, 2), 1, 0, 0), (5, commit(2, 2), 1, 0, 0)], deferred)
    assert offsets(state) == {0: 1, 1: 2, 2: 2}


def test_a_batch_abort_discards_the_open_batch() -> None:
    replayer, state = replay([(0, commit(0, 1), 1, 0, 3), (1, commit(1, 1), 1, 1, 3)])
    assert replayer.open_batch() == (0, 1)
    replayer.feed(2, *encode(abort(0, 1, 2)), make_headers(2, 0, 1))
    replayer.feed(3, *encode(commit(3, 3)), make_headers(2, 0, 1))
    assert offsets(state) == {3: 3} and replayer.open_batch() is None


def test_records_of_an_older_epoch_are_ignored_after_a_newer_shard_epoch() -> None:
    replayer, state = replay(
        [
            (0, epoch_record(1), 1, 0, 1),
            (1, commit(0, 1), 1, 0, 1),
            (2, epoch_record(2), 2, 0, 1),
            (3, commit(0, 99), 1, 0, 1),  # the zombie, still writing under epoch 1
            (4, commit(1, 2), 2, 0, 1),
        ]
    )
    assert offsets(state) == {0: 1, 1: 2}
    assert replayer.max_epoch == 2 and replayer.skipped == 1


def test_a_new_shard_epoch_inside_a_cut_short_batch_discards_it() -> None:
    _, state = replay([(0, commit(0, 1), 1, 0, 3), (1, epoch_record(2), 2, 0, 1), (2, commit(1, 2), 2, 0, 1)])
    assert offsets(state) == {1: 2}


def test_restores_make_the_valid_values_the_latest_again() -> None:
    """Compaction keeps the latest record per key: records that were not applied (a zombie's,
    a cut-short batch's) would hide the valid ones. The restores re-state them."""
    replayer, state = replay(
        [
            (0, commit(0, 1), 1, 0, 1),
            (1, epoch_record(2), 2, 0, 1),
            (2, commit(0, 50), 1, 0, 1),  # zombie: shadows offset 0's value for partition 0
            (3, commit(7, 70), 1, 0, 1),  # zombie: a key that never had a valid value
            (4, commit(1, 1), 2, 0, 2),  # open batch at the end
        ],
        deferred=True,
    )
    restores = {r.key.partition: (None if r.value is None else r.value.offset) for r in replayer.restores()}
    assert restores == {0: 1, 7: None, 1: None}
    # After compaction of the log plus the restores, a fresh load gets the same state.
    assert offsets(state) == {0: 1}


def test_a_valid_record_applied_after_a_zombies_later_record_of_its_key_is_restored() -> None:
    """A paused old owner's records can land inside the new owner's batch (two producers on one
    partition). The batch's first record (offset 1) is then applied only when the batch closes,
    after the zombie's record of the same key (offset 2) was read and ignored; compaction keeps
    offset 2, so the load must still re-state offset 1's value (seed 105422 of the ownership
    simulation lost a member's subscription this way)."""
    replayer, state = replay(
        [
            (0, epoch_record(2), 2, 0, 1),
            (1, commit(0, 1), 2, 0, 2),  # the new owner's batch of two begins
            (2, commit(0, 50), 1, 0, 1),  # the zombie, inside the batch's offsets
            (3, commit(1, 1), 2, 1, 2),  # the batch's last record, after the zombie's
        ],
        deferred=True,
    )
    assert offsets(state) == {0: 1, 1: 1}
    restores = {r.key.partition: (None if r.value is None else r.value.offset) for r in replayer.restores()}
    assert restores == {0: 1}


@pytest.mark.parametrize("deferred", [False, True])
def test_a_zombies_records_among_a_batchs_do_not_split_it(deferred: bool) -> None:
    """The batch's range reaches past a fenced owner's records written among its own: the batch
    is applied whole at its last record, or discarded whole when a new owner's epoch comes
    before it ends; never its first records alone as if its rest had been compacted away."""
    head: Log = [(0, epoch_record(2), 2, 0, 1), (1, commit(0, 1), 2, 0, 3), (2, commit(0, 50), 1, 0, 1)]
    _, state = replay([*head, (3, commit(1, 1), 2, 1, 3), (4, commit(2, 1), 2, 2, 3)], deferred)
    assert offsets(state) == {0: 1, 1: 1, 2: 1}
    # The new owner's writer failed after the zombie's record: the next owner's load comes.
    _, state = replay([*head, (3, commit(1, 1), 2, 1, 3), (4, epoch_record(3), 3, 0, 1)], deferred)
    assert offsets(state) == {}
    _, state = replay([*head, (3, epoch_record(3), 3, 0, 1), (4, commit(5, 5), 3, 0, 1)], deferred)
    assert offsets(state) == {5: 5}


def test_restores_skip_keys_rewritten_validly_later() -> None:
    replayer, _ = replay(
        [(0, epoch_record(2), 2, 0, 1), (1, commit(0, 50), 1, 0, 1), (2, commit(0, 3), 2, 0, 1)], deferred=True
    )
    assert replayer.restores() == []
    replayer.stop_tracking()
    assert replayer.restores() == []


def test_the_log_reader_never_stops_fetching_for_a_second_while_a_load_catches_up() -> None:
    # librdkafka pauses fetching for fetch.queue.backoff.ms (default 1 s) whenever its queue holds
    # more than queued.min.messages; a load replays slower than that queue fills, so the default
    # left a shard load idle for up to a second per ~100k records.
    assert TAILER_SETTINGS["fetch.queue.backoff.ms"] <= 50
