"""Transactional offsets, pure: validation as Kafka's validateTransactionalOffsetCommit, staging,
the outcome of a marker (Kafka's replayEndTransactionMarker) and the ordering against plain commits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.group import CLASSIC, GroupSummary
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from groupcoord.coordinator.offsets.handlers import fetch_offsets
from groupcoord.coordinator.offsets.transactions import Sequence
from groupcoord.coordinator.runtime.api import Result
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from tests.answers import answered
from tests.messages import cg_request
from tests.unit.test_group_shard import HANDLERS, IMAGE, apply, commit, commit_at, join_consumer

IDS = {"t": IMAGE.topic_id("t"), "u": IMAGE.topic_id("u")}


def txn(
    group: str,
    offsets: dict[int, int],
    pid: int = 7,
    epoch: int = 0,
    generation: int = -1,
    member: str = "",
    metadata: str = "",
) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member,
        topics=[
            TxnOffsetCommitRequestTopic(
                name="t",
                partitions=[
                    TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata=metadata)
                    for p, o in offsets.items()
                ],
            )
        ],
    )


def stage(state: GroupCoordinatorState, request: TxnOffsetCommitRequest, txn_offset: int, now: int = 0) -> Any:
    error, sequence = HANDLERS.validate_txn_commit(state, request, IDS)
    assert error == ErrorCode.NONE
    return apply(state, HANDLERS.stage_txn_offsets(state, request, txn_offset, sequence, IDS, now))


def marker(state: GroupCoordinatorState, pid: int, at: int, committed: bool) -> Result[None]:
    result = HANDLERS.resolve_txn(state, pid, at, committed, 0)
    apply(state, result)
    return result


def committed(state: GroupCoordinatorState, group: str, partition: int = 0) -> int | None:
    value = state.offsets.get(group, "t", partition)
    return None if value is None else value.offset


def written(state: GroupCoordinatorState, *writes: Callable[[], Result[Any]]) -> list[CoordinatorRecord]:
    """Run each handler on ``state`` in turn, applying its records; all the records written."""
    records: list[CoordinatorRecord] = []
    for write in writes:
        result = write()
        apply(state, result)
        records += result.records
    return records


def replayed(records: list[CoordinatorRecord]) -> GroupCoordinatorState:
    """A fresh state replaying ``records`` through the codec, as a load does."""
    fresh = GroupCoordinatorState()
    for record in records:
        fresh.replay(decode(*encode(record)))
    return fresh


def test_staged_offsets_stay_invisible_until_the_commit_marker() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 3}), 0))
    stage(state, txn("g", {0: 10, 1: 4}), txn_offset=5)
    assert committed(state, "g") == 3 and committed(state, "g", 1) is None
    assert state.txn.has_pending("g", "t", 0) and state.txn.has_pending("g", "t", 1)
    # A marker before the staged record is an earlier transaction's: it decides nothing.
    assert marker(state, 7, at=4, committed=True).records == []
    # Another producer's marker decides nothing either.
    assert marker(state, 8, at=9, committed=True).records == []
    marker(state, 7, at=9, committed=True)
    assert (committed(state, "g"), committed(state, "g", 1)) == (10, 4)
    assert state.offsets.get("g", "t", 0).producer_id == 7  # type: ignore[union-attr]
    assert not state.txn.group_has_pending("g") and state.txn.lowest_txn_offset() is None
    # A second marker for the same producer (a duplicate, or a reload) writes nothing.
    assert marker(state, 7, at=9, committed=True).records == []


def test_an_abort_drops_staged_offsets() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 3}), 0))
    stage(state, txn("g", {0: 10}), txn_offset=5)
    result = marker(state, 7, at=6, committed=False)
    assert [r.value for r in result.records] == [None]
    assert committed(state, "g") == 3 and not state.txn.has_pending("g", "t", 0)


def test_a_marker_decides_only_the_staged_commits_before_it() -> None:
    """The next transaction of the same producer may be staged before the previous outcome is written."""
    state = GroupCoordinatorState()
    stage(state, txn("g", {0: 10}), txn_offset=5)
    stage(state, txn("g", {0: 20}), txn_offset=8)
    marker(state, 7, at=6, committed=True)
    assert committed(state, "g") == 10 and state.txn.has_pending("g", "t", 0)
    marker(state, 7, at=9, committed=False)
    assert committed(state, "g") == 10 and not state.txn.has_pending("g", "t", 0)


def test_a_later_staged_commit_of_the_same_transaction_wins() -> None:
    state = GroupCoordinatorState()
    stage(state, txn("g", {0: 10}), txn_offset=5)
    stage(state, txn("g", {0: 12}), txn_offset=6)
    marker(state, 7, at=7, committed=True)
    assert committed(state, "g") == 12


def test_a_plain_commit_after_the_staging_wins_over_it() -> None:
    """Kafka keeps the most recent of a mix of transactional and plain commits (record offsets)."""
    state = GroupCoordinatorState()
    stage(state, txn("g", {0: 10, 1: 10}), txn_offset=5)
    apply(state, commit_at(state, commit("g", {0: 99}), 0))
    marker(state, 7, at=6, committed=True)
    assert (committed(state, "g"), committed(state, "g", 1)) == (99, 10)


def test_the_superseded_partition_survives_a_reload() -> None:
    """Replaying the log rebuilds the same staged state, ordering included (invariant 3)."""
    state = GroupCoordinatorState()
    records = written(
        state,
        lambda: HANDLERS.stage_txn_offsets(state, txn("g", {0: 10}), 5, Sequence(0, 0), IDS, 0),
        lambda: commit_at(state, commit("g", {0: 99}), 0),
    )
    fresh = replayed(records)
    assert fresh.snapshot() == state.snapshot()
    marker(fresh, 7, at=6, committed=True)
    assert committed(fresh, "g") == 99


def test_require_stable_answers_unstable_for_staged_partitions_only() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 3, 1: 3}), 0))
    stage(state, txn("g", {0: 10}), txn_offset=5)
    ask = OffsetFetchRequestGroup(group_id="g", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])])
    plain = fetch_offsets(state.offsets, ask)
    assert [(p.committed_offset, p.error_code) for p in plain.topics[0].partitions] == [(3, 0), (3, 0)]
    stable = fetch_offsets(state.offsets, ask, state.txn.has_pending)
    assert [(p.committed_offset, p.error_code) for p in stable.topics[0].partitions] == [
        (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT),
        (3, 0),
    ]
    everything = fetch_offsets(state.offsets, OffsetFetchRequestGroup(group_id="g", topics=None), state.txn.has_pending)
    assert [p.error_code for p in everything.topics[0].partitions] == [ErrorCode.UNSTABLE_OFFSET_COMMIT, 0]


def test_sequences_count_per_producer_epoch_and_restart_at_a_new_epoch() -> None:
    state = GroupCoordinatorState()
    stage(state, txn("g", {0: 1}), txn_offset=1)
    stage(state, txn("g", {0: 2}), txn_offset=2)
    assert HANDLERS.validate_txn_commit(state, txn("g", {0: 3}), IDS) == (ErrorCode.NONE, Sequence(0, 2))
    assert HANDLERS.validate_txn_commit(state, txn("g", {0: 3}, epoch=1), IDS) == (ErrorCode.NONE, Sequence(1, 0))
    stage(state, txn("g", {0: 3}, epoch=1), txn_offset=3)
    # The older epoch is a zombie's from now on: refused before anything is sent.
    assert HANDLERS.validate_txn_commit(state, txn("g", {0: 4}, epoch=0), IDS)[0] == ErrorCode.INVALID_PRODUCER_EPOCH


def test_validation_as_kafka() -> None:
    state = GroupCoordinatorState()
    check = lambda request: HANDLERS.validate_txn_commit(state, request, IDS)[0]  # noqa: E731
    assert check(txn("", {0: 1})) == ErrorCode.INVALID_GROUP_ID
    # An unknown group takes generation -1 only (a simple group).
    assert check(txn("new", {0: 1})) == ErrorCode.NONE
    assert check(txn("new", {0: 1}, generation=1, member="m")) == ErrorCode.ILLEGAL_GENERATION
    assert check(txn("new", {0: 1}, metadata="x" * 5000)) == ErrorCode.OFFSET_METADATA_TOO_LARGE
    join_consumer(state, "cg")
    epoch = state.consumer.group("cg").members["m1"].member_epoch  # type: ignore[union-attr]
    assert check(txn("cg", {0: 1}, generation=epoch, member="m1")) == ErrorCode.NONE
    assert check(txn("cg", {0: 1}, generation=epoch, member="other")) == ErrorCode.UNKNOWN_MEMBER_ID
    # A stale (newer than known) member epoch: STALE_MEMBER_EPOCH is answered ILLEGAL_GENERATION through v4.
    assert check(txn("cg", {0: 1}, generation=epoch + 5, member="m1")) == ErrorCode.ILLEGAL_GENERATION
    # No member fields at all (the group id alone, as before KIP-447): taken by a group with
    # members, as Kafka takes it; any one field given makes them all checked.
    assert check(txn("cg", {0: 1})) == ErrorCode.NONE
    assert check(txn("cg", {0: 1}, member="other")) == ErrorCode.UNKNOWN_MEMBER_ID
    assert check(txn("cg", {0: 1}, generation=epoch + 5)) == ErrorCode.UNKNOWN_MEMBER_ID
    with_instance = txn("cg", {0: 1})
    with_instance.group_instance_id = "static-1"
    assert check(with_instance) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_refused_staging_writes_nothing() -> None:
    state = GroupCoordinatorState()
    join_consumer(state, "cg")
    result = HANDLERS.stage_txn_offsets(state, txn("cg", {0: 1}, generation=99, member="m1"), 5, Sequence(0, 0), IDS, 0)
    assert result.records == []
    assert [p.error_code for t in answered(result.response).topics for p in t.partitions] == [
        ErrorCode.ILLEGAL_GENERATION
    ]


def test_an_offset_with_a_staged_transaction_over_it_does_not_expire() -> None:
    """Kafka's cleanupExpiredOffsets skips partitions with pending transactional offsets and keeps
    a group with an open transaction."""
    from groupcoord.coordinator.group_shard import RetentionSweep
    from tests.unit.test_group_shard import MINUTE

    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 1, 1: 1}), 0))
    stage(state, txn("g", {0: 10}), txn_offset=5)
    apply(state, HANDLERS.on_timer(state, RetentionSweep(), MINUTE))
    assert committed(state, "g") == 1 and committed(state, "g", 1) is None
    marker(state, 7, at=6, committed=False)
    apply(state, HANDLERS.on_timer(state, RetentionSweep(), MINUTE))
    assert not state.offsets.has_group("g")


def test_an_empty_group_with_an_open_transaction_is_not_deleted() -> None:
    """Kafka's cleanupExpiredOffsets: a group with no committed offsets counts as all expired, but
    one with an open transaction is kept; once the transaction is decided, the next sweep deletes
    it (the empty group beside it, with neither, goes at once)."""
    from groupcoord.coordinator.group_shard import RetentionSweep
    from tests.unit.test_group_shard import MINUTE

    state = GroupCoordinatorState()
    for group in ("cg", "gone"):
        join_consumer(state, group)
        apply(state, HANDLERS.consumer_group_heartbeat(state, cg_request(group, "m1", -1), 0, RequestContext(1)))
    stage(state, txn("cg", {0: 10}), txn_offset=5)
    assert not state.offsets.has_group("cg") and state.txn.group_has_pending("cg")
    sweep = HANDLERS.on_timer(state, RetentionSweep(), MINUTE)
    apply(state, sweep)
    assert {r.key.group for r in sweep.records} == {"gone"}
    assert state.group_type("cg") == "consumer" and state.group("gone") is None
    marker(state, 7, at=6, committed=False)
    sweep = HANDLERS.on_timer(state, RetentionSweep(), MINUTE)
    apply(state, sweep)
    assert sweep.records and {r.key.group for r in sweep.records} == {"cg"}
    assert state.group("cg") is None


def test_the_superseded_partition_survives_compaction() -> None:
    """Seed 101163 of the transaction simulation: producer 7 stages partition 0, a plain commit
    overtakes it, then producer 8 stages and commits partition 0. Compaction keeps only that last
    OffsetCommit record, so the overtaking must be written where it survives (the staged record
    itself), or a load would apply producer 7's stale offset."""
    state = GroupCoordinatorState()
    records = written(
        state,
        lambda: HANDLERS.stage_txn_offsets(state, txn("g", {0: 10}, pid=7), 1, Sequence(0, 0), IDS, 0),
        lambda: commit_at(state, commit("g", {0: 99}), 0),
        lambda: HANDLERS.stage_txn_offsets(state, txn("g", {0: 20}, pid=8), 2, Sequence(0, 0), IDS, 0),
        lambda: HANDLERS.resolve_txn(state, 8, 3, True, 0),
    )
    latest = {encode(r)[0]: r for r in records}  # what compaction leaves: the last record of each key
    fresh = replayed([r for r in records if latest[encode(r)[0]] is r])
    assert fresh.snapshot() == state.snapshot()
    marker(fresh, 7, at=4, committed=True)
    assert committed(fresh, "g") == 20


