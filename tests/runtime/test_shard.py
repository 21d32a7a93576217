"""The runtime ``Shard`` over a simulated log (tests/sim/kernel.py), without a broker."""

from __future__ import annotations

import random
from typing import Any

import pytest

from groupcoord.coordinator.runtime.api import CancelTimer, Result, ScheduleTimer
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.load import LoadFailed, LoadResult
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.coordinator.runtime.shard import (
    AppendFailed,
    IllegalTransition,
    Shard,
    ShardNotAvailable,
    ShardPhase,
    ShardStatus,
)
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from groupcoord.records.definitions import LogSkipKey, LogSkipValue, OffsetCommitKey, OffsetCommitValue
from tests.runtime.test_replayer import Recorder, commit, offsets
from tests.sim.invariants import invariant_shard_life
from tests.sim.kernel import Entry, LogFaults, SimHost, SimLog, SimMessage, TransitionLog, sim_loop


class Handlers:
    def create_state(self) -> Recorder:
        return Recorder()

    def on_loaded(self, state: Recorder, now_ms: int) -> Result[None]:
        return Result(None)

    def on_timer(self, state: Recorder, event: Any, now_ms: int) -> Result[None]:
        return Result(None)


def big_commit(group_id_bytes: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.OFFSET_COMMIT, OffsetCommitKey("g" * group_id_bytes, "t", 1), OffsetCommitValue(1)
    )


def write(*records: CoordinatorRecord, response: str = "ok") -> Any:
    return lambda state, now: Result(response, list(records))


class World:
    def __init__(self, owners: int = 1, faults: LogFaults | None = None) -> None:
        self.loop = sim_loop()
        self.log = SimLog()
        self.rng = random.Random(1)
        self.hosts = [SimHost(self.log, self.loop, f"o{i}", self.rng, faults) for i in range(owners)]

    def shard(self, owner: int = 0) -> Shard[Any]:
        return self.hosts[owner].shard(0, Handlers())

    def run(self, ms: int = 1000) -> None:
        end = self.loop.clock.now_ms() + ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()

    def loaded(self, owner: int = 0) -> Shard[Any]:
        shard = self.shard(owner)
        shard.load()
        self.run()
        assert shard.status is ShardStatus.ACTIVE
        return shard


def test_an_answer_waits_until_its_records_are_read_back() -> None:
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()
    fut = shard.submit(write(commit(0, 5)))
    world.run()
    assert not fut.done() and offsets(shard.live) == {0: 5} and offsets(shard.committed) == {}
    world.hosts[0].resume()
    world.run()
    assert fut.result() == "ok" and offsets(shard.committed) == {0: 5} and shard.replay_matches()


def test_a_record_larger_than_the_log_accepts_fails_only_its_operation() -> None:
    world = World()
    shard = world.loaded()
    world.hosts[0].max_record_bytes = 300
    huge = big_commit(400)
    before, big, after = shard.submit(write(commit(0, 1))), shard.submit(write(huge)), shard.submit(write(commit(2, 2)))
    generation = shard.generation
    world.run()
    assert before.result() == "ok" and after.result() == "ok"
    with pytest.raises(AppendFailed):
        big.result()
    assert shard.generation == generation and shard.status is ShardStatus.ACTIVE  # no reload
    assert offsets(shard.committed) == {0: 1, 2: 2} and shard.replay_matches()


@pytest.mark.parametrize("ambiguous", [False, True])
def test_a_failed_append_fails_the_waiting_operations_and_reloads_from_the_log(ambiguous: bool) -> None:
    faults = LogFaults()
    world = World(faults=faults)
    shard = world.loaded()
    if ambiguous:
        faults.ambiguous_rate = 1.0  # written, but reported failed
    else:
        faults.fail_rate = 1.0
    futures = [shard.submit(write(commit(p, 1))) for p in range(3)]
    world.run(5)
    faults.fail_rate = faults.ambiguous_rate = 0.0
    world.run()
    for fut in futures:  # answered (never left hanging), with an error the service maps to Kafka's
        assert isinstance(fut.exception(), ShardNotAvailable)
        assert fut.exception().status is ShardStatus.LOADING  # type: ignore[union-attr]
    assert shard.status is ShardStatus.ACTIVE
    # Live state is exactly what the log holds: the first record if it landed though reported
    # failed (the ones after it fail too: the writer keeps the log gapless), else nothing.
    assert offsets(shard.live) == ({0: 1} if ambiguous else {})
    assert offsets(shard.live) == {k.partition: v.offset for k, v in _log_offsets(world).items()}
    assert shard.replay_matches()
    assert shard.submit(write(commit(5, 5))) is not None
    world.run()
    assert offsets(shard.committed).get(5) == 5


