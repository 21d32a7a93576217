"""The share data path's shard operations over ``GroupCoordinatorState``: what they answer, the
records they write (and that replaying those records gives the live state's durable picture), the
lock-expiry timer, records kept across a leave, and a reload from the records."""

from __future__ import annotations

from typing import TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.runtime.api import CancelTimer, Park, Result, ScheduleTimer
from groupcoord.coordinator.share import shard_ops as ops
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import SharePartitionKey
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareTopicPartitions,
)

KEY = SharePartitionKey("g", "t", 0)
CONFIG = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3)
ACCEPT, RELEASE, REJECT = 1, 2, 3
METADATA = RecordType.SHARE_GROUP_STATE_PARTITION_METADATA
T = TypeVar("T")


class Shard:
    """The runtime's part: records replayed into the state, and kept as the log."""

    def __init__(self) -> None:
        self.state = GroupCoordinatorState()
        self.log: list[CoordinatorRecord] = []

    def run(self, result: Result[T]) -> T | Park:
        for r in result.records:
            self.state.replay(r)
        self.log += result.records
        return result.response

    def reloaded(self) -> GroupCoordinatorState:
        fresh = GroupCoordinatorState()
        for r in self.log:
            fresh.replay(r)
        return fresh

    def durable_matches_live(self) -> bool:
        data = self.reloaded().share_data
        return all(
            data.store.get(k) is not None and data.store.get(k).picture() == sp.durable_picture()  # type: ignore[union-attr]
            for k, sp in self.state.share_data.live.items()
        )


def _fetched(first: int, last: int, fetch_offset: int | None = None) -> ops.Fetched:
    return ops.Fetched(KEY, first if fetch_offset is None else fetch_offset, (OffsetRange(first, last),))


def test_create_acquire_acknowledge_write_records_that_replay_to_the_live_state() -> None:
    shard = Shard()
    data = shard.state.share_data
    assert ops.needs_start(data, KEY)
    shard.run(ops.ensure(data, [(KEY, CONFIG, "tid", 10)]))
    assert [r.type for r in shard.log] == [RecordType.SHARE_SNAPSHOT, METADATA] and not ops.needs_start(data, KEY)
    assert ops.fetch_offsets(data, [KEY]) == {KEY: (10, True)}
    got = shard.run(ops.acquire(data, "m1", [_fetched(10, 14)], 3, now=0))
    assert got == {KEY: (AcquiredRecords(10, 12, 1),)}
    got = shard.run(ops.acquire(data, "m2", [_fetched(10, 14)], 10, now=0))
    assert got == {KEY: (AcquiredRecords(13, 14, 1),)}
    errors = shard.run(
        ops.acknowledge(data, "m1", [(KEY, CONFIG, [AcknowledgementBatch(10, 12, (ACCEPT, RELEASE, REJECT))])], now=1)
    )
    assert errors == {KEY: ErrorCode.NONE}
    assert shard.durable_matches_live()
    # The released record comes back with its count; the accepted and rejected never do.
    got = shard.run(ops.acquire(data, "m2", [_fetched(10, 14, fetch_offset=11)], 10, now=2))
    assert got == {KEY: (AcquiredRecords(11, 11, 2),)}
    assert shard.durable_matches_live()


def test_refused_acknowledgements_write_nothing() -> None:
    shard = Shard()
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 4)], 10, now=0))
    before = len(shard.log)
    for member, batches, code in [
        ("m2", [AcknowledgementBatch(0, 0, (ACCEPT,))], ErrorCode.INVALID_RECORD_STATE),  # held by m1
        ("m1", [AcknowledgementBatch(3, 1, (ACCEPT,))], ErrorCode.INVALID_REQUEST),  # first > last
        ("m1", [AcknowledgementBatch(0, 9, (ACCEPT,))], ErrorCode.INVALID_REQUEST),  # past anything acquired
    ]:
        assert shard.run(ops.acknowledge(data, member, [(KEY, CONFIG, batches)], now=1)) == {KEY: code}
    assert len(shard.log) == before


