"""Transactional offsets through a real ``groupcoord serve``: one process for the package (each
test uses its own topics, groups and transactional ids), in front of the session broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess, serving


@pytest.fixture(scope="package")
def sidecar(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    log = tmp_path_factory.mktemp("sidecar") / "serve.log"
    serve = ServeProcess(bootstrap, free_port(), f"gc-txn-log-{uuid.uuid4().hex[:12]}", log=log)
    env = {
        "GROUPCOORD_METADATA_REFRESH_INTERVAL_MS": "1000",
        "GROUPCOORD_GROUP": '{"group.initial.rebalance.delay.ms": "200"}',
    }
    with serving(serve, env):
        yield serve