def test_a_record_the_writer_refuses_reloads_and_is_nowhere() -> None:
    world = World(faults=LogFaults(writer_limit=200))
    shard = world.loaded()
    huge = big_commit(300)
    fut = shard.submit(write(huge))
    world.run()
    assert isinstance(fut.exception(), ShardNotAvailable)
    assert shard.status is ShardStatus.ACTIVE and shard.live.values == {} and shard.replay_matches()


def test_an_ownership_move_carries_the_state_and_fences_nobody_alive() -> None:
    world = World(owners=2)
    first = world.loaded(0)
    assert first.submit(write(commit(0, 1))) is not None
    world.run()
    first.close()
    second = world.loaded(1)
    assert offsets(second.committed) == {0: 1} and second.epoch == first.epoch + 1


def test_a_zombie_owner_is_never_acknowledged_and_nothing_of_it_is_applied() -> None:
    world = World(owners=2)
    zombie = world.loaded(0)
    world.hosts[0].stall()  # a long pause: it reads nothing more
    owner = world.loaded(1)
    late = zombie.submit(write(commit(0, 99)))  # lands after the new owner's ShardEpoch
    world.run()
    # The zombie is never acknowledged: its delivery report showed it someone else's offsets.
    assert isinstance(late.exception(), ShardNotAvailable)
    assert zombie.status is ShardStatus.LOADING
    zombie.close()  # placement unloads it
    # The new owner found another writer's record where it would write next: it reloaded, and
    # replay ignores the zombie's record (an older epoch).
    assert owner.status is ShardStatus.ACTIVE and 0 not in offsets(owner.committed)
    fut = owner.submit(write(commit(1, 1)))
    world.run()
    assert fut.result() == "ok" and offsets(owner.committed) == {1: 1} and owner.replay_matches()
    assert owner.epoch == 3  # its reload wrote a new ShardEpoch


def test_a_paused_owner_that_wakes_up_is_fenced_by_the_new_epoch(caplog: pytest.LogCaptureFixture) -> None:
    world = World(owners=2)
    old = world.loaded(0)
    world.hosts[0].stall()
    world.loaded(1)
    world.hosts[0].resume()
    with caplog.at_level("WARNING", logger="groupcoord.coordinator.runtime.shard"):
        world.run()
    assert old.status is ShardStatus.FENCED
    # Part of every move: a warning, not an ERROR that pages an operator at a planned scale-up.
    (fenced,) = [r for r in caplog.records if "fenced: epoch" in r.getMessage()]
    assert fenced.levelname == "WARNING"
    with pytest.raises(ShardNotAvailable):
        old.submit(write(commit(0, 1))).result()


def _log_offsets(world: World) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for entry in world.log.entries.get(0, []):
        record = decode(entry.key, entry.value)
        if record.type is RecordType.OFFSET_COMMIT:
            out[record.key] = record.value
    return out


def test_a_zombie_record_with_our_very_bytes_at_our_offset_is_not_taken_for_ours() -> None:
    """Owner and zombie handle the same request and write byte-identical records; the zombie's
    lands at the offset the owner expected. Only its headers (an older epoch) tell it apart: the
    owner must not release its answer on it (replay fences it), but reload."""
    world = World(owners=2)
    zombie = world.loaded(0)
    world.hosts[0].stall()  # the zombie reads nothing more, so it keeps serving
    owner = world.loaded(1)
    from_zombie = zombie.submit(write(commit(0, 7)))
    end = world.log.end[0]
    for _ in range(100):  # until the zombie's append lands, at the end of the log
        if world.log.end[0] > end:
            break
        world.loop.step()
    assert world.log.end[0] == owner.next_offset + 1
    from_owner = owner.submit(write(commit(0, 7)))
    world.run()
    assert not from_zombie.done() or isinstance(from_zombie.exception(), ShardNotAvailable)
    assert isinstance(from_owner.exception(), ShardNotAvailable)  # reloaded: never acknowledged early
    assert owner.status is ShardStatus.ACTIVE and owner.replay_matches()
    assert offsets(owner.committed) == {0: 7}  # its own record, read back after the zombie's


