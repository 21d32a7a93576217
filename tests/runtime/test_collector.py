"""SurvivorFreezer: what survives a collection of generation 1 is frozen out of later full
collections; a thaw puts it back; uninstall leaves nothing frozen."""

from __future__ import annotations

import gc
import weakref

from groupcoord.coordinator.runtime.collector import (
    FREEZE_ANSWER_MIN_ROWS,
    SurvivorFreezer,
    collector_paused,
    release_freed_heap,
)
from groupcoord.coordinator.runtime.log import CollectorPause


def test_survivors_are_frozen_and_thawed() -> None:
    freezer = SurvivorFreezer(thaw_every_s=3600)
    freezer.install()
    try:
        kept = [{"state": [i]} for i in range(1000)]
        gc.collect(1)
        assert freezer.freezes >= 1 and gc.get_freeze_count() >= len(kept)
        # Garbage made after the freeze is still collected by the young generations.
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect(0) >= 1
        freezer.thaw_every_s = 0.0
        gc.collect(1)
        assert freezer.thaws == 1 and gc.get_freeze_count() == 0
    finally:
        freezer.uninstall()
    assert gc.get_freeze_count() == 0 and freezer._on_collection not in gc.callbacks


def test_installs_are_counted_and_the_thresholds_restored() -> None:
    before = gc.get_threshold()
    freezer = SurvivorFreezer()
    freezer.install()
    freezer.install()
    freezer.uninstall()
    assert freezer._on_collection in gc.callbacks and gc.get_threshold()[0] >= 20_000
    freezer.uninstall()
    assert freezer._on_collection not in gc.callbacks and gc.get_threshold() == before


def test_a_pause_holds_the_collector_off_and_turns_on_only_what_it_turned_off() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freed_heap_is_released_wherever_the_c_library_allows() -> None:
    kept = [bytes(4096) for _ in range(100)]
    del kept
    release_freed_heap()  # glibc: malloc_trim; elsewhere nothing, and never an error


def test_commits_in_flight_set_off_no_young_collection() -> None:
    """64 100-partition commits in flight (appended, not read back yet) hold tens of thousands of
    objects (requests, records, encodings, answers) that reference counting frees once they are
    answered: the youngest generation's threshold leaves them to it. With 20,000 it walked them
    again and again (49 young collections in a 10 s run of bench/offsets_bench.py)."""
    import random
    from collections.abc import Callable

    from groupcoord.coordinator.group_shard import GroupCoordinatorShard
    from groupcoord.coordinator.groups.context import RequestContext
    from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
    from groupcoord.coordinator.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
    )
    from groupcoord.coordinator.runtime.api import Result
    from tests.sim.kernel import SimHost, SimLog, sim_loop

    loop = sim_loop()
    host = SimHost(SimLog(), loop, "o0", random.Random(1))
    handlers = GroupCoordinatorShard()
    shard = host.shard(0, handlers)
    shard.load()
    while (at := loop.next_at()) is not None and at <= 1000:
        loop.step()
    requests = [
        OffsetCommitRequest(
            group_id=f"g{i % 50}",
            topics=[
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=p, committed_offset=i) for p in range(100)
                    ],
                )
            ],
        )
        for i in range(64)
    ]
    context = RequestContext(api_version=9)

    def commit(r: OffsetCommitRequest) -> Callable[[GroupCoordinatorState, int], Result[OffsetCommitResponse]]:
        return lambda state, now: handlers.commit_offsets(state, r, now, context)

    young: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 0:
            young.append(1)

    freezer = SurvivorFreezer()
    freezer.install()
    host.stall()
    gc.collect()
    gc.callbacks.append(count)
    try:
        answers = [shard.submit(commit(r)) for r in requests]
        loop.step()  # the flush: all 64 handled, encoded and appended, none read back
        assert shard.backlog == (0, 64)
    finally:
        gc.callbacks.remove(count)
        freezer.uninstall()
    assert young == []
    host.resume()
    while not all(a.done() for a in answers):
        loop.step()
    assert all(a.exception() is None for a in answers)


