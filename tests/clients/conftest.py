"""Real clients through the gateway: one ``groupcoord serve`` child process per test module.

The process serves a fresh log topic on the session broker (``bootstrap``). Server-side group
settings come through the environment exactly as an operator would pass them, so the KIP-848
heartbeat interval is 1 s instead of 5 s and the classic initial rebalance delay is short; that
keeps rebalances quick without touching anything the clients send.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess, serving

# Parsed by pydantic-settings as JSON into Settings.group (groupcoord/coordinator/config.py).
GROUP_SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.initial.rebalance.delay.ms": "500",
}
HEARTBEAT_INTERVAL_MS = 1000


@pytest.fixture(scope="package")
def sidecar(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One coordinator process for every module of tests/clients (each test has its own topics and
    groups, and what it lists it intersects with its own: a start each module, placement's
    JoinGroup wait included, was 5-10 s); its stderr is kept in the pytest temp dir."""
    log = tmp_path_factory.mktemp("sidecar") / "serve.log"
    serve = ServeProcess(bootstrap, free_port(), f"gc-clients-log-{uuid.uuid4().hex[:12]}", log=log)
    env = {
        "GROUPCOORD_GROUP": json.dumps(GROUP_SETTINGS),
        # New topics reach the coordinator's metadata cache within a second instead of ten.
        "GROUPCOORD_METADATA_REFRESH_INTERVAL_MS": "1000",
    }
    with serving(serve, env):
        yield serve


@pytest.fixture(autouse=True)
def sidecar_survives(sidecar: ServeProcess) -> Iterator[None]:
    """Fail loudly (with the tail of its log) if the coordinator process died during a test."""
    yield
    assert sidecar.proc is not None
    code = sidecar.proc.poll()
    if code is not None:
        tail = sidecar.log.read_text()[-4000:] if sidecar.log else ""
        pytest.fail(f"the groupcoord serve process exited with code {code} during the test; log tail:\n{tail}")
