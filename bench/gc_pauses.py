"""Runs a module (``groupcoord.cli.main serve ...``) with every pause of CPython's cyclic
collector logged, for benches that want to see what holds a server's event loop.

    python bench/gc_pauses.py LOG_FILE [--stalls STALL_FILE] MODULE [ARGS...]

Each collection appends one line to LOG_FILE as it ends: its wall-clock start (seconds since the
epoch), its duration in milliseconds, its generation, the objects it freed and the youngest
generation's count as it began (allocations less deallocations since the last collection or
freeze: in the millions after a load that froze nothing). A line is written
at once (a collection is rare next to a request), so the log is whole whatever stops the process.
``read_pauses`` reads it back. With ``--stalls``, every turn of the event loop of 10 ms or more
is logged to STALL_FILE too, with the loop thread's stacks sampled during it (``loop_stalls.py``).
"""

from __future__ import annotations

import gc
import runpy
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def install(path: str) -> None:
    out = open(path, "a", buffering=1)  # noqa: SIM115 (open for the life of the process)
    started = [0.0, 0.0]
    young = [0]

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0], started[1] = time.time(), time.perf_counter()
            young[0] = gc.get_count()[0]
            return
        ms = (time.perf_counter() - started[1]) * 1000
        out.write(f"{started[0]:.6f} {ms:.3f} {info['generation']} {info['collected']} {young[0]}\n")

    gc.callbacks.append(on_collection)


def read_pauses(path: Path) -> list[tuple[float, float, int, int, int]]:
    """(start, ms, generation, collected, young count) of each collection logged in ``path``."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        start, ms, generation, collected, young = line.split()
        out.append((float(start), float(ms), int(generation), int(collected), int(young)))
    return out


def pause_figures(pauses: list[tuple[float, float, int, int, int]], start: float, end: float) -> dict[str, Any]:
    """The collector's pauses that began in [start, end), by generation."""
    inside = [p for p in pauses if start <= p[0] < end]
    out: dict[str, Any] = {"collections": len(inside), "max_ms": max((p[1] for p in inside), default=0.0)}
    for generation in (0, 1, 2):
        ms = [p[1] for p in inside if p[2] == generation]
        out[f"gen{generation}"] = (
            {"count": len(ms), "p50_ms": statistics.median_high(ms), "max_ms": max(ms), "total_ms": sum(ms)}
            if ms
            else {"count": 0}
        )
    # [seconds after ``start``, ms, generation, objects freed, the youngest generation's count]
    out["over_10ms"] = [[round(p[0] - start, 2), p[1], p[2], p[3], p[4]] for p in inside if p[1] >= 10]
    return out


if __name__ == "__main__":
    log_file, module, *args = sys.argv[1:]
    install(log_file)
    if module == "--stalls":
        import loop_stalls

        stall_file, module, *args = args
        loop_stalls.install(stall_file)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
