"""Issue #24: exactly-once consume-transform-produce with confluent-kafka through ``groupcoord serve``."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import check_exactly_once, committed_offsets, fill_input, read_committed, run_scenario

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
    check_exactly_once(inputs, read_committed(bootstrap, sink, 1))
    probe = Consumer(
        {"bootstrap.servers": sidecar.bootstrap, "group.id": f"{unique_name}-g", "isolation.level": "read_committed"}
    )
    try:
        ends = committed_offsets(probe, [TopicPartition(source, p) for p in range(PARTITIONS)])
    finally:
        probe.close()
    assert ends == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