def _offset_delete(group: str, partitions: list[int]) -> Any:
    from groupcoord.coordinator.messages.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteRequestPartition,
        OffsetDeleteRequestTopic,
    )

    topic = OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in partitions]
    )
    return OffsetDeleteRequest(group_id=group, topics=[topic])


def test_offset_delete_removes_a_staged_offset_as_kafka_does() -> None:
    """Kafka's deleteOffsets writes a tombstone for a committed or a pending offset, and replaying
    it removes the pending ones: the partition is stable at once and the COMMIT leaves it empty.
    A group of staged offsets only exists (Kafka's TxnOffsetCommit created it)."""
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 3}), 0))
    stage(state, txn("g", {0: 10, 1: 4, 2: 5}), txn_offset=5)
    records = written(state, lambda: HANDLERS.delete_offsets(state, _offset_delete("g", [0, 1]), 0))
    assert not state.txn.has_pending("g", "t", 0) and not state.txn.has_pending("g", "t", 1)
    assert state.txn.has_pending("g", "t", 2)
    # The staged record is written again without the deleted partitions: it outlives the tombstones.
    (restaged,) = [r for r in records if r.type == RecordType.PENDING_TXN_OFFSETS]
    assert restaged.value is not None and [o.partition for o in restaged.value.offsets] == [2]
    marker(state, 7, at=6, committed=True)
    assert (committed(state, "g"), committed(state, "g", 1), committed(state, "g", 2)) == (None, None, 5)

    only_staged = GroupCoordinatorState()
    stage(only_staged, txn("h", {0: 10}), txn_offset=5)
    answer = apply(only_staged, HANDLERS.delete_offsets(only_staged, _offset_delete("h", [0]), 0))
    assert answer.error_code == ErrorCode.NONE and [p.error_code for p in answer.topics[0].partitions] == [0]
    assert not only_staged.txn.group_has_pending("h")
    marker(only_staged, 7, at=6, committed=True)
    assert committed(only_staged, "h") is None


