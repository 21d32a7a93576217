"""``groupcoord broker`` / the embedded broker on a port it cannot bind says why."""

from __future__ import annotations

import logging
import signal
import socket

import pytest

from groupcoord.local_broker import BrokerStartError, LocalBroker, free_port


def test_a_port_bound_without_a_listener_is_named_in_the_error() -> None:
    # Bound but not listening (as the local end of a connection is): nothing accepts there, so only
    # the broker's own bind fails, and it exits. The error said "exited with code 0" and no more.
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", port))
        with pytest.raises(BrokerStartError, match=rf"127\.0\.0\.1:{port} cannot be bound \(.*in use"):
            LocalBroker(port=port, die_with_parent=True).start(timeout=20)


def test_an_ungraceful_stop_kills_the_broker_at_once() -> None:
    # serve's embedded broker is stopped this way after serve itself has stopped (its memory store
    # has nothing to save): SIGKILL, not SIGTERM and Tansu's own shutdown of about 5 s.
    broker = LocalBroker(port=free_port(), die_with_parent=True).start(timeout=20)
    proc = broker.process
    assert proc is not None
    broker.stop(graceful=False)
    assert proc.returncode == -signal.SIGKILL and broker.process is None


def test_serve_names_the_setting_when_the_embedded_broker_port_is_taken() -> None:
    # The first README command on a machine that already runs a Kafka on 9092: the error has to
    # say how to move the embedded broker, not only that the port is taken.
    from tests.inprocess_cli import cli

    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        result = cli(
            "serve",
            "--listen",
            f"127.0.0.1:{free_port()}",
            env={"GROUPCOORD_EMBEDDED_BROKER_LISTEN": f"127.0.0.1:{port}"},
        )
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert f"127.0.0.1:{port} is already in use" in line and "GROUPCOORD_EMBEDDED_BROKER_LISTEN=HOST:PORT" in line, line
    # serve's rate limit on client-driven lines does not outlive the command in this process.
    from groupcoord.coordinator import logs

    assert all(logs.client_rate_limit not in logging.getLogger(n).filters for n in logs.CLIENT_DRIVEN_LOGGERS)