def test_acknowledging_a_share_partition_no_fetch_made_live_is_unknown_topic_or_partition() -> None:
    """Kafka 4.2's SharePartitionManager.acknowledge answers a share-partition not in its cache
    (this broker has not fetched it since it became the leader) UNKNOWN_TOPIC_OR_PARTITION: here
    one no fetch has made live since the shard's load, with state written or none. Nothing is
    written; an empty acknowledgement list is NONE (Kafka answers it before looking)."""
    shard = Shard()
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 4)], 10, now=0))
    before = len(shard.log)
    never = SharePartitionKey("g", "t", 1)
    batch = [AcknowledgementBatch(0, 0, (ACCEPT,))]
    assert shard.run(ops.acknowledge(data, "m1", [(never, CONFIG, batch), (KEY, CONFIG, [])], 1)) == {
        never: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        KEY: ErrorCode.NONE,
    }
    # After a reload (a failover) KEY has state written but is not live until a fetch.
    reloaded = shard.reloaded().share_data
    assert KEY not in reloaded.live and reloaded.store.get(KEY) is not None
    refused = ops.acknowledge(reloaded, "m1", [(KEY, CONFIG, batch)], 1)
    assert refused.response == {KEY: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION} and not refused.records
    empty = ops.acknowledge(reloaded, "m1", [(never, CONFIG, [])], 1)
    assert empty.response == {never: ErrorCode.NONE} and not empty.records
    assert len(shard.log) == before


def test_lock_expiry_timer_releases_and_archives_at_the_limit() -> None:
    shard = Shard()
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    result = ops.acquire(data, "m1", [_fetched(0, 0)], 10, now=0)
    assert ScheduleTimer(ops.lock_timer_key(KEY), 1000, ops.ShareLockExpiry(KEY)) in result.timers
    shard.run(result)
    for delivery in (2, 3):
        expired = ops.expire_locks(data, KEY, now=1000 * delivery)
        assert CancelTimer(ops.lock_timer_key(KEY)) in expired.timers
        shard.run(expired)
        got = shard.run(ops.acquire(data, "m1", [_fetched(0, 0)], 10, now=1000 * delivery))
        assert got == {KEY: (AcquiredRecords(0, 0, delivery),)}
    shard.run(ops.expire_locks(data, KEY, now=10_000))
    # The delivery-count limit (3) reached: archived, never delivered again; the start moved on.
    assert shard.run(ops.acquire(data, "m1", [_fetched(0, 0)], 10, now=10_000)) == {}
    assert data.live[KEY].start_offset == 1
    assert shard.durable_matches_live()


def test_the_groups_configs_of_now_apply_to_a_live_share_partition() -> None:
    """Kafka's SharePartition reads the group's configs where it uses them: the record-lock limit
    at each acquisition, the lock duration at each lock, the delivery-count limit at each release
    or lock expiry (the timer included). The shard passes the configs it reads now to each."""
    from groupcoord.coordinator.group_shard import GroupCoordinatorShard
    from groupcoord.coordinator.groups import group_config as gc

    handlers = GroupCoordinatorShard()
    shard = Shard()
    data = shard.state.share_data
    broker = handlers.share_partition_config(shard.state, "g")
    assert broker is handlers.share_partition_config(shard.state, "g")  # no override: one object
    shard.run(ops.ensure(data, [(KEY, broker, None, 0)]))
    changes = [
        gc.ConfigChange(name, gc.ConfigOp.SET, value)
        for name, value in (
            ("share.partition.max.record.locks", "100"),
            ("share.record.lock.duration.ms", "15000"),
            ("share.delivery.count.limit", "2"),
        )
    ]
    shard.run(handlers.alter_group_config(shard.state, "g", changes, None, False))
    now = handlers.share_partition_config(shard.state, "g")
    assert (now.max_in_flight_records, now.record_lock_duration_ms, now.delivery_count_limit) == (100, 15_000, 2)
    # 500 records in batches of 50: the acquisition stops at the new limit of 100 (2,000 before).
    batches = tuple(OffsetRange(first, first + 49) for first in range(0, 500, 50))
    result = ops.acquire(data, "m1", [ops.Fetched(KEY, 0, batches)], 1000, 0, True, now)
    assert ScheduleTimer(ops.lock_timer_key(KEY), 15_000, ops.ShareLockExpiry(KEY)) in result.timers
    assert shard.run(result) == {KEY: (AcquiredRecords(0, 99, 1),)}
    shard.run(handlers.on_timer(shard.state, ops.ShareLockExpiry(KEY), 15_000))
    assert shard.run(ops.acquire(data, "m1", [ops.Fetched(KEY, 0, batches)], 1000, 15_000, True, now)) == {
        KEY: (AcquiredRecords(0, 99, 2),)
    }
    # The lock timer, at count 2 = the new limit: archived, the start past them.
    shard.run(handlers.on_timer(shard.state, ops.ShareLockExpiry(KEY), 30_000))
    assert data.live[KEY].start_offset == 100
    assert shard.durable_matches_live()


