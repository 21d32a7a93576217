import http.client
import json
import logging
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from groupcoord.coordinator.config import ConfigError, load_settings
from groupcoord.coordinator.observability.http import HealthServer, Readiness, shard_states
from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess
from tests.processes import popen


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_healthz_and_readyz_follow_listeners_and_shard_load() -> None:
    readiness = Readiness()
    server = HealthServer("127.0.0.1:0", readiness)
    try:
        base = f"http://{server.address}"
        assert _get(base + "/healthz") == (200, {"alive": True})
        assert _get(base + "/readyz")[0] == 503
        readiness.set_listening(True)
        readiness.set_shards({3: "loading", 1: "active"})
        status, body = _get(base + "/readyz")
        assert status == 503
        assert body["shards"] == {"1": "active", "3": "loading"}
        readiness.set_shards({3: "active", 1: "active"})
        assert _get(base + "/readyz") == (
            200,
            {"ready": True, "listening": True, "shards": {"1": "active", "3": "active"}},
        )
        # A shard whose writes are not read back (see Shard.check_stuck) makes the process not ready.
        readiness.set_shards(shard_states({3: "stuck", 1: "active"}))
        status, body = _get(base + "/readyz")
        assert status == 503 and body["shards"] == {"1": "active", "3": "stuck"}
        assert _get(base + "/nope")[0] == 404
    finally:
        server.close()


def test_metrics_listen_setting() -> None:
    assert load_settings().metrics_listen == "127.0.0.1:9095"
    assert load_settings(metrics_listen="off").metrics_listen == ""
    assert load_settings(metrics_listen="0.0.0.0:9100").metrics_listen == "0.0.0.0:9100"
    with pytest.raises(ConfigError):
        load_settings(metrics_listen="nonsense")


def test_serve_readyz_names_owned_shards(bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    health = f"127.0.0.1:{free_port()}"
    # The child inherits the environment: its health endpoint goes to a free port of this test.
    monkeypatch.setenv("GROUPCOORD_METRICS_LISTEN", health)
    serve = ServeProcess(bootstrap, free_port(), unique_name, partitions=2).start()
    try:
        assert _get(f"http://{health}/healthz") == (200, {"alive": True})
        status, body = _get(f"http://{health}/readyz")
        assert status == 200
        assert body == {"ready": True, "listening": True, "shards": {"0": "active", "1": "active"}}
    finally:
        serve.stop()


def test_serve_is_alive_but_not_ready_until_it_can_serve(tmp_path: Path) -> None:
    """A real serve process whose cluster cannot be reached yet (it keeps trying for 30 s): the
    kubelet must see it alive (no restart loop) and not ready (no traffic)."""
    health = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "GROUPCOORD_METRICS_LISTEN": health}
    serve = popen(
        [str(Path(sys.executable).with_name("groupcoord")), "serve", "-b", f"127.0.0.1:{free_port()}"]
        + ["--listen", f"127.0.0.1:{free_port()}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 20
        alive = None
        while alive is None and time.monotonic() < deadline:
            try:
                alive = _get(f"http://{health}/healthz")
            except urllib.error.URLError:
                time.sleep(0.1)
        assert alive == (200, {"alive": True})
        assert serve.poll() is None  # still trying the cluster
        assert _get(f"http://{health}/readyz") == (503, {"ready": False, "listening": False, "shards": {}})
        # A pod deleted meanwhile stops at once, not when the 30 s of retries are over.
        serve.terminate()
        assert serve.wait(15) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)


def test_serve_stops_when_its_explicit_metrics_address_is_taken() -> None:
    """A metrics_listen set on purpose (a probe and a scrape are pointed at it) that cannot be bound
    stops serve with one error line, before it reaches the cluster; the default only warns."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        env = {**os.environ, "GROUPCOORD_METRICS_LISTEN": address}
        result = subprocess.run(
            [str(Path(sys.executable).with_name("groupcoord")), "serve", "-b", f"127.0.0.1:{free_port()}"]
            + ["--listen", f"127.0.0.1:{free_port()}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert result.returncode == 1, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"cannot listen on metrics_listen {address}" in lines[0], result.stderr


def test_idle_http_connections_are_bounded_and_time_out() -> None:
    """Each HTTP connection holds a thread and a descriptor: ones beyond the per-address bound are
    closed at once, silent ones after the idle timeout, and a probe then gets in."""
    import socket
    import threading

    server = HealthServer("127.0.0.1:0", Readiness(), idle_timeout_s=0.5, max_connections=8, per_address=4)
    host, port = server.address.rsplit(":", 1)
    threads = threading.active_count()
    sockets = [socket.create_connection((host, int(port)), timeout=5) for _ in range(10)]
    try:
        time.sleep(0.2)
        assert threading.active_count() <= threads + 4
        for s in sockets:
            s.settimeout(5)
            assert s.recv(1) == b""  # closed by the server: at once beyond the bound, or idle
        assert _get(f"http://{server.address}/healthz") == (200, {"alive": True})
    finally:
        for s in sockets:
            s.close()
        server.close()


class _PausedReadiness(Readiness):
    """Answers only once ``release`` is set, as a paused process answers once it is resumed."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.release = threading.Event()

    def answer(self) -> tuple[bool, dict[str, object]]:
        self.asked.set()
        self.release.wait(5)
        return super().answer()


class _BrokenReadiness(Readiness):
    def answer(self) -> tuple[bool, dict[str, object]]:
        raise RuntimeError("readiness exploded")


def _wait_until_released(server: HealthServer) -> None:
    # The server drops a connection from its count after handle_error has run.
    deadline = time.monotonic() + 5
    while server._server._open and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_client_that_gives_up_before_its_answer_leaves_no_traceback(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    readiness = _PausedReadiness()
    server = HealthServer("127.0.0.1:0", readiness)
    try:
        host, port = server.address.rsplit(":", 1)
        client = socket.create_connection((host, int(port)), timeout=5)
        client.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert readiness.asked.wait(5)
        # A reset rather than a FIN: the server's write then fails at once, as a probe's after a
        # pause (SIGSTOP, SIGCONT) does.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        with caplog.at_level(logging.DEBUG, logger="groupcoord.coordinator.observability.http"):
            readiness.release.set()
            _wait_until_released(server)
    finally:
        server.close()
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("went away" in r.getMessage() for r in caplog.records)


def test_a_failing_request_is_logged_once_not_printed(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    server = HealthServer("127.0.0.1:0", _BrokenReadiness())
    try:
        with caplog.at_level(logging.ERROR, logger="groupcoord.coordinator.observability.http"):
            with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
                urllib.request.urlopen(f"http://{server.address}/readyz", timeout=5)
            _wait_until_released(server)
    finally:
        server.close()
    assert "Traceback" not in capfd.readouterr().err
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "readiness exploded" in str(errors[0].exc_info[1])