def test_a_zombie_batch_with_our_very_bytes_at_our_offsets_is_not_taken_for_ours() -> None:
    """As above with a whole atomic batch, which the owner compares as one list when it is read
    back in one piece: the zombie's headers (an older epoch) still tell its records apart."""
    world = World(owners=2)
    zombie = world.loaded(0)
    world.hosts[0].stall()
    owner = world.loaded(1)
    batch = [commit(p, 7) for p in range(3)]
    from_zombie = zombie.submit(write(*batch))
    for _ in range(100):  # until the zombie's three records have landed
        if world.log.end[0] >= owner.next_offset + 3:
            break
        world.loop.step()
    assert world.log.end[0] == owner.next_offset + 3
    from_owner = owner.submit(write(*batch))
    world.run()
    assert not from_zombie.done() or isinstance(from_zombie.exception(), ShardNotAvailable)
    assert isinstance(from_owner.exception(), ShardNotAvailable)
    assert owner.status is ShardStatus.ACTIVE and owner.replay_matches()
    assert offsets(owner.committed) == {0: 7, 1: 7, 2: 7}


def test_a_zombie_record_ahead_of_our_batch_of_equal_records_is_not_taken_for_ours() -> None:
    """A batch read back whole is compared by its keys and values, and by the headers of its last
    record alone. A zombie's record with our very bytes lands where our batch of three equal
    records should start, and the reader hands over the batch's three offsets before any
    delivery report: all three hold our keys and values, and our epoch is at the last one, but
    on our second record: its batch index tells it apart, and nothing is released on it."""
    world = World(owners=2)
    zombie = world.loaded(0)
    world.hosts[0].stall()
    owner = world.loaded(1)
    world.hosts[1].stall()  # what the owner reads is handed over below
    start = owner.next_offset
    zombie.submit(write(commit(0, 7)))
    for _ in range(100):  # until the zombie's record has landed
        if world.log.end[0] > start:
            break
        world.loop.step()
    from_owner = owner.submit(write(commit(0, 7), commit(0, 7), commit(0, 7)))
    for _ in range(100):  # until the owner's flush has appended the batch (not landed yet)
        if start in owner._inflight:
            break
        world.loop.step()
    ours = owner._inflight[start][1]
    landed = [world.log.entries[0][start], Entry(start + 1, *ours[0]), Entry(start + 2, *ours[1])]
    owner.on_records(owner.generation, [SimMessage(e) for e in landed])  # type: ignore[misc]
    assert not from_owner.done() or isinstance(from_owner.exception(), ShardNotAvailable)
    assert owner.status is not ShardStatus.ACTIVE  # reloading: another writer's record was found


def test_a_batch_read_back_in_pieces_is_applied_whole_and_answered_once_read() -> None:
    # The simulated reader delivers at most 64 records at a time: a batch of 300 is read back in
    # pieces, each known again as ours from where the previous piece ended.
    world = World()
    shard = world.loaded()
    first = shard.submit(write(*[commit(p, 1) for p in range(300)], response="first"))
    second = shard.submit(write(*[commit(p, 2) for p in range(0, 300, 2)], response="second"))
    world.run()
    assert first.result() == "first" and second.result() == "second"
    assert offsets(shard.committed) == {p: 2 if p % 2 == 0 else 1 for p in range(300)}
    assert shard.replay_matches() and shard.caught_up
    assert shard.status is ShardStatus.ACTIVE


def _appended(world: World, shard: Shard[Any], records: list[CoordinatorRecord]) -> tuple[Any, int, list[Any]]:
    """Submit ``records`` as one batch to a shard whose reader is stalled; (its future, the offset
    of its first record, its (key, value, headers) as handed to the log) once appended."""
    start = shard.next_offset
    fut = shard.submit(write(*records))
    for _ in range(100):  # until the flush has appended the batch
        if start in shard._inflight:
            break
        world.loop.step()
    return fut, start, shard._inflight[start][1]