def test_release_member_and_reload_from_the_records() -> None:
    shard = Shard()
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 9)], 4, now=0))
    shard.run(ops.acquire(data, "m2", [_fetched(0, 9)], 4, now=0))
    shard.run(ops.acknowledge(data, "m2", [(KEY, CONFIG, [AcknowledgementBatch(4, 7, (ACCEPT,))])], now=1))
    shard.run(ops.release_member(data, "g", "m1"))
    assert data.live[KEY].acquired_by("m1") == []
    assert shard.durable_matches_live()
    # A reload (a new owner) knows no live partition: loaded from the records, every lock gone.
    reloaded = shard.reloaded()
    assert reloaded.share_data.live == {} and not ops.needs_start(reloaded.share_data, KEY)
    replica = Shard()
    replica.state, replica.log = reloaded, list(shard.log)
    replica.run(ops.ensure(reloaded.share_data, [(KEY, CONFIG, None, None)]))
    got = replica.run(ops.acquire(reloaded.share_data, "m3", [_fetched(0, 9)], 100, now=5))
    # 0-3 released by m1 (count 1 kept: now 2), 4-7 accepted, 8-9 new.
    assert got == {KEY: (AcquiredRecords(0, 3, 2), AcquiredRecords(8, 9, 1))}
    assert replica.state.snapshot() == replica.reloaded().snapshot()


def test_the_group_shard_keeps_a_leaving_members_records_and_runs_the_lock_timer() -> None:
    from groupcoord.coordinator.group_shard import GroupCoordinatorShard
    from groupcoord.coordinator.groups.context import RequestContext
    from groupcoord.coordinator.messages import share_group_heartbeat as sgh

    handlers = GroupCoordinatorShard()
    shard = Shard()
    join = sgh.ShareGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0, subscribed_topic_names=["t"])
    joined = shard.run(handlers.share_group_heartbeat(shard.state, join, 0, RequestContext()))
    assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 1)], 10, now=0))
    # The lock timer event goes to expire_locks.
    shard.run(handlers.on_timer(shard.state, ops.ShareLockExpiry(KEY), 5_000))
    assert data.live[KEY].acquired_by("m1") == []
    shard.run(ops.acquire(data, "m1", [_fetched(0, 1)], 10, now=5_000))
    leave = sgh.ShareGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=-1)
    left = shard.run(handlers.share_group_heartbeat(shard.state, leave, 6_000, RequestContext()))
    assert isinstance(left, sgh.ShareGroupHeartbeatResponse) and left.error_code == 0
    # Still held: they go back when the member's share session ends (or its locks run out).
    assert data.live[KEY].acquired_by("m1") == [0, 1]
    assert shard.durable_matches_live()


def test_a_member_whose_session_times_out_gives_its_records_back() -> None:
    from groupcoord.coordinator.group_shard import GroupCoordinatorShard
    from groupcoord.coordinator.groups.context import RequestContext
    from groupcoord.coordinator.groups.share.timers import ShareSessionTimeout
    from groupcoord.coordinator.messages import share_group_heartbeat as sgh

    handlers = GroupCoordinatorShard()
    shard = Shard()
    for member in ("m1", "m2"):
        join = sgh.ShareGroupHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=0, subscribed_topic_names=["t"]
        )
        shard.run(handlers.share_group_heartbeat(shard.state, join, 0, RequestContext()))
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 1)], 10, now=0))
    shard.run(ops.acquire(data, "m2", [_fetched(0, 3)], 10, now=0))
    shard.run(handlers.on_timer(shard.state, ShareSessionTimeout("g", "m1"), 50_000))
    group = shard.state.share.group("g")
    assert group is not None and set(group.members) == {"m2"}
    assert data.live[KEY].acquired_by("m1") == [] and data.live[KEY].acquired_by("m2") == [2, 3]
    assert shard.durable_matches_live()


