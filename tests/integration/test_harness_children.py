"""The serve processes the test harnesses start die with the test run that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.processes import alive, popen

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# A test run in miniature: one serve of each harness (the HA sidecar forked from a thread that
# ends at once, as a test's helper thread might), both listening (a serve killed before it said
# so, by the pipe its harness had closed, would prove nothing), then it waits to be killed.
HARNESS = textwrap.dedent(
    """
    import sys, threading, time
    from pathlib import Path
    from groupcoord.local_broker import free_port
    from tests.ha.sidecars import Sidecar
    from tests.integration.serve_process import ServeProcess

    bootstrap, topic, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    fast = {"GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": "2000", "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": "200"}
    sidecar = Sidecar(bootstrap, topic + "-ha", log, partitions=1, env=fast)
    spawning = threading.Thread(target=sidecar.spawn)
    spawning.start()
    spawning.join()
    serve = ServeProcess(bootstrap, free_port(), topic, partitions=1).start(env=fast)
    sidecar.wait_listening()
    print(sidecar.proc.pid, serve.proc.pid, flush=True)
    time.sleep(600)
    """
)


def test_serve_processes_of_a_killed_test_run_die_with_it(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    harness = popen(
        [sys.executable, "-c", HARNESS, bootstrap, unique_name, str(tmp_path / "sidecar.log")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    children: list[int] = []
    try:
        assert harness.stdout is not None
        line = harness.stdout.readline()
        children = [int(pid) for pid in line.split()]
        assert len(children) == 2, line
        # Both still run once the sidecar's spawning thread has ended: only the test run's death kills them.
        assert all(alive(pid) for pid in children), children
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in children if alive(pid)], "serve outlived the test run that started it"
    finally:
        if harness.poll() is None:
            harness.kill()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
