"""A process whose connections to the cluster are reset (and made again at once) keeps its shards.

A chaos probe dropped every connection of one ``serve`` to the broker 5 times, 3 s apart (a TCP
proxy between them): that healthy process stopped serving its shards three times in 30 s, each
time a session after it had been given them again. librdkafka 2.16 answered each reset with a
re-bootstrap that left placement's owners query waiting on a decommissioned coordinator
(librdkafka #5511) until its client was replaced 30 s later, and the watchdog took the silence of
that query for the loss of the placement group, while the consumer's heartbeats were answered all
along. (That a silent coordinator still stops the shards: ``test_placement_session_clock.py``.)
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from groupcoord.coordinator.runtime.placement import Placement, PlacementConfig
from groupcoord.local_broker import LocalBroker, free_port
from tests.ha.sidecars import SESSION_TIMEOUT_MS, recording_placement, wait_for
from tests.topics import ensure_topic


class ResettingProxy:
    """Forwards ``listen`` to ``upstream``; ``reset`` drops every connection with a TCP reset (new
    connections are forwarded again at once)."""

    def __init__(self, listen: int, upstream: int) -> None:
        self.upstream = upstream
        self.server = socket.create_server(("127.0.0.1", listen))
        self.server.settimeout(0.2)
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                broker = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, broker]
            threading.Thread(target=self._pump, args=(client, broker), daemon=True).start()
            threading.Thread(target=self._pump, args=(broker, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def reset(self) -> None:
        with self.lock:
            dropped, self.sockets = self.sockets, []
        for sock in dropped:
            # Now, not at the next request: a pump thread blocked in recv keeps a closed socket open.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()
        self.reset()


@pytest.mark.integration
def test_connections_reset_and_made_again_cost_no_shard(unique_name: str) -> None:
    port, proxied = free_port(), free_port()
    # Every client, placement's too, reaches the broker only through the proxy (the broker
    # advertises the proxy's address).
    broker = LocalBroker(port=port, advertised=("127.0.0.1", proxied))
    proxy = ResettingProxy(proxied, port)
    broker.start()
    bootstrap = f"127.0.0.1:{proxied}"
    moves: list[tuple[str, list[int]]] = []
    placement: Placement | None = None
    try:
        ensure_topic(bootstrap, unique_name, partitions=2)
        config = PlacementConfig(
            unique_name, f"{unique_name}-p", f"{unique_name}-d", None, SESSION_TIMEOUT_MS, 1000, "roundrobin", 1000
        )
        placement = recording_placement(bootstrap, config, moves)
        placement.start()
        wait_for(lambda: placement is not None and placement.assigned == {0, 1}, 30, "the first assignment")
        for _ in range(5):
            proxy.reset()
            time.sleep(2)
        # A session and more after the last reset: long enough for the watchdog to have stopped
        # the shards, had it taken the resets for a lost placement group.
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 2)
        assert moves == [("assigned", [0, 1])]
        assert placement.assigned == {0, 1}
    finally:
        if placement is not None:
            placement.close()
        proxy.stop()
        broker.stop(graceful=False)
