"""The event-loop setting: uvloop when installed, asyncio's own on request."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from groupcoord.coordinator.config import Settings
from groupcoord.coordinator.gateway.event_loop import loop_factory

HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


def test_asyncio_means_the_default_loop() -> None:
    assert loop_factory("asyncio") is None


def test_auto_uses_uvloop_exactly_when_installed() -> None:
    factory = loop_factory("auto")
    assert (factory is not None) == HAVE_UVLOOP
    if factory is not None:
        with asyncio.Runner(loop_factory=factory) as runner:
            assert type(runner.get_loop()).__module__.startswith("uvloop")
            assert runner.run(asyncio.sleep(0, result=7)) == 7


def test_a_tls_listener_runs_on_asyncio_and_refuses_uvloop() -> None:
    # uvloop never completes a TLS handshake on the listener (README, Event loop).
    assert loop_factory("auto", tls_listener=True) is None
    with pytest.raises(ValueError, match="listener_tls"):
        loop_factory("uvloop", tls_listener=True)


def test_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="event_loop must be one of"):
        loop_factory("trio")


def test_setting_defaults_to_auto_and_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().event_loop == "auto"
    monkeypatch.setenv("GROUPCOORD_EVENT_LOOP", "asyncio")
    assert Settings().event_loop == "asyncio"
    monkeypatch.setenv("GROUPCOORD_EVENT_LOOP", "libev")
    with pytest.raises(ValueError):
        Settings()


def test_auto_falls_back_to_asyncio_where_uvloop_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # Installed but broken (or absent): auto still runs, on asyncio's loop; asked for, it fails.
    monkeypatch.setitem(sys.modules, "uvloop", None)  # any import of it raises ImportError
    assert loop_factory("auto") is None
    with pytest.raises(ImportError):
        loop_factory("uvloop")