def test_a_load_freezes_what_it_built_and_a_thaw_waits_for_a_full_collection() -> None:
    freezer = SurvivorFreezer(thaw_every_s=3600)
    freezer.freeze_now()  # not installed: nothing happens
    assert gc.get_freeze_count() == 0
    freezer.install()
    try:
        loaded = [{"state": [i]} for i in range(1000)]
        freezer.freeze_now()
        assert gc.get_freeze_count() >= len(loaded)
        # A shard dropped: thawed, and nothing frozen again until a full collection has run.
        freezer.thaw()
        assert gc.get_freeze_count() == 0
        gc.collect(1)
        freezer.freeze_now()
        assert gc.get_freeze_count() == 0
        gc.collect(2)
        assert gc.get_freeze_count() >= len(loaded)
    finally:
        freezer.uninstall()
    assert gc.get_freeze_count() == 0


class _Cycle:
    """Garbage only the cyclic collector frees (it refers to itself), with a buffer as a closed
    connection's."""

    def __init__(self) -> None:
        self.me = self
        self.buffer = bytearray(1 << 16)


def test_a_small_answer_freezes_nothing_so_garbage_cycles_are_still_collected() -> None:
    """A soak probe: ListGroups froze at every call whatever its size, and with it the young
    garbage cycles of closed connections; polled every 10 s, serve grew by ~1 GB in 20 minutes."""
    freezer = SurvivorFreezer(thaw_every_s=3600)
    freezer.install()
    try:
        gc.collect()  # (which freezes its survivors: the freezer is installed)
        freezes = freezer.freezes
        cycle = _Cycle()
        gone = weakref.ref(cycle)
        del cycle
        freezer.freeze_answer(rows=3)
        assert freezer.freezes == freezes  # (the count of frozen objects falls as frozen ones are freed)
        gc.collect(0)
        assert gone() is None  # the cycle was still the collector's to free
        rows = [[i] for i in range(FREEZE_ANSWER_MIN_ROWS)]  # (lists: the collector tracks them)
        freezer.freeze_answer(rows=len(rows))
        assert freezer.freezes == freezes + 1 and gc.get_freeze_count() >= len(rows)
    finally:
        freezer.uninstall()
    assert gc.get_freeze_count() == 0


def test_freezing_does_the_backstop_thaw_when_it_is_due() -> None:
    """A freeze restarts the generations' counts, so a process freezing often (loads, large
    listings) may never reach the collection of generation 1 that looks at the backstop: the
    freeze itself does the thaw when it is due."""
    freezer = SurvivorFreezer(thaw_every_s=3600)
    freezer.install()
    try:
        kept = [{"state": [i]} for i in range(1000)]
        freezer.freeze_now()
        assert gc.get_freeze_count() >= len(kept) and freezer.thaws == 0
        freezer.thaw_every_s = 0.0
        freezer.freeze_now()
        assert freezer.thaws == 1 and gc.get_freeze_count() == 0
    finally:
        freezer.uninstall()


def test_fired_and_cancelled_shard_timers_leave_no_cycle() -> None:
    """What a frozen collector would keep for good: a shard's timers (session timeouts, join and
    sync deadlines...) that fired or were cancelled must be freed by reference counting."""
    from groupcoord.coordinator.runtime.shard import _Timer
    from tests.sim.scenarios import classic

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        simulation = classic.Simulation(classic.Scenario.random(3))
        simulation.run()  # kept alive: only what it let go of is garbage
        gc.collect()
        timers = sum(isinstance(o, _Timer) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert timers == 0
    del simulation


def test_pauses_count_so_one_ending_never_turns_the_collector_on_under_another() -> None:
    # A ListGroups listing's pause (loop thread) that began before a load's read (the reader's
    # thread) and ends during it must leave the collector off until the load's read ends too.
    listing, reader = collector_paused(), CollectorPause()
    listing.__enter__()
    reader.pause()
    listing.__exit__(None, None, None)
    assert not gc.isenabled()
    reader.resume()
    assert gc.isenabled()
    # The other order as well.
    reader.pause()
    with collector_paused():
        reader.resume()
        assert not gc.isenabled()
    assert gc.isenabled()
