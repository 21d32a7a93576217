"""``groupcoord broker``: the development broker launcher used by the fixtures."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.local_broker import free_port
from tests.processes import popen

pytestmark = pytest.mark.integration


def test_broker_prints_bootstrap_and_stops_on_sigterm() -> None:
    port = free_port()
    proc = popen(
        [sys.executable, "-m", "groupcoord.cli.main", "broker", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == f"bootstrap.servers=127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic("cli-broker-check", 1, 1)])["cli-broker-check"].result(10)
        assert "cli-broker-check" in admin.list_topics(timeout=10).topics
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_broker_rejects_a_bad_listen_address() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord.cli.main", "broker", "--listen", "127.0.0.1:notaport"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "invalid port" in result.stderr
