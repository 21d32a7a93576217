"""A stall detector for a server's asyncio event loop, for benches that want to know what holds it.

``install(path)`` (before the loop is made) times every turn of the main thread's loop: the work
between one ``select`` returning and the next ``select`` call. A watchdog thread looks every
millisecond; while a turn has run longer than ``SAMPLE_AFTER_MS``, it takes the loop thread's
Python stack (``sys._current_frames``). Each turn of ``STALL_MS`` or more appends one JSON line
to the log as it ends: its wall-clock start, its milliseconds, the loop thread's CPU milliseconds
over it (far fewer than its milliseconds: the thread was not running, the machine busy or another
thread holding the interpreter lock), the whole process's CPU milliseconds (about the loop
thread's: no other thread of the process ran either, the machine was busy), and the stacks
sampled during it
(innermost frame last; the watchdog needs the interpreter lock, so samples come every switch
interval, 5 ms, while the loop thread holds it). ``read_stalls`` reads it back.

Only the default asyncio loop (selectors) is seen: under uvloop nothing is logged.
"""

from __future__ import annotations

import json
import selectors
import sys
import threading
import time
from pathlib import Path
from typing import Any

STALL_MS = 10.0
SAMPLE_AFTER_MS = 5.0
_FRAMES_KEPT = 25


def _stack(frame: Any) -> list[str]:
    out: list[str] = []
    while frame is not None and len(out) < _FRAMES_KEPT:
        code = frame.f_code
        name = code.co_filename
        cut = name.rfind("groupcoord/")
        if cut < 0:
            cut = name.rfind("/") + 1
        out.append(f"{name[cut:]}:{frame.f_lineno}:{code.co_name}")
        frame = frame.f_back
    return out[::-1]


def install(path: str) -> None:
    out = open(path, "a", buffering=1)  # noqa: SIM115 (open for the life of the process)
    main = threading.main_thread().ident or 0
    # [turn started (perf_counter) or 0.0 while in select, wall-clock start, turn number,
    # the loop thread's CPU time at the start, the whole process's]
    turn: list[Any] = [0.0, 0.0, 0, 0.0, 0.0]
    samples: list[list[str]] = []
    original = selectors.DefaultSelector.select

    def select(self: Any, timeout: float | None = None) -> Any:
        if threading.get_ident() != main:
            return original(self, timeout)
        began = turn[0]
        if began:
            ms = (time.perf_counter() - began) * 1000
            if ms >= STALL_MS:
                cpu_ms = (time.thread_time() - turn[3]) * 1000
                process_ms = (time.process_time() - turn[4]) * 1000
                line = {
                    "start": turn[1],
                    "ms": round(ms, 3),
                    "cpu_ms": round(cpu_ms, 3),
                    "process_cpu_ms": round(process_ms, 3),
                    "stacks": list(samples),
                }
                out.write(json.dumps(line) + "\n")
            turn[0] = 0.0
        samples.clear()
        try:
            return original(self, timeout)
        finally:
            turn[2] += 1
            turn[1] = time.time()
            turn[3] = time.thread_time()
            turn[4] = time.process_time()
            turn[0] = time.perf_counter()

    def watch() -> None:
        while True:
            time.sleep(0.001)
            began, number = turn[0], turn[2]
            if began and (time.perf_counter() - began) * 1000 >= SAMPLE_AFTER_MS:
                frame = sys._current_frames().get(main)  # noqa: SLF001
                if frame is not None and turn[2] == number and turn[0]:
                    samples.append(_stack(frame))

    selectors.DefaultSelector.select = select  # type: ignore[method-assign]
    threading.Thread(target=watch, name="loop-stall-watchdog", daemon=True).start()


def read_stalls(path: Path) -> list[dict[str, Any]]:
    """Every stall logged in ``path``: start (wall clock), ms, stacks."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