def test_a_batch_read_back_in_pieces_is_checked_piece_by_piece_and_applied_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each piece is compared column by column; nothing is fed record by record, and the answer
    # waits for the last piece.
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()  # what the shard reads is handed over below
    one_by_one: list[int] = []
    feed_own = LogReplayer.feed_own

    def counted(self: LogReplayer, at: int, *rest: Any) -> Any:
        one_by_one.append(at)
        return feed_own(self, at, *rest)

    monkeypatch.setattr(LogReplayer, "feed_own", counted)
    fut, start, ours = _appended(world, shard, [commit(p, 7) for p in range(5)])
    pieces = [[0, 1], [2], [3, 4]]
    for piece in pieces:
        assert not fut.done()
        shard.on_records(shard.generation, [SimMessage(Entry(start + i, *ours[i])) for i in piece])  # type: ignore[misc]
    assert fut.done() and fut.result() == "ok" and one_by_one == []
    assert offsets(shard.committed) == {p: 7 for p in range(5)} and shard.status is ShardStatus.ACTIVE


def test_a_zombie_record_after_a_checked_piece_of_our_batch_is_not_taken_for_ours() -> None:
    # The first two records of our batch are read back and checked; the next offset holds a
    # zombie's record with our very bytes (an older epoch): nothing is released, the shard reloads.
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()
    fut, start, ours = _appended(world, shard, [commit(p, 7) for p in range(3)])
    shard.on_records(shard.generation, [SimMessage(Entry(start + i, *ours[i])) for i in (0, 1)])  # type: ignore[misc]
    zombie = Entry(start + 2, ours[2][0], ours[2][1], make_headers(shard.epoch - 1, 2, 3))
    shard.on_records(shard.generation, [SimMessage(zombie)])  # type: ignore[list-item]
    assert not fut.done() or isinstance(fut.exception(), ShardNotAvailable)
    assert shard.status is not ShardStatus.ACTIVE  # reloading: another writer's record was found


def test_restarts_leave_one_shard_epoch_record_after_compaction() -> None:
    """Each load tombstones the ShardEpoch records before its own, so compaction keeps one per
    shard however many times the shard changed hands (before: one record per restart, forever)."""
    world = World(owners=2)
    for turn in range(5):
        shard = world.loaded(turn % 2)
        shard.submit(write(commit(turn % 3, turn)))
        world.run()
        shard.close()
    world.log.compact(0, keep_head=0)
    records = [decode(e.key, e.value) for e in world.log.entries[0]]
    # A tombstone left behind shows as None.
    assert [r.value and r.value.epoch for r in records if r.type is RecordType.SHARD_EPOCH] == [5]
    last = world.loaded(0)
    assert offsets(last.committed) == {0: 3, 1: 4, 2: 2} and last.epoch == 6 and last.replay_matches()


def test_a_load_report_names_each_step_in_order_and_a_claim_waiting_to_be_read_back_shows_as_such() -> None:
    """The load line says where a slow load's time went: each step's time since the load began,
    in the order the steps happen; a claim written but not read back yet (the reader stalled) is
    told apart from one whose append took the time."""
    world = World()
    first = world.loaded()
    for i in range(40):
        first.submit(write(commit(i % 4, i)))
    world.run()
    first.close()
    shard = world.shard()
    shard.load()
    while shard.phase is not ShardPhase.CLAIMING:
        assert world.loop.step()
    world.hosts[0].stall()
    world.run()
    assert shard.phase is ShardPhase.CLAIMING  # written, not read back
    world.hosts[0].resume()
    world.run()
    report = shard.load_report
    assert shard.status is ShardStatus.ACTIVE and report is not None and report.records > 40
    steps = [
        report.first_record_seconds,
        report.read_seconds,
        report.handed_seconds,
        report.decoded_seconds,
        report.written_seconds,
        report.seconds,
    ]
    assert steps == sorted(steps) and steps[0] > 0 and report.written_seconds < report.seconds
    assert report.steps().split(", ")[-2:] == [
        f"epoch written {report.written_seconds:.3f}s",
        f"read back {report.seconds:.3f}s",
    ]


