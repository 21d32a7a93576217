"""What every scenario of the kernel owes: one seed, one history; a violation names its seed."""

from __future__ import annotations

import importlib

import pytest

SCENARIOS = ("kip848", "classic", "migration", "ownership", "share_partition")


@pytest.mark.parametrize("name", SCENARIOS)
def test_same_seed_same_history(name: str) -> None:
    scenario = importlib.import_module(f"tests.sim.scenarios.{name}")
    a, b = scenario.run_seed(4242), scenario.run_seed(4242)
    assert a.trace == b.trace
    assert a.log.entries == b.log.entries


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_violation_names_the_seed(name: str) -> None:
    scenario = importlib.import_module(f"tests.sim.scenarios.{name}")
    sim = scenario.Simulation(scenario.Scenario.random(7))
    with pytest.raises(AssertionError, match="seed=7"):
        sim.fail("boom")
