"""JavaScript Kafka clients through the gateway: ``@platformatic/kafka`` (its own protocol code, KIP-848
and classic) and KafkaJS (classic eager only), from npm (``js/package.json``; ``fetch.py`` runs
``npm ci`` into the git-ignored ``js/node_modules``). One Node driver per client (``js/*.mjs``) runs
the members; the scenario and its checks are ``driven.run_group_scenario``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.driven import PARTITIONS, Driver, run_group_scenario
from tests.clients.fetch import JS, node_modules
from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

# client/mode: (driver script, mode argument, incremental, tolerated commit errors)
CASES = {
    "platformatic-consumer": ("platformatic.mjs", "consumer", True, ()),
    "platformatic-eager": ("platformatic.mjs", "eager", False, ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION")),
    "kafkajs-eager": ("kafkajs.mjs", "eager", False, ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION")),
}


@pytest.fixture(scope="module")
def node() -> str:
    """Node and the npm packages; anything missing fails the tests (never skips)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed (Debian: apt-get install nodejs npm)")
    node_modules()
    return found


@pytest.fixture
def js_driver(
    node: str, sidecar: ServeProcess, unique_name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Driver]:
    script, mode, _, _ = CASES[request.param]
    argv = [node, str(JS / script), mode, sidecar.bootstrap, f"{unique_name}-group", unique_name]
    driver = Driver(argv, tmp_path / f"{request.param}.log")
    try:
        yield driver
    finally:
        driver.stop()


@pytest.mark.parametrize("js_driver", list(CASES), indirect=True)
def test_js_consumer_group(
    js_driver: Driver, request: pytest.FixtureRequest, bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """All partitions covered, none owned twice, a join and a leave absorbed (incrementally for KIP-848),
    commits succeed, committed offsets complete."""
    _, _, incremental, tolerated = CASES[request.node.callspec.params["js_driver"]]
    create_topic(bootstrap, unique_name, PARTITIONS)
    run_group_scenario(js_driver, sidecar.bootstrap, f"{unique_name}-group", unique_name, incremental, tolerated)
