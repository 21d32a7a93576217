"""Run ``groupcoord serve`` as a real child process for tests."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import popen

# The local broker (Tansu) answers a JoinGroup about half a session timeout after it came in, so
# every serve start waits that long for its shards (placement is a classic group there): serve's
# default 10 s made each start wait ~5 s; 6 s, which the HA tests already use, ~3 s. A test's own
# environment or ``env`` still wins.
PLACEMENT_DEFAULTS = {"GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": "6000"}


class ServeProcess:
    def __init__(self, bootstrap: str, port: int, topic: str, partitions: int = 4, log: Path | None = None) -> None:
        self.args = [
            sys.executable,
            "-m",
            "groupcoord.cli.main",
            "serve",
            "--bootstrap-servers",
            bootstrap,
            "--listen",
            f"127.0.0.1:{port}",
            "--log-topic",
            topic,
            "--partitions",
            str(partitions),
        ]
        self.port = port
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str] = queue.Queue()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0, env: dict[str, str] | None = None) -> ServeProcess:
        """Start and wait for "listening on"; ``env`` adds settings to the environment (as an
        operator would pass them)."""
        stderr = open(self.log, "a") if self.log else subprocess.DEVNULL  # noqa: SIM115
        environment = {**PLACEMENT_DEFAULTS, **os.environ, **(env or {})}
        self.proc = popen(self.args, stdout=subprocess.PIPE, stderr=stderr, text=True, env=environment)
        assert self.proc.stdout is not None
        stdout = self.proc.stdout

        def pump() -> None:
            for line in stdout:
                self.lines.put(line.rstrip("\n"))

        threading.Thread(target=pump, daemon=True).start()
        while True:
            line = self.lines.get(timeout=timeout)
            if line.startswith("listening on "):
                return self

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.terminate()
        return self.proc.wait(30)


@contextmanager
def serving(serve: ServeProcess, env: dict[str, str]) -> Iterator[ServeProcess]:
    """``serve`` started with ``env`` (settings), stopped at the end, killed if it will not stop
    or fails to start."""
    try:
        serve.start(env=env)
    except BaseException:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.kill9()
        raise
    try:
        yield serve
    finally:
        try:
            serve.stop()
        finally:
            if serve.proc is not None and serve.proc.poll() is None:
                serve.kill9()
