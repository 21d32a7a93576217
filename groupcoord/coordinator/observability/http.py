"""A tiny HTTP server on its own thread, off the coordinator's event loop.

``/healthz`` answers 200 while the process is alive. ``/readyz`` answers 503 until the listeners are
bound and every owned shard is loaded, then 200 while the cluster can be used and placement has
settled (``placement_health``); its JSON body names the owned shards and their state, and why not
ready.
``/metrics`` serves a Prometheus registry (``groupcoord.coordinator.observability.metrics``) when one is given.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger(__name__)

# stuck: active, but a write has waited too long for its records to be read back (Shard.check_stuck).
ShardState = Literal["loading", "active", "failed", "stuck"]


class Readiness:
    """Thread-safe readiness state: written by the coordinator, read by the HTTP thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listening = False
        self._shards: dict[int, ShardState] = {}
        self._cluster_problem: str | None = None
        self._placement_problem: str | None = None

    def set_placement_problem(self, problem: str | None) -> None:
        """Why placement cannot route every shard (``placement_health``), or None."""
        with self._lock:
            self._placement_problem = problem

    def set_cluster_problem(self, problem: str | None) -> None:
        """Why the backing cluster cannot be used (unreachable, a topic missing), or None."""
        with self._lock:
            self._cluster_problem = problem

    def set_listening(self, listening: bool) -> None:
        with self._lock:
            self._listening = listening

    def set_shards(self, shards: dict[int, ShardState]) -> None:
        with self._lock:
            self._shards = dict(shards)

    def answer(self) -> tuple[bool, dict[str, object]]:
        with self._lock:
            shards = dict(self._shards)
            listening = self._listening
            problem = self._cluster_problem
            placement = self._placement_problem
        ready = (
            listening and problem is None and placement is None and all(state == "active" for state in shards.values())
        )
        body: dict[str, object] = {
            "ready": ready,
            "listening": listening,
            "shards": {str(shard): state for shard, state in sorted(shards.items())},
        }
        if problem is not None:
            body["cluster"] = problem
        if placement is not None:
            body["placement"] = placement
        return ready, body


# Each HTTP connection has its own thread and descriptor, and this port is often open to a whole
# network (0.0.0.0 in the image, for probes and scrapes): without bounds, idle connections held
# threads and descriptors forever (3,000 idle sockets: 3,000 threads, +75 MB, and descriptors the
# Kafka listener and the cluster clients then lack). A connection that sends nothing for
# IDLE_TIMEOUT_S is closed; one address holds at most PER_ADDRESS connections at once and all of
# them MAX_CONNECTIONS: more are closed at once. Probes and scrapes need one each, briefly.
IDLE_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 256
PER_ADDRESS = 16

# A client that gave up before its answer was written (a probe's 1 s timeout while the process was
# paused, a scrape cancelled) is no fault of the server's.
_CLIENT_GONE: tuple[type[BaseException], ...] = (
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
    socket.timeout,
)


class _BoundedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int, per_address: int) -> None:
        super().__init__(address, handler)
        self._max_connections = max_connections
        self._per_address = per_address
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        host = str(client_address[0])
        with self._lock:
            admitted = sum(self._open.values()) < self._max_connections and self._open.get(host, 0) < self._per_address
            if admitted:
                self._open[host] = self._open.get(host, 0) + 1
        if not admitted:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(host)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(str(client_address[0]))

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver's default prints a raw traceback to stderr, where every line must be JSON.
        exc = sys.exception()
        if isinstance(exc, _CLIENT_GONE):
            log.debug("health/metrics client %s went away: %r", client_address, exc)
            return
        log.error("health/metrics request from %s failed", client_address, exc_info=exc)

    def _release(self, host: str) -> None:
        with self._lock:
            left = self._open.get(host, 0) - 1
            if left > 0:
                self._open[host] = left
            else:
                self._open.pop(host, None)


def _split(hostport: str) -> tuple[str, int]:
    host, _, port = hostport.rpartition(":")
    return host, int(port)


class HealthServer:
    """Serves /healthz and /readyz on a daemon thread; ``close`` stops it."""

    def __init__(
        self,
        listen: str,
        readiness: Readiness,
        registry: CollectorRegistry | None = None,
        *,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        per_address: int = PER_ADDRESS,
    ) -> None:
        state = readiness

        class Handler(BaseHTTPRequestHandler):
            timeout = idle_timeout_s  # socketserver sets it on the connection: a silent one is closed

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    self._send(200, {"alive": True})
                elif path == "/readyz":
                    ready, body = state.answer()
                    self._send(200 if ready else 503, body)
                elif path == "/metrics" and registry is not None:
                    data = generate_latest(registry)
                    self.send_response(200)
                    self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self._send(404, {"error": "not found"})

            def _send(self, status: int, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                # Probes hit these paths every few seconds; their access lines are noise.
                return

        self._server = _BoundedServer(_split(listen), Handler, max_connections, per_address)
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-http", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def shard_states(statuses: dict[int, str]) -> dict[int, ShardState]:
    """Runtime shard statuses as readiness states: a fenced shard is reloading; a closed one is not owned."""
    mapped: dict[int, ShardState] = {}
    for shard, status in statuses.items():
        if status == "active":
            mapped[shard] = "active"
        elif status == "failed":
            mapped[shard] = "failed"
        elif status == "stuck":
            mapped[shard] = "stuck"
        elif status in ("loading", "fenced"):
            mapped[shard] = "loading"
    return mapped
