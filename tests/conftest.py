"""Shared fixtures.

Integration tests run against a real Kafka-compatible broker: the project's own local broker
(``groupcoord.local_broker``, Tansu on loopback) unless ``GROUPCOORD_TEST_BOOTSTRAP`` names an
existing cluster, in which case the same tests run unchanged against it. Every test uses
fresh topic names, so a shared cluster is never polluted across tests.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from groupcoord.local_broker import LocalBroker, free_port

# Shared checkers assert too: rewritten so a failure shows its operands. Registered here, before
# any test module is collected: tests in other directories import them before their own
# directory's conftest would run (pytest then warns that it cannot rewrite them).
pytest.register_assert_rewrite("tests.clients.driven", "tests.clients.support", "tests.txn.eos")

BOOTSTRAP_ENV = "GROUPCOORD_TEST_BOOTSTRAP"

# Property tests check behaviour, never speed: no per-example deadline, so a loaded machine does
# not fail them (timings belong to the benches).
settings.register_profile("groupcoord", deadline=None)
settings.load_profile("groupcoord")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run long simulations and soak tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow") or os.environ.get("GROUPCOORD_RUN_SLOW") == "1":
        return
    skip_slow = pytest.mark.skip(reason="long run: enable with --run-slow or GROUPCOORD_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap servers of the broker the integration tests use."""
    external = os.environ.get(BOOTSTRAP_ENV)
    if external:
        yield external
        return
    log = Path(tmp_path_factory.mktemp("broker")) / "broker.log"
    broker = LocalBroker(port=free_port(), log_file=log).start()
    try:
        yield broker.bootstrap
    finally:
        # Killed: Tansu lingers 5 s on SIGTERM while any client is connected, and its memory
        # store has nothing to keep.
        broker.stop(graceful=False)


@pytest.fixture
def unique_name() -> str:
    """A fresh topic/group name per test so tests never share state on a shared cluster."""
    return f"gc-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def dead_address() -> Iterator[str]:
    """HOST:PORT where nothing answers for the whole test: the port stays bound (never listening),
    so connections are refused and no other process (another xdist worker, a child serve that took
    ``free_port()``) can start listening there, as it could on a port ``free_port()`` let go."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{held.getsockname()[1]}"


@pytest.fixture
def berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process in UTC+1 (November in Berlin), as an operator's machine may be."""
    import time

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
