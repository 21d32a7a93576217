"""Fixtures of the integration tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess


@pytest.fixture(scope="package")
def sidecar(bootstrap: str) -> Iterator[ServeProcess]:
    """One ``groupcoord serve`` for the CLI tests of this package (test_cli_ops, test_cli_migrate):
    each test has its own topics and groups, and a start (placement's JoinGroup wait included) is
    5-10 s. Groups settle fast; new topics reach its metadata cache within a second."""
    serve = ServeProcess(bootstrap, free_port(), f"gc-cli-log-{uuid.uuid4().hex[:10]}", partitions=2)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GROUPCOORD_GROUP", json.dumps({"group.initial.rebalance.delay.ms": "300"}))
        env.setenv("GROUPCOORD_METADATA_REFRESH_INTERVAL_MS", "1000")
        serve.start()
    try:
        yield serve
    finally:
        serve.stop()
