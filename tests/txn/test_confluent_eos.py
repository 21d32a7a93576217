"""Issue #24: exactly-once consume-transform-produce with confluent-kafka through ``groupcoord serve``."""

from __future__ import annotations

import pytest

from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import check_outcome, fill_input, run_scenario

pytestmark = pytest.mark.integration

PARTITIONS = 2
RECORDS = 24


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consume_transform_produce_exactly_once(
    bootstrap: str, sidecar: ServeProcess, unique_name: str, protocol: str
) -> None:
    source, sink = f"{unique_name}-in", f"{unique_name}-out"
    ensure_topic(bootstrap, source, PARTITIONS)
    ensure_topic(bootstrap, sink, 1)
    inputs = fill_input(bootstrap, source, PARTITIONS, RECORDS)

    stats = run_scenario(sidecar.bootstrap, source, sink, f"{unique_name}-g", f"{unique_name}-tx", RECORDS, protocol)

    assert stats["aborted"] == 1 and stats["fenced"] == 1, stats
    check_outcome(bootstrap, sidecar.bootstrap, inputs, source, sink, f"{unique_name}-g")