def test_a_load_the_reader_could_not_replay_fails_the_shard_and_a_stale_report_is_ignored() -> None:
    world = World()
    shard = world.shard()
    shard.load()
    stale = shard.generation - 1
    shard.on_loaded(stale, LoadFailed("from an earlier load"))
    assert shard.status is ShardStatus.LOADING
    shard.on_loaded(shard.generation, LoadFailed("replay failed at offset 3: RuntimeError('boom')"))
    assert shard.status is ShardStatus.FAILED and shard.error == "replay failed at offset 3: RuntimeError('boom')"


def elapse(world: World, ms: int) -> None:
    """Run the simulation for ``ms``, the clock reaching the end even when nothing happens."""
    end = world.loop.clock.now_ms() + ms
    world.run(ms)
    world.loop.clock.advance(max(0, end - world.loop.clock.now_ms()))


def test_a_shard_whose_writes_are_not_read_back_warns_once_then_reloads_and_serves_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Review S4: a shard appended its records but never released an answer, silently.
    world = World()
    shard = world.loaded()
    world.hosts[0].wedge(0)
    waiting = shard.submit(write(commit(0, 5)))
    world.run(100)
    assert not waiting.done() and shard.unreleased_age_ms(world.loop.clock.now_ms()) > 0
    now = world.loop.clock.now_ms()
    assert shard.check_stuck(now, 1000, 5000) < 1000 and not shard.stuck
    elapse(world, 1500)
    with caplog.at_level("WARNING", logger="groupcoord.coordinator.runtime.shard"):
        age = shard.check_stuck(world.loop.clock.now_ms(), 1000, 5000)
        shard.check_stuck(world.loop.clock.now_ms(), 1000, 5000)
    assert age >= 1000 and shard.stuck and shard.status is ShardStatus.ACTIVE
    assert len([r for r in caplog.records if "waited" in r.getMessage()]) == 1  # once per episode
    elapse(world, 4000)
    shard.check_stuck(world.loop.clock.now_ms(), 1000, 5000)
    # Reloaded: what waited is failed with a retriable error, and the shard serves again.
    assert isinstance(waiting.exception(), ShardNotAvailable) and not shard.stuck
    world.run()
    assert shard.status is ShardStatus.ACTIVE and offsets(shard.committed) == {0: 5}
    after = shard.submit(write(commit(1, 6)))
    world.run()
    assert after.result() == "ok" and shard.unreleased_age_ms(world.loop.clock.now_ms()) == 0


def test_a_shard_created_anew_for_its_partition_ignores_its_predecessors_reader_callbacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    world = World()
    first = world.loaded()
    first.submit(write(commit(0, 1)))
    world.run()
    stale = first.generation
    first.close()
    # Placement gave the partition back: the runtime makes a new shard object for it.
    del world.hosts[0].shards[0]
    second = world.shard()
    assert second is not first
    second.load()
    # The reader's last report for the first shard, still queued on the loop when the second loads.
    with caplog.at_level("WARNING", logger="groupcoord.coordinator.runtime.shard"):
        second.on_loaded(stale, LoadResult(10_000, 9, [], [], 0, 0.0))
        world.run()
    assert not [r for r in caplog.records if "reloading" in r.getMessage()]
    assert second.status is ShardStatus.ACTIVE and offsets(second.committed) == {0: 1}
    assert second.next_offset == world.log.end[0]


def test_an_illegal_transition_raises_and_leaves_the_shard_as_it_was() -> None:
    world = World()
    shard = world.shard()
    with pytest.raises(IllegalTransition, match="closed -> active"):
        shard._transition_to(ShardPhase.ACTIVE)  # serving without a load
    assert shard.phase is ShardPhase.CLOSED and shard.generation == 0
    shard = world.loaded()
    with pytest.raises(IllegalTransition, match="active -> claiming"):
        shard._transition_to(ShardPhase.CLAIMING)  # claiming without a load's end
    assert shard.phase is ShardPhase.ACTIVE


