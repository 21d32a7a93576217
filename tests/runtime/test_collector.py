"""SurvivorFreezer: what survives a collection of generation 1 is frozen out of later full
collections; a thaw puts it back; uninstall leaves nothing frozen."""

from __future__ import annotations

import gc

from groupcoord.coordinator.runtime.collector import SurvivorFreezer, collector_paused, release_freed_heap


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