def test_deleting_the_group_deletes_its_share_partitions() -> None:
    from groupcoord.coordinator.group_shard import GroupCoordinatorShard
    from groupcoord.coordinator.groups.context import RequestContext
    from groupcoord.coordinator.messages import share_group_heartbeat as sgh

    handlers = GroupCoordinatorShard()
    shard = Shard()
    join = sgh.ShareGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0, subscribed_topic_names=["t"])
    shard.run(handlers.share_group_heartbeat(shard.state, join, 0, RequestContext()))
    data = shard.state.share_data
    other = SharePartitionKey("h", "t", 0)
    shard.run(ops.ensure(data, [(KEY, CONFIG, None, 0), (other, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 1)], 10, now=0))
    leave = sgh.ShareGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=-1)
    shard.run(handlers.share_group_heartbeat(shard.state, leave, 1, RequestContext()))
    assert shard.run(handlers.delete_groups(shard.state, ["g"], 2)) == [("g", 0)]
    for state in (shard.state, shard.reloaded()):
        assert ops.needs_start(state.share_data, KEY) and not ops.needs_start(state.share_data, other)
        assert set(state.share_data.initialized) == {"h"}  # g's record 15 is a tombstone
    assert KEY not in data.live
    assert shard.log[-1] == CoordinatorRecord(METADATA, ShareGroupStatePartitionMetadataKey("g"), None)


def test_reset_start_offsets_replaces_the_state_and_drops_the_live_partition() -> None:
    """AlterShareGroupOffsets: one snapshot per share-partition at the new start offset with the next
    state epoch and no offsets; the live partition and its lock timer go, and a load starts there."""
    shard = Shard()
    data = shard.state.share_data
    shard.run(ops.ensure(data, [(KEY, CONFIG, "tid", 10)]))
    shard.run(ops.acquire(data, "m1", [_fetched(10, 14)], 10, now=0))
    shard.run(ops.acknowledge(data, "m1", [(KEY, CONFIG, [AcknowledgementBatch(10, 11, (ACCEPT,))])], now=1))
    other = SharePartitionKey("g", "t", 1)
    result = ops.reset_start_offsets(data, [(KEY, 3, "tid"), (other, 0, "tid")])
    # t-1 had no state: it is initialized now (record 15), as Kafka's AlterShareGroupOffsets does.
    assert [r.type for r in result.records] == [RecordType.SHARE_SNAPSHOT] * 2 + [METADATA]
    assert CancelTimer(ops.lock_timer_key(KEY)) in result.timers
    shard.run(result)
    assert KEY not in data.live
    for state in (data, shard.reloaded().share_data):
        durable = state.store.get(KEY)
        assert durable is not None and (durable.start_offset, durable.state_epoch, durable.offsets) == (3, 1, {})
        assert state.store.get(other) is not None and state.store.get(other).start_offset == 0  # type: ignore[union-attr]
    shard.run(ops.ensure(data, [(KEY, CONFIG, "tid", None)]))  # loaded from the new state
    assert ops.fetch_offsets(data, [KEY])[KEY][0] == 3


def test_delete_topics_state_removes_only_the_named_topics_of_the_group() -> None:
    shard = Shard()
    data = shard.state.share_data
    keys = [KEY, SharePartitionKey("g", "u", 0), SharePartitionKey("h", "t", 0)]
    shard.run(ops.ensure(data, [(k, CONFIG, None, 5) for k in keys]))
    shard.run(ops.delete_topics_state(data, "g", ["t", "nope"]))
    for state in (data, shard.reloaded().share_data):
        assert [k for k in keys if state.store.get(k) is not None] == keys[1:]
        # Record 15 follows: g keeps u only; h is untouched.
        assert state.initialized == {"g": {"u": (None, frozenset({0}))}, "h": {"t": (None, frozenset({0}))}}
    assert KEY not in data.live and keys[1] in data.live
    # Deleting topics with no state writes no record 15.
    assert METADATA not in [r.type for r in ops.delete_topics_state(data, "g", ["t"]).records]


