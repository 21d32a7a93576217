"""KIP-1222 RENEW acknowledgements on one share-partition and on its shard: a renewal extends the
acquisition lock of records the member still holds and changes nothing else (state, delivery
count, durable state: no record is written for it, as Kafka's SharePartition persists nothing for
a renewal); a renewal of a record the member does not hold is INVALID_RECORD_STATE and changes
nothing, like any acknowledgement of such a record."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.runtime.api import ScheduleTimer
from groupcoord.coordinator.share import shard_ops as ops
from groupcoord.coordinator.share.partition_types import AcknowledgementBatch, OffsetRange, SharePartitionConfig
from groupcoord.coordinator.share.state import SharePartitionKey
from tests.share.harness import Harness

ACCEPT, RELEASE, RENEW = 1, 2, 4
LOCK = 1_000
CONFIG = SharePartitionConfig(record_lock_duration_ms=LOCK, renew_enabled=True)


def _ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def _held(h: Harness) -> dict[int, tuple[str, int, str | None, int]]:
    return {o: (r.state.name, r.delivery_count, r.member, r.deadline) for o, r in sorted(h.sp.records.items())}


def test_a_renewal_moves_the_lock_and_nothing_else() -> None:
    h = Harness(CONFIG)
    h.acquire("m1", [OffsetRange(0, 2)], 10, now=0)
    picture, log = h.sp.durable_picture(), len(h.log)
    renewed = h.ack("m1", [_ack(0, 2, RENEW)], now=600)
    assert (renewed.error, renewed.change) == (ErrorCode.NONE, None)  # nothing to write
    assert h.sp.durable_picture() == picture and len(h.log) == log
    assert _held(h) == {o: ("ACQUIRED", 1, "m1", 600 + LOCK) for o in range(3)}
    h.expire(LOCK)  # the first lock's deadline: still held
    assert h.sp.acquired_by("m1") == [0, 1, 2]
    h.expire(600 + LOCK)  # the renewed one: back, with the delivery count it had
    assert h.sp.acquired_by("m1") == [] and {r.delivery_count for r in h.sp.records.values()} == {1}


def test_a_renewal_beside_other_types_renews_only_its_offsets() -> None:
    h = Harness(CONFIG)
    h.acquire("m1", [OffsetRange(0, 2)], 10, now=0)
    done = h.ack("m1", [_ack(0, 2, RENEW, ACCEPT, RELEASE)], now=500)
    assert done.error == ErrorCode.NONE and done.change is not None
    assert h.sp.records[0].state.name == "ACQUIRED" and h.sp.records[0].deadline == 500 + LOCK
    assert [(o, r.state.name) for o, r in sorted(h.sp.records.items())] == [
        (0, "ACQUIRED"),
        (1, "ACKNOWLEDGED"),
        (2, "AVAILABLE"),
    ]


def test_a_renewal_of_records_the_member_does_not_hold_changes_nothing() -> None:
    h = Harness(CONFIG)
    h.acquire("m1", [OffsetRange(0, 1)], 10, now=0)
    h.ack("m1", [_ack(1, 1, ACCEPT)], now=1)
    h.acquire("m1", [OffsetRange(2, 3)], 10, now=2)
    h.ack("m1", [_ack(3, 3, RELEASE)], now=3)
    before, picture = _held(h), h.sp.durable_picture()
    for member, batch in (
        ("m2", _ack(0, 0, RENEW)),  # acquired by another member
        ("m1", _ack(0, 1, RENEW)),  # 1 is acknowledged already
        ("m1", _ack(3, 3, RENEW)),  # available again
        ("m1", _ack(0, 9, RENEW)),  # past anything ever acquired
    ):
        refused = h.ack(member, [batch], now=10)
        assert refused.change is None and refused.error in (ErrorCode.INVALID_RECORD_STATE, ErrorCode.INVALID_REQUEST)
        assert _held(h) == before and h.sp.durable_picture() == picture
    assert h.ack("m2", [_ack(0, 0, RENEW)], now=10).error == ErrorCode.INVALID_RECORD_STATE
    h.expire(LOCK)  # the refused renewals moved no lock: offset 0's ran out (2's runs 2 ms longer)
    assert h.sp.acquired_by("m1") == [2]


def test_a_renewal_on_the_shard_writes_no_record_and_moves_the_lock_timer() -> None:
    key = SharePartitionKey("g", "t", 0)
    state = GroupCoordinatorState()

    def run(result: object) -> object:
        for r in result.records:  # type: ignore[attr-defined]
            state.replay(r)
        return result

    run(ops.ensure(state.share_data, [(key, CONFIG, None, 0)]))
    run(ops.acquire(state.share_data, "m1", [ops.Fetched(key, 0, (OffsetRange(0, 4),))], 10, now=0))
    result = ops.acknowledge(state.share_data, "m1", [(key, CONFIG, [_ack(0, 4, RENEW)])], now=700)
    assert result.response == {key: ErrorCode.NONE}
    assert result.records == []
    assert [t.deadline_ms for t in result.timers if isinstance(t, ScheduleTimer)] == [700 + LOCK]
    # Expiry at the old deadline gives nothing back.
    assert ops.expire_locks(state.share_data, key, LOCK).response == 0
    assert ops.expire_locks(state.share_data, key, 700 + LOCK).response == 5
