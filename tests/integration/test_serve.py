"""``groupcoord serve`` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess
from tests.processes import popen
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration


def test_serve_with_embedded_broker_serves_commits_and_stops_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    embedded = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("GROUPCOORD_EMBEDDED_BROKER_LISTEN", embedded)
    monkeypatch.setenv("GROUPCOORD_LOG_LEVEL", "INFO")  # the shard loads are INFO records
    port = free_port()
    proc = popen(
        [sys.executable, "-m", "groupcoord.cli.main", "serve", "--listen", f"127.0.0.1:{port}", "--partitions", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"listening on 127.0.0.1:{port}"
        ensure_topic(embedded, "t")
        c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "embedded", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("t", 0, 11)], asynchronous=False)
        assert c.committed([TopicPartition("t", 0)], timeout=10)[0].offset == 11
        c.close()
        proc.terminate()
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        records = [json.loads(line) for line in proc.stderr.read().splitlines()]  # every line is JSON
        said = [str(r["msg"]) for r in records if r["logger"] == "groupcoord.coordinator.server"]
        assert any(f"bootstrap.servers={embedded}" in m for m in said), said
        assert sum("loaded in" in m for m in said) == 2, said  # the per-shard load report
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_rejects_bad_configuration() -> None:
    env = {**os.environ, "GROUPCOORD_LOG_PARTITIONS": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord.cli.main", "serve"], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "log_partitions" in lines[0] and "greater than or equal to 1" in lines[0]


def test_restart_keeps_offsets(bootstrap: str, unique_name: str) -> None:
    topic = f"{unique_name}-t"
    ensure_topic(bootstrap, topic, 5)
    serve = ServeProcess(bootstrap, free_port(), unique_name).start()
    c = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": "restart", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 100 + p) for p in range(5)], asynchronous=False)
    c.close()
    assert serve.stop() == 0
    again = ServeProcess(bootstrap, free_port(), unique_name).start()
    try:
        c = Consumer({"bootstrap.servers": again.bootstrap, "group.id": "restart", "enable.auto.commit": False})
        rows = c.committed([TopicPartition(topic, p) for p in range(5)], timeout=10)
        c.close()
        assert [r.offset for r in rows] == [100, 101, 102, 103, 104]
    finally:
        again.stop()
