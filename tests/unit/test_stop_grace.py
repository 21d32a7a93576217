"""serve exits once its graceful stop has taken ``stop_grace_ms``, whatever it waits on."""

from __future__ import annotations

import json
import sys

from tests.processes import run

# A stop that never ends (a librdkafka call against a cluster gone silent, say): the main thread waits for ever.
_STUCK_STOP = """
import threading
from rich.console import Console
from groupcoord.coordinator import logs
from groupcoord.coordinator.server import Say, _exit_after

logs.configure("WARNING")
_exit_after(0.5, Say(Console(stderr=True), text=False))
threading.Event().wait()
"""


def test_a_stop_that_does_not_end_exits_after_the_grace_period_saying_where_it_was() -> None:
    result = run([sys.executable, "-c", _STUCK_STOP], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    (line,) = [json.loads(x) for x in result.stderr.splitlines()]
    assert line["level"] == "ERROR" and line["logger"] == "groupcoord.coordinator.server", line
    assert str(line["msg"]).startswith("the graceful stop did not end within 0.5s ("), line
    assert str(line["msg"]).endswith("; exiting now"), line
