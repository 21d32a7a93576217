"""Listener ports for tests and the drill come from below the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from groupcoord import local_broker


def test_ports_are_free_and_below_the_ephemeral_range() -> None:
    low = local_broker._ephemeral_low()
    for _ in range(20):
        port = local_broker.free_port()
        assert local_broker._LOWEST_LISTEN_PORT <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # nothing holds it


def test_without_room_below_the_range_any_free_port_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    narrow = tmp_path / "range"
    narrow.write_text("10500\t60999\n")
    monkeypatch.setattr(local_broker, "_EPHEMERAL_RANGE", narrow)
    assert local_broker._ephemeral_low() == 10500
    assert local_broker.free_port() >= 1024
    monkeypatch.setattr(local_broker, "_EPHEMERAL_RANGE", tmp_path / "missing")
    assert local_broker._ephemeral_low() == 32768
