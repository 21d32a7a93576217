import json
import urllib.error
import urllib.request

import pytest

from coordinator.config import ConfigError, load_settings
from coordinator.observability.http import HealthServer, Readiness
from deploy.local_broker import free_port
from tests.integration.serve_process import ServeProcess


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
