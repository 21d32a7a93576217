"""The cluster's broker killed with -9 under a serve process (an operator's broker crash).

Before the fix, 4 runs in 7 under pytest left serve neither reporting its shards lost nor
stopping on SIGTERM: placement's ownership commit blocked in librdkafka with no bound, so the
placement thread never noticed its session expire and the graceful stop joined it for ever.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from groupcoord.local_broker import LocalBroker, free_port
from tests.ha.sidecars import readiness, serve_alone, wait_for

SESSION_TIMEOUT_MS = 3000


@pytest.mark.integration
# Paused (connections accepted, nothing answered: every wait runs to its bound) behind --run-slow,
# to keep CI short; killed is the operator's case.
@pytest.mark.parametrize(
    "fate", [signal.SIGKILL, pytest.param(signal.SIGSTOP, marks=pytest.mark.slow)], ids=["killed", "paused"]
)
def test_serve_whose_broker_is_gone_drops_its_shards_and_stops_on_sigterm(tmp_path: Path, fate: int) -> None:
    """Killed, the broker refuses connections; paused, it accepts them and never answers."""
    broker = LocalBroker(port=free_port(), log_file=tmp_path / "broker.log").start()
    stderr_path = tmp_path / "serve.err"
    settings = {
        "GROUPCOORD_LOG_LEVEL": "INFO",
        "GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
        "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": "300",
    }
    try:
        serve, health = serve_alone(broker.bootstrap, stderr_path, settings, 30)
    except BaseException:
        broker.stop()
        raise
    try:
        assert broker.process is not None
        broker.process.send_signal(fate)

        def waited(check: Callable[[], bool], timeout: float, what: str) -> None:
            try:
                wait_for(check, timeout, what)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; log: {stderr_path.read_text()[-3000:]}") from None

        # The session, then a few seconds: no shard may still be served by a process that cannot
        # reach the cluster for longer than its session (another may own them by now).
        waited(lambda: "shards [0, 1] lost" in stderr_path.read_text(), SESSION_TIMEOUT_MS / 1000 + 5, "shards lost")
        waited(lambda: readiness(health)[0] == 503, 15, "serve to report the cluster unreachable (not ready)")
        serve.terminate()
        try:
            serve.wait(15)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"serve did not stop within 15 s; log: {stderr_path.read_text()[-3000:]}") from None
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGKILL)
            serve.wait(10)
        if broker.process is not None:
            broker.process.send_signal(signal.SIGCONT)
        broker.stop()
    assert serve.returncode == 0, stderr_path.read_text()[-3000:]