def test_a_reload_with_appends_in_flight_drains_them_before_it_loads() -> None:
    world = World()
    shard = world.loaded()
    waiting = shard.submit(write(commit(0, 5)))
    world.loop.step()  # the flush: the append is handed to the log, not yet reported
    assert shard._unreported == 1
    shard.reload("test")
    assert shard.phase is ShardPhase.DRAINING and shard.status is ShardStatus.LOADING
    assert isinstance(waiting.exception(), ShardNotAvailable)
    world.run()
    assert shard.status is ShardStatus.ACTIVE and offsets(shard.committed) == {0: 5} and shard.replay_matches()
    moves = [(before, after) for _, before, after in world.hosts[0].transitions.seen]
    assert moves[-4:] == [
        (ShardPhase.ACTIVE, ShardPhase.DRAINING),
        (ShardPhase.DRAINING, ShardPhase.LOADING),
        (ShardPhase.LOADING, ShardPhase.CLAIMING),
        (ShardPhase.CLAIMING, ShardPhase.ACTIVE),
    ]


def test_the_simulated_load_fails_at_an_unreadable_record_and_passes_it_once_an_operator_skips_it() -> None:
    """The simulated host runs the production ``ShardLoad``: an unreadable record fails the load,
    naming its offset and the fix; a ``LogSkip`` written after it lets the next load pass over it."""
    world = World()
    shard = world.loaded()
    shard.submit(write(commit(0, 5)))
    world.run()
    shard.close()
    bad = world.log.write(0, b"\x00\x01garbage", b"\x00\x01\x00\x01garbage", make_headers(shard.epoch, 0, 1))
    shard.load()
    world.run()
    assert shard.status is ShardStatus.FAILED
    error = shard.error or ""
    assert f"offset {bad}" in error and "log skip --topic " in error and f"--partition 0 --offset {bad})" in error
    key, value = encode(CoordinatorRecord(RecordType.LOG_SKIP, LogSkipKey(bad), LogSkipValue(bad, "ops", 0, "bad")))
    world.log.write(0, key, value, [])
    shard.load()
    world.run()
    assert shard.status is ShardStatus.ACTIVE and offsets(shard.committed) == {0: 5} and shard.replay_matches()


def test_the_shard_life_invariant_sees_a_move_outside_the_table_or_out_of_turn() -> None:
    seen: list[str] = []
    transitions = TransitionLog()
    world = World()
    shard = world.shard()
    transitions.transitioned(shard, ShardPhase.CLOSED, ShardPhase.LOADING)
    transitions.transitioned(shard, ShardPhase.LOADING, ShardPhase.ACTIVE)  # not in the table
    transitions.transitioned(shard, ShardPhase.CLAIMING, ShardPhase.ACTIVE)  # out of turn: it was active
    invariant_shard_life(transitions, seen.append)
    assert seen == [
        "shard 0 moved loading -> active, not in its transition table",
        "shard 0 moved claiming -> active while active",
    ]


class TimerHandlers(Handlers):
    def __init__(self) -> None:
        self.fired: list[tuple[int, Any]] = []

    def on_timer(self, state: Recorder, event: Any, now_ms: int) -> Result[None]:
        self.fired.append((now_ms, event))
        return Result(None)


def schedule(key: str, deadline_ms: int, event: Any) -> Any:
    return lambda state, now: Result(None, timers=[ScheduleTimer(key, deadline_ms, event)])


def test_a_timer_moved_later_fires_once_at_its_last_deadline_without_arming_the_loop_each_time() -> None:
    # A session timer moves with every heartbeat: moving it later must not arm a loop timer each
    # time (each one a heap operation of the loop, and a cancelled one left in its heap), and it
    # fires once, at the last deadline, with the last event; moved earlier, it fires at the
    # earlier deadline; cancelled, never.
    world = World()
    handlers = TimerHandlers()
    shard: Shard[Any] = world.hosts[0].shard(0, handlers)
    shard.load()
    world.run()
    armed: list[float] = []
    call_later = world.loop.call_later

    def counting_call_later(delay: float, callback: Any, *args: Any, context: Any = None) -> Any:
        if callback == shard._fire:
            armed.append(delay)
        return call_later(delay, callback, *args, context=context)

    world.loop.call_later = counting_call_later  # type: ignore[method-assign]
    start = world.loop.clock.now_ms()
    for i in range(10):
        shard.submit(schedule("session", start + 1000 + 100 * i, f"e{i}"))
        world.run(0)
    assert len(armed) == 1
    world.run(5000)
    assert handlers.fired == [(start + 1900, "e9")]
    assert len(armed) == 2  # armed once more, when it first came due, for the rest
    now = world.loop.clock.now_ms()
    shard.submit(schedule("other", now + 5000, "late"))
    world.run(0)
    shard.submit(schedule("other", now + 3000, "early"))
    world.run(0)
    shard.submit(schedule("gone", now + 4000, "never"))
    world.run(0)
    shard.submit(lambda state, now: Result(None, timers=[CancelTimer("gone")]))
    world.run(10_000)
    assert handlers.fired[1:] == [(now + 3000, "early")]


