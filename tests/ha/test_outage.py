"""A broker outage must not take a sidecar down (issue 22, item 3; security review S5).

The broker is killed with -9 and started again on the same port: with the local broker's memory
store it comes back empty, so the sidecars must create the log and directory topics again, rejoin
placement, and serve from the new log. Before the fix every serve process aborted in librdkafka
(``rd_kafka_enq_once_del_source_return``) when the broker came back.

The log topic deleted on the cluster itself (not through the sidecar) is the same loss without
the outage. Before the reader relay (``groupcoord/coordinator/gateway/reader_relay.py``) every serve process
died with SIGSEGV in librdkafka a fraction of a second after the deletion.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from groupcoord.local_broker import LocalBroker, free_port
from tests.ha.sidecars import Committer, Sidecar, readiness, stop_all, wait_for
from tests.topics import ensure_topic


def _assert_alive(sidecars: list[Sidecar]) -> None:
    dead = [s for s in sidecars if not s.alive]
    assert not dead, [(s.proc.returncode if s.proc else None, s.log.read_text()[-1500:]) for s in dead]


def _ready_or_dead(sidecars: list[Sidecar], health: list[str]) -> bool:
    return not all(s.alive for s in sidecars) or all(readiness(h)[0] == 200 for h in health)


def _ride_out_a_restart(tmp_path: Path, processes: int) -> None:
    broker_port = free_port()
    broker = LocalBroker(port=broker_port, log_file=tmp_path / "broker.log").start()
    sidecars: list[Sidecar] = []
    health: list[str] = []
    committer: Committer | None = None
    try:
        ensure_topic(broker.bootstrap, "t")
        for i in range(processes):
            health.append(f"127.0.0.1:{free_port()}")
            env = {"GROUPCOORD_METRICS_LISTEN": health[-1]}
            sidecars.append(Sidecar(broker.bootstrap, "__gc_outage", tmp_path / f"serve{i}.log", 2, env=env))
        for sidecar in sidecars:
            sidecar.spawn()
        for sidecar in sidecars:
            sidecar.wait_listening()
        committer = Committer(sidecars[0].address, "outage-group")
        committer.commit_until_acked(30)
        wait_for(lambda: all(readiness(h)[0] == 200 for h in health), 30, "every sidecar ready")

        assert broker.process is not None
        broker.process.kill()
        broker.process.wait(10)
        broker.process = None
        # Long enough for requests to the group coordinator to time out while it is unreachable.
        time.sleep(8)
        _assert_alive(sidecars)
        for address in health:
            status, body = readiness(address)
            assert status == 503 and "cluster" in body, body

        broker = LocalBroker(port=broker_port, log_file=tmp_path / "broker.log").start()
        ensure_topic(broker.bootstrap, "t")  # the memory store lost it too
        wait_for(lambda: _ready_or_dead(sidecars, health), 60, "every sidecar ready again")
        _assert_alive(sidecars)
        committer.commit_until_acked(60)
        _assert_alive(sidecars)
        errors = [r["msg"] for s in sidecars for r in s.records() if r.get("level") == "ERROR"]
        assert any("__gc_outage is gone" in str(m) for m in errors), errors
    finally:
        if committer is not None:
            committer.close()
        stop_all(sidecars)
        broker.stop(graceful=False)


def test_serve_rides_out_a_broker_restart(tmp_path: Path) -> None:
    _ride_out_a_restart(tmp_path, 1)


@pytest.mark.slow
def test_three_serve_processes_ride_out_a_broker_restart(tmp_path: Path) -> None:
    _ride_out_a_restart(tmp_path, 3)


def test_serve_rides_out_its_log_topic_deleted_on_the_cluster(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    topic = f"{unique_name}-orders"
    ensure_topic(bootstrap, topic)
    health = f"127.0.0.1:{free_port()}"
    # With the reader relay on, as it is by default (GROUPCOORD_READER_RELAY=false brings back the SIGSEGV).
    sidecar = Sidecar(bootstrap, unique_name, tmp_path / "serve.log", 2, env={"GROUPCOORD_METRICS_LISTEN": health})
    committer: Committer | None = None
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        sidecar.start()
        committer = Committer(sidecar.address, f"{unique_name}-group", topic)
        before = committer.commit_until_acked(30)
        wait_for(lambda: readiness(health)[0] == 200, 30, "the sidecar ready")

        admin.delete_topics([unique_name])[unique_name].result(10)
        # Not ready while the log is gone and until the next look at the cluster finds it back.
        wait_for(lambda: not sidecar.alive or readiness(health)[0] == 503, 30, "the sidecar not ready")
        _assert_alive([sidecar])
        wait_for(lambda: not sidecar.alive or readiness(health)[0] == 200, 60, "the sidecar ready again")
        _assert_alive([sidecar])
        metadata = admin.list_topics(unique_name, timeout=10).topics[unique_name]
        assert metadata.error is None and len(metadata.partitions) == 2

        # Served from the new, empty log: the commit made before is gone with the old one.
        assert committer.committed() == -1001
        after = committer.commit_until_acked(60)
        assert after > before and committer.committed() == after
        _assert_alive([sidecar])
        errors = [str(r["msg"]) for r in sidecar.records() if r.get("level") == "ERROR"]
        assert any(f"{unique_name} is gone" in m for m in errors), errors
    finally:
        if committer is not None:
            committer.close()
        assert sidecar.stop() == 0, sidecar.log.read_text()[-1500:]
