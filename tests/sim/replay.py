"""Replay one seed of the ownership workload with its trace: ``python -m tests.sim.replay SEED``."""

from __future__ import annotations

import sys

from tests.sim.kernel import InvariantViolation
from tests.sim.ownership import Scenario, Simulation


def main(argv: list[str]) -> int:
    seed = int(argv[1])
    sim = Simulation(Scenario.random(seed))
    try:
        sim.run()
    except InvariantViolation as exc:
        print("\n".join(sim.trace))
        print(exc)
        return 1
    print("\n".join(sim.trace))
    print(f"seed {seed}: ok after {sim.steps} steps; {dict(sim.stats)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
