"""Run ``groupcoord serve`` as a real child process for tests."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path


class ServeProcess:
    def __init__(self, bootstrap: str, port: int, topic: str, partitions: int = 4, log: Path | None = None) -> None:
        self.args = [
            sys.executable,
            "-m",
            "cli.main",
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

    def start(self, timeout: float = 60.0) -> ServeProcess:
        stderr = open(self.log, "a") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=stderr, text=True)
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
