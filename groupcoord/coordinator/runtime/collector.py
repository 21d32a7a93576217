"""Keeps CPython's cyclic collector from walking the shards' state over and over.

A shard's state is millions of small long-lived objects for a big group (5,000 members with
10,000 partitions: every member's assignment maps and records), and every full collection of the
cyclic collector walks all of them. While such a group changed (a mass join, a rolling restart)
the state grew or churned enough to set off full collections again and again: profiled with
py-spy --native, half of the serve process's CPU was ``gc_collect_main``; for 100-partition
commits, 40% of the process (the records and futures in flight outlive young collections).

``SurvivorFreezer`` moves what survives two collections out of the collector's sight
(``gc.freeze``, run after each collection of generation 1 or 2, when the younger generations are
empty: what it freezes is exactly the survivors). Objects that live that long are state, which
reference counting frees when it is replaced; what is made and dropped per request dies young
and is still collected as before. The youngest generation is collected less often
(``YOUNG_THRESHOLD``), so that little of what a request makes lives long enough to be frozen.

A load freezes what it built as soon as it ends (``freeze_now``). Its survivors are replayed
with the collector held off (``collector_paused``), so all of them, a million containers and
more for a shard of 100,000 groups with 10 offsets each, are still in the youngest generation
then: the first young collection after the load walked them all (138-204 ms on the event loop,
measured with a gc callback in ``serve``), and the next collection of generation 1 again (40-176
ms), before they were frozen as survivors. Raising the thresholds only delays those walks.
A ListGroups answer's rows (100,000 for as many groups, alive until it is sent) are made with
the collector held off and frozen once made for the same reason (``freeze_answer``).

Frozen objects are freed by reference counting as usual; only a cycle that becomes garbage
while frozen stays, until it is thawed (``gc.unfreeze``: everything back in the oldest
generation, freed by the next full collection, which walks everything once). The shards' state
makes no such cycles (checked over the simulations: no group, member, offset or timer is left
for the cycle collector; a shard timer's loop handle is let go when it fires or is cancelled,
as it holds the timer; and a closed shard of the simulations is freed by reference counting
alone), so a thaw is left for rare events: a shard unloaded (``thaw``; the one time a whole
shard's state is let go, an insurance for whatever of it the real runtime's threads and
callbacks might hold in a cycle) and, as a backstop for cycles made elsewhere (an exception
kept with its traceback), every ``thaw_every_s``. After a thaw nothing is frozen again until a full collection has run, or the
thaw would be undone by the next collection of generation 1 before anything was freed.
Both calls only move lists of objects (no walk). CPython documents ``gc.freeze`` for servers
that keep a large heap for their lifetime; this applies it to survivors as they come.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Thawed this often as a backstop (see the module's text): each thaw costs one full walk of
# everything (130-200 ms with 100,000 groups of 10 offsets), so not every minute as before.
THAW_EVERY_S = 900.0
# Collections of the youngest generation every this many new container objects, instead of 700:
# what a request makes and drops (tens of thousands of objects for a 100-partition commit) then
# dies before a collection sees it, rather than being promoted, and frozen, while in flight.
# 100,000 rather than 20,000: 64 100-partition commits in flight hold about that many between
# them (the requests, records, encodings and answers: gen0's count peaked at 66k over a bench
# run), so with 20,000 young collections ran again and again over commits still in flight, 49
# in 10 s of bench/offsets_bench.py, 5% of the process's CPU; none with 100,000. A young
# collection walks only what is alive when it runs, so the rarer ones are not longer for it
# unless that much is alive.
YOUNG_THRESHOLD = 100_000
# A ListGroups answer of fewer rows is not frozen: a young collection walks that few in well under
# a millisecond, and every freeze also moves whatever garbage cycles are young at that moment out
# of the collector's sight until the next thaw. Frozen at every listing, that garbage grew a
# process polled by an exporter every 10 s by about 1 GB in 20 minutes of connection churn (a
# soak probe; closed connections' buffers in cycles), since a freeze also restarts the young
# generation's count, so no collection, and no thaw, ever came.
FREEZE_ANSWER_MIN_ROWS = 10_000


class SurvivorFreezer:
    """Installed while at least one runtime runs (``install`` and ``uninstall`` are counted)."""

    def __init__(self, thaw_every_s: float = THAW_EVERY_S) -> None:
        self.thaw_every_s = thaw_every_s
        self._last_thaw = time.monotonic()
        self._users = 0
        self._thresholds = gc.get_threshold()
        self.freezes = 0
        self.thaws = 0
        # Thawed, and not frozen again until a full collection has freed what the thaw was for.
        self._walk_due = False

    def install(self) -> None:
        self._users += 1
        if self._users == 1:
            self._last_thaw = time.monotonic()
            self._thresholds = gc.get_threshold()
            gc.set_threshold(max(YOUNG_THRESHOLD, self._thresholds[0]), *self._thresholds[1:])
            gc.callbacks.append(self._on_collection)

    def uninstall(self) -> None:
        self._users = max(0, self._users - 1)
        if self._users == 0 and self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
            gc.set_threshold(*self._thresholds)
            gc.unfreeze()
            self._walk_due = False

    def freeze_now(self) -> None:
        """Freeze everything now: at the end of a load, which built the shard's state with the
        collector held off (see the module's text), so that no collection walks it. When the
        backstop thaw is due it is done instead: freezes here must not put it off for ever
        (it is otherwise looked at only after collections of generation 1, which a freeze puts
        off by restarting the generations' counts)."""
        if self._users > 0 and not self._walk_due:
            if time.monotonic() - self._last_thaw >= self.thaw_every_s:
                self.thaw()
                return
            self.freezes += 1
            gc.freeze()

    def freeze_answer(self, rows: int) -> None:
        """Freeze everything now, once a large answer's objects are made (ListGroups' 100,000
        rows), before a young collection walks them while the answer is encoded and sent: they
        are freed by reference counting as it goes. What else was young then is frozen with
        them; it is freed the same way, or, if it was a cycle, at the next thaw (see the
        module's text). Only for ``FREEZE_ANSWER_MIN_ROWS`` rows and more, and not while a thaw
        waits for its full collection."""
        if rows >= FREEZE_ANSWER_MIN_ROWS:
            self.freeze_now()

    def thaw(self) -> None:
        """Everything frozen back to the collector, for its next full collection to free what
        became cyclic garbage while frozen (a shard dropped)."""
        if self._users > 0:
            self._last_thaw = time.monotonic()
            self.thaws += 1
            self._walk_due = True
            gc.unfreeze()

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] < 1:
            return
        if self._walk_due:
            if info["generation"] < 2:
                return
            self._walk_due = False  # the full collection has run: freeze what it left
        elif time.monotonic() - self._last_thaw >= self.thaw_every_s:
            self.thaw()
            return
        self.freezes += 1
        gc.freeze()


# The one the runtimes of this process share.
SHARED = SurvivorFreezer()


class PauseHolds:
    """Counted holds on the collector, shared by everyone in the process who holds it off: the
    log reader's thread while a load is read (``log.CollectorPause``), a load's replay and a
    ListGroups listing on the loop (``collector_paused``). The collector is process-wide, so a
    pause ending must not turn it back on under another still running (a listing that began
    before a load and ended during it did, and the load's young collections walked its state
    again). It comes back on when the last hold goes, and only if the first hold turned it off:
    a collector someone else turned off stays off."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._turned_off = False

    def hold(self) -> None:
        with self._lock:
            if self._count == 0:
                self._turned_off = gc.isenabled()
                if self._turned_off:
                    gc.disable()
            self._count += 1

    def release(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count == 0 and self._turned_off:
                self._turned_off = False
                gc.enable()


# The one every pause of this process counts on.
HOLDS = PauseHolds()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector held off meanwhile, if it was on: for a burst that makes only
    long-lived state (a load's survivors replayed into the fresh states, hundreds of thousands
    of containers for a shard of many groups), which young collections would walk again and
    again for nothing (measured: 0.3-0.4 us a record instead of 1 us)."""
    HOLDS.hold()
    try:
        yield
    finally:
        HOLDS.release()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_TRIM = _malloc_trim()


def release_freed_heap() -> None:
    """Hand the C heap's free memory back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). A load frees at its end what it read through (librdkafka's fetched buffers, the
    load's large tables), and glibc keeps such memory for reuse: measured after a load of 500k
    offsets, 100-115 bytes of RSS per offset came back, in 5-6 ms."""
    if _TRIM is not None:
        _TRIM(0)