def test_a_deleted_topic_incarnation_takes_its_share_state_with_it_in_every_group() -> None:
    """Topic deletion (the metadata refresh's listener): every group's share-partitions of the
    deleted incarnation (its id, or no id) go, with their lock timers and from record 15; a
    share-partition of the same name already holding the re-created topic's id stays."""
    shard = Shard()
    data = shard.state.share_data
    old_g, old_h, other = KEY, SharePartitionKey("h", "t", 1), SharePartitionKey("g", "u", 0)
    shard.run(ops.ensure(data, [(old_g, CONFIG, "old", 5), (other, CONFIG, "uid", 0)]))
    shard.run(ops.ensure(data, [(old_h, CONFIG, None, 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(5, 9)], 10, now=0))
    result = ops.deleted_topics_state(data, [("t", "old")])
    assert CancelTimer(ops.lock_timer_key(old_g)) in result.timers
    shard.run(result)
    for state in (data, shard.reloaded().share_data):
        assert [k for k in (old_g, old_h, other) if state.store.get(k) is not None] == [other]
        assert state.initialized == {"g": {"u": ("uid", frozenset({0}))}, "h": {}}
    assert old_g not in data.live and other in data.live
    # The re-created topic's share-partition (new id) survives a late notice of the old deletion.
    shard.run(ops.ensure(data, [(old_g, CONFIG, "new", 0)]))
    assert ops.deleted_topics_state(data, [("t", "old")]).records == []


def test_record_15_lists_the_share_partitions_with_state() -> None:
    """ShareGroupStatePartitionMetadata (Kafka's record 15) is written in the same operation as the
    first state of a share-partition, with its topic id, and not again for a loaded one."""
    shard = Shard()
    data = shard.state.share_data
    t1 = SharePartitionKey("g", "t", 1)
    shard.run(ops.ensure(data, [(KEY, CONFIG, "tid", 10), (t1, CONFIG, "tid", None)]))
    assert data.initialized == {"g": {"t": ("tid", frozenset({0}))}}
    shard.run(ops.ensure(data, [(t1, CONFIG, "tid", 4)]))
    (record,) = [r for r in shard.log if r.type == METADATA][1:]
    assert record.value == ShareGroupStatePartitionMetadataValue(
        initialized_topics=[ShareTopicPartitions("tid", "t", [0, 1])]
    )
    reloaded = shard.reloaded()
    assert reloaded.share_data.initialized == data.initialized
    before = len(shard.log)
    reloaded.share_data.live.clear()
    assert METADATA not in [r.type for r in ops.ensure(reloaded.share_data, [(KEY, CONFIG, "tid", None)]).records]
    assert len(shard.log) == before


def test_the_listener_hears_of_share_partitions_left_with_records_to_acquire() -> None:
    """What wakes a waiting ShareFetch: an operation that leaves a share-partition acquirable
    (released records, a lock expired, the window's oldest records acknowledged). One that leaves
    it full with nothing available is not reported."""
    config = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=5, max_in_flight_records=4)
    shard = Shard()
    data = shard.state.share_data
    heard: list[SharePartitionKey] = []
    data.listener = heard.append
    shard.run(ops.ensure(data, [(KEY, config, "tid", 0)]))
    shard.run(ops.acquire(data, "m1", [_fetched(0, 1)], 10, now=0))
    shard.run(ops.acquire(data, "m2", [_fetched(2, 3)], 10, now=0))
    heard.clear()
    # m2 accepts its records: the window's oldest (m1's) are still in flight, nothing to acquire.
    shard.run(ops.acknowledge(data, "m2", [(KEY, config, [AcknowledgementBatch(2, 3, (ACCEPT,))])], now=1))
    assert heard == []
    shard.run(ops.acknowledge(data, "m1", [(KEY, config, [AcknowledgementBatch(0, 0, (RELEASE,))])], now=1))
    assert heard == [KEY]  # released
    shard.run(ops.acquire(data, "m2", [_fetched(0, 0)], 10, now=1))
    heard.clear()
    shard.run(ops.expire_locks(data, KEY, now=5000))
    assert heard == [KEY]  # the locks ran out
    heard.clear()
    shard.run(ops.acquire(data, "m3", [_fetched(0, 3)], 10, now=5000))
    assert heard == []  # full again
    shard.run(ops.release_member(data, "g", "m3"))
    assert heard == [KEY]  # m3 left
