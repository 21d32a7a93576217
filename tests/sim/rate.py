"""Simulation throughput, for the README's figure (never a test assertion):
``python -m tests.sim.rate [WORKLOAD ...]`` runs the first seeds the suite runs and prints
scenarios per second of CPU time for each workload (CPU time, so that other processes on a
shared machine move the figure less than they move wall-clock time)."""

from __future__ import annotations

import importlib
import logging
import sys
import time

SEEDS = {"kip848": 200, "classic": 80, "migration": 40, "ownership": 80}


def main(argv: list[str]) -> int:
    logging.disable(logging.ERROR)  # reloads and fencing are logged by the shard
    for name in argv[1:] or list(SEEDS):
        workload = importlib.import_module(f"tests.sim.scenarios.{name}")
        start = time.process_time()
        for seed in range(SEEDS[name]):
            workload.run_seed(seed)
        elapsed = time.process_time() - start
        print(f"{name}: {SEEDS[name]} scenarios in {elapsed:.1f} s of CPU = {SEEDS[name] / elapsed:.1f}/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