def test_delete_groups_removes_staged_offsets_and_finds_a_group_of_staged_offsets_only() -> None:
    state = GroupCoordinatorState()
    apply(state, commit_at(state, commit("g", {0: 3}), 0))
    stage(state, txn("g", {0: 10, 1: 4}), txn_offset=5)
    stage(state, txn("h", {0: 7}, pid=8), txn_offset=6)
    assert apply(state, HANDLERS.delete_groups(state, ["g", "h", "nobody"], 0)) == [
        ("g", ErrorCode.NONE),
        ("h", ErrorCode.NONE),
        ("nobody", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    assert not state.txn.group_has_pending("g") and not state.txn.group_has_pending("h")
    marker(state, 7, at=9, committed=True)
    marker(state, 8, at=9, committed=True)
    assert (committed(state, "g"), committed(state, "g", 1), committed(state, "h")) == (None, None, None)


def test_a_deleted_topic_takes_its_staged_offsets_with_it_and_a_reload_agrees() -> None:
    """Kafka's onPartitionsDeleted tombstones pending offsets too: the COMMIT after the deletion
    must not give a re-created topic of the same name the old incarnation's offset."""
    state = GroupCoordinatorState()
    records = written(
        state,
        lambda: HANDLERS.stage_txn_offsets(state, txn("g", {0: 10, 1: 4}), 5, Sequence(0, 0), IDS, 0),
        lambda: HANDLERS.topics_deleted(state, [("t", str(IDS["t"]))]),
    )
    assert not state.txn.group_has_pending("g")
    latest = {encode(r)[0]: r for r in records}  # compaction leaves the last record of each key
    fresh = replayed([r for r in records if latest[encode(r)[0]] is r])
    assert fresh.snapshot() == state.snapshot()
    for s in (state, fresh):
        marker(s, 7, at=6, committed=True)
        assert (committed(s, "g"), committed(s, "g", 1)) == (None, None)


def test_metadata_too_large_refuses_that_partition_alone() -> None:
    """Kafka's commitTransactionalOffset refuses a partition whose metadata is too large and
    stages the others; a request with no partition left is refused before anything is written."""
    from groupcoord.coordinator.messages.txn_offset_commit import TxnOffsetCommitRequestPartition

    state = GroupCoordinatorState()
    request = txn("g", {0: 10, 1: 11})
    big, small = request.topics[0].partitions
    request.topics[0].partitions = [
        TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=10, committed_metadata="x" * 5000),
        small,
    ]
    del big
    answer = stage(state, request, txn_offset=5)
    assert [(p.partition_index, p.error_code) for p in answer.topics[0].partitions] == [
        (0, ErrorCode.OFFSET_METADATA_TOO_LARGE),
        (1, ErrorCode.NONE),
    ]
    assert not state.txn.has_pending("g", "t", 0) and state.txn.has_pending("g", "t", 1)
    marker(state, 7, at=6, committed=True)
    assert (committed(state, "g"), committed(state, "g", 1)) == (None, 11)


def test_a_group_of_staged_offsets_only_is_listed_and_described_as_an_empty_classic_group() -> None:
    """Kafka's TxnOffsetCommit with generation -1 creates the group (an empty classic group
    without a protocol type), as a plain commit does."""
    from groupcoord.coordinator.group_shard import describe_classic_groups, group_listing

    state = GroupCoordinatorState()
    stage(state, txn("h", {0: 7}), txn_offset=5)
    assert [g for g in group_listing(state, (), ()) if g is not None] == [GroupSummary("h", "", "Empty", CLASSIC)]
    (described,) = describe_classic_groups(state, ["h"], 5)
    assert (described.error_code, described.group_state) == (0, "Empty")
    marker(state, 7, at=6, committed=False)
    assert [g for g in group_listing(state, (), ()) if g is not None] == []


def test_an_idle_producer_with_nothing_staged_is_forgotten_after_the_expiration() -> None:
    """A soak probe: one TxnProducer record per transactional producer that ever committed offsets
    stayed in the log for good. The retention sweep drops those idle for
    transactional.id.expiration.ms (7 days, Kafka's) with nothing left staged."""
    from groupcoord.coordinator.group_shard import RetentionSweep

    week = HANDLERS.offsets_config.transactional_id_expiration_ms
    state = GroupCoordinatorState()
    stage(state, txn("g", {0: 10}, pid=7), txn_offset=5, now=0)
    stage(state, txn("g", {1: 10}, pid=8), txn_offset=6, now=0)
    marker(state, 7, at=7, committed=True)  # producer 8's transaction stays open
    apply(state, HANDLERS.on_timer(state, RetentionSweep(), week - 1))
    assert set(state.txn.producers) == {7, 8}
    records = HANDLERS.on_timer(state, RetentionSweep(), week).records
    apply(state, Result(None, records))
    assert set(state.txn.producers) == {8}
    assert [r.key.producer_id for r in records if r.type == RecordType.TXN_PRODUCER] == [7]
    # A later transaction of producer 7 (a new epoch, as the cluster expired it too) starts at 0.
    assert HANDLERS.validate_txn_commit(state, txn("g", {0: 11}, pid=7, epoch=1), IDS)[1] == Sequence(1, 0)