# --- write_now: a write that changes nothing, answered at once ------------------------------


def counted(op: Any, calls: list[int]) -> Any:
    def run(state: Any, now: int) -> Any:
        calls.append(now)
        return op(state, now)

    return run


def test_write_now_answers_a_write_without_records_at_once() -> None:
    world = World()
    shard = world.loaded()
    assert shard.write_now(write(response="steady")) == "steady"


def test_write_now_answer_waits_for_earlier_records_to_be_read_back() -> None:
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()
    first = shard.submit(write(commit(0, 5), response="commit"))
    world.run()
    # Computed on a live state holding the commit, which the log may still lose: not at once.
    answer = shard.write_now(write(response="read"))
    assert not isinstance(answer, str) and not answer.done()
    world.hosts[0].resume()
    world.run()
    assert first.result() == "commit" and answer.result() == "read"


def test_write_now_with_records_is_answered_once_they_are_read_back_and_run_once() -> None:
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()
    calls: list[int] = []
    answer = shard.write_now(counted(write(commit(0, 7), response="joined"), calls))
    assert not isinstance(answer, str)
    world.run()
    assert not answer.done() and offsets(shard.live) == {0: 7} and offsets(shard.committed) == {}
    world.hosts[0].resume()
    world.run()
    assert answer.result() == "joined" and offsets(shard.committed) == {0: 7}
    assert len(calls) == 1  # the flush took the result write_now computed, not a second run


def test_write_now_result_is_computed_again_if_the_live_state_changed_before_the_flush() -> None:
    world = World()
    shard = world.loaded()
    calls: list[int] = []
    answer = shard.write_now(counted(write(commit(0, 7), response="joined"), calls))
    assert not isinstance(answer, str)
    shard._live_changes += 1  # what a replay into the live state before the flush would do
    world.run()
    assert answer.result() == "joined" and len(calls) == 2


def test_write_now_transient_is_answered_at_once_while_earlier_records_wait() -> None:
    """A transient answer (a share acquisition, which a reload voids) does not wait behind
    earlier records still to be read back, nor behind handlers queued for the next flush: it
    runs before those."""
    world = World()
    shard = world.loaded()
    world.hosts[0].stall()
    first = shard.submit(write(commit(0, 5), response="commit"))
    world.run()
    assert shard.write_now(write(response="acquired"), transient=True) == "acquired"
    queued = shard.submit(write(commit(1, 6), response="queued"))
    assert shard.write_now(write(response="again"), transient=True) == "again"
    world.hosts[0].resume()
    world.run()
    assert first.result() == "commit" and queued.result() == "queued" and shard.replay_matches()


def test_write_now_transient_with_records_goes_first_in_the_flush_and_runs_once() -> None:
    world = World()
    shard = world.loaded()
    queued = shard.submit(write(commit(1, 6), response="queued"))
    calls: list[int] = []
    answer = shard.write_now(counted(write(commit(0, 7), response="archived"), calls), transient=True)
    assert not isinstance(answer, str)
    world.run()
    assert answer.result() == "archived" and queued.result() == "queued" and len(calls) == 1
    # Its record was computed on the live state before the queued handler's: it comes first.
    commits = [decode(e.key, e.value) for e in world.log.entries[0]]
    assert [r.key.partition for r in commits if r.type is RecordType.OFFSET_COMMIT] == [0, 1]
    assert shard.replay_matches()


def test_write_now_transient_stays_behind_a_result_computed_earlier() -> None:
    """A result ``write_now`` computed and queued must stand when its flush takes it: a later
    transient handler queues behind it rather than running first."""
    world = World()
    shard = world.loaded()
    earlier = shard.write_now(write(commit(0, 7), response="earlier"))
    calls: list[int] = []
    later = shard.write_now(counted(write(response="later"), calls), transient=True)
    assert not isinstance(earlier, str) and not isinstance(later, str) and calls == []
    world.run()
    assert earlier.result() == "earlier" and later.result() == "later" and len(calls) == 1


