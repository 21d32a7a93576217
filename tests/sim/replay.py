"""Replay one seed of a workload with its trace: ``python -m tests.sim.replay WORKLOAD SEED``,
WORKLOAD one of kip848, classic, migration, ownership, share_partition."""

from __future__ import annotations

import importlib
import sys

from tests.sim.kernel import InvariantViolation

WORKLOADS = ("kip848", "classic", "migration", "ownership", "share_partition")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in WORKLOADS or not argv[2].lstrip("-").isdigit():
        print(f"usage: python -m tests.sim.replay {{{','.join(WORKLOADS)}}} SEED")
        return 2
    workload, seed = importlib.import_module(f"tests.sim.scenarios.{argv[1]}"), int(argv[2])
    sim = workload.Simulation(workload.Scenario.random(seed))
    try:
        sim.run()
    except InvariantViolation as exc:
        print("\n".join(sim.trace))
        print(exc)
        return 1
    print("\n".join(sim.trace))
    print(f"{argv[1]} seed {seed}: ok after {sim.steps} steps; {dict(sorted(sim.stats.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
