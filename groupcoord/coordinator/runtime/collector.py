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
and is still collected as before. A cycle that becomes garbage after it was frozen would stay
until the next thaw: every ``thaw_every_s`` the frozen objects go back to the oldest generation
(``gc.unfreeze``), so the next full collection walks everything once and frees such cycles. The
youngest generation is collected less often (``YOUNG_THRESHOLD``), so that little of what a
request makes lives long enough to be frozen at all.
Both calls only move lists of objects (no walk). CPython documents ``gc.freeze`` for servers
that keep a large heap for their lifetime; this applies it to survivors as they come.
"""

from __future__ import annotations

import ctypes
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# Thawed this often: a full walk of everything once a minute, instead of again and again.
THAW_EVERY_S = 60.0
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


class SurvivorFreezer:
    """Installed while at least one runtime runs (``install`` and ``uninstall`` are counted)."""

    def __init__(self, thaw_every_s: float = THAW_EVERY_S) -> None:
        self.thaw_every_s = thaw_every_s
        self._last_thaw = time.monotonic()
        self._users = 0
        self._thresholds = gc.get_threshold()
        self.freezes = 0
        self.thaws = 0

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

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] < 1:
            return
        now = time.monotonic()
        if now - self._last_thaw >= self.thaw_every_s:
            self._last_thaw = now
            self.thaws += 1
            gc.unfreeze()
            return
        self.freezes += 1
        gc.freeze()


# The one the runtimes of this process share.
SHARED = SurvivorFreezer()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector held off meanwhile, if it was on: for a burst that makes only
    long-lived state (a load's survivors replayed into the fresh states, hundreds of thousands
    of containers for a shard of many groups), which young collections would walk again and
    again for nothing (measured: 0.3-0.4 us a record instead of 1 us)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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