def test_write_now_on_a_shard_that_does_not_serve_raises_not_available() -> None:
    world = World()
    shard = world.shard()
    with pytest.raises(ShardNotAvailable):
        shard.write_now(write(response="x"))


def test_the_loaded_hooks_write_failing_as_the_shard_stops_leaves_no_unretrieved_error() -> None:
    """Nobody awaits the write of ``on_loaded`` (its timers, a classic group's completions): a
    shard closed or fenced before it is read back fails it, and that must count as retrieved,
    not end as asyncio's "Future exception was never retrieved" ERROR (seen in a chaos run at
    every fenced handover)."""

    class RecordOnLoad(Handlers):
        def on_loaded(self, state: Recorder, now_ms: int) -> Result[None]:
            return Result(None, [big_commit(1)])  # waits for its read-back

    w = World()
    shard = w.hosts[0].shard(0, RecordOnLoad())
    submitted: list[Any] = []
    submit = shard.submit

    def recording(op: Any, cause: object = None) -> Any:
        fut = submit(op, cause)
        submitted.append(fut)
        w.loop.call_soon(shard.close)  # stops before the hook's write is flushed
        return fut

    shard.submit = recording  # type: ignore[method-assign]
    shard.load()
    w.run()
    (hook,) = submitted
    # Looked at first: asking for the exception below retrieves it.
    assert hook.done() and not hook._log_traceback  # asyncio logs a dropped future that has it
    assert isinstance(hook.exception(), ShardNotAvailable)
    fresh = submit(lambda state, now: Result(None))  # the closed shard fails a new write at once
    assert fresh._log_traceback  # which, nobody retrieving it, asyncio would log
    fresh.exception()


def test_reloads_in_a_row_back_off_and_log_quietly_until_a_claim_is_read_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Every append failing at once (a producer failed fatally) had each shard reload ~50 times a
    # second and log every reload: 40k lines in 2 minutes. Reloads in a row now wait 0, 0.1 s,
    # doubling up to 5 s, and the same reason is logged again only every few seconds.
    faults = LogFaults()
    world = World(faults=faults)
    shard = world.loaded()
    loads: list[int] = []  # when each reload's load started (virtual ms)
    host = world.hosts[0]
    started = host.load

    def load(partition: int, generation: int, shard_load: Any) -> None:
        loads.append(world.loop.clock.now_ms())
        started(partition, generation, shard_load)

    host.load = load  # type: ignore[method-assign, assignment]
    faults.fail_rate = 1.0
    caplog.set_level("WARNING", logger="groupcoord.coordinator.runtime.shard")
    shard.submit(write(commit(0, 1)))
    world.run(20_000)
    # 0, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5 s: 10 loads by 16.3 s, 11 by 21.3 s. Without
    # backoff, hundreds (each load and failed claim takes a few simulated milliseconds).
    assert 5 <= len(loads) <= 3 * 11
    gaps = [b - a for a, b in zip(loads, loads[1:], strict=False)]
    assert all(gap >= 100 / 3 for gap in gaps[1:]), gaps
    assert max(gaps) <= 3 * 5_000 and max(gaps) >= 5_000 / 3, gaps
    reload_lines = [r for r in caplog.records if "reloading from the log" in r.getMessage()]
    assert 1 <= len(reload_lines) <= 8, [r.getMessage() for r in reload_lines]
    assert shard.status is ShardStatus.LOADING
    # The failure ends: the next load claims the shard, and the backoff starts over.
    faults.fail_rate = 0.0
    world.run(6_000)
    assert shard.status is ShardStatus.ACTIVE and shard.reloads == 0
    fut = shard.submit(write(commit(1, 2)))
    world.run()
    assert fut.result() == "ok" and offsets(shard.committed).get(1) == 2
    faults.fail_rate = 1.0
    loads.clear()
    shard.submit(write(commit(2, 3)))
    world.run(150)  # the first reload of a new run waits for nothing, the second 0.1 s
    faults.fail_rate = 0.0
    world.run(1000)
    assert len(loads) >= 2 and loads[1] - loads[0] < 300, loads
    assert shard.status is ShardStatus.ACTIVE
