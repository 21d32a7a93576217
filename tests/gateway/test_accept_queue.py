"""A burst of connections waits in the kernel's accept queue while the event loop is busy.

The loop accepts between its other work; a turn that handles a burst of joins can take a second
or more. Connections made meanwhile must wait in the listener's queue, not be dropped: Linux drops
the SYNs that do not fit (the client's connect waits a second for the retransmission) and ignores
the last ACK of a handshake that does not fit (the client believes it is connected, and its first
request waits seconds for the SYN-ACK to be sent again).
"""

from __future__ import annotations

import asyncio
import socket

from groupcoord.coordinator.gateway import GatewayServer
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.gateway.server import LISTEN_BACKLOG, accept_queue_length
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, heartbeat, run
from tests.gateway.wire_client import WireClient

# Well past Kafka's 50, within the kernel's cap (net.core.somaxconn, 4096 by default; 128 on old kernels).
CLIENTS = 120


def _somaxconn() -> int:
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return int(f.read())
    except OSError:
        return 128


def test_the_queue_holds_what_the_gateway_admits() -> None:
    assert accept_queue_length(1000) == 1000
    assert accept_queue_length(10) == LISTEN_BACKLOG  # never shorter than Kafka's


def test_connections_made_while_the_loop_is_busy_are_all_served() -> None:
    clients = min(CLIENTS, _somaxconn() - 1)
    assert clients > LISTEN_BACKLOG + 1

    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        frame = encode_request(RequestHeader(HEARTBEAT, 4, 7, "burst"), heartbeat(code=3))
        sockets: list[socket.socket] = []
        try:
            # Blocking connects from the loop's own thread: the loop accepts none of them until
            # this returns, as when a long turn holds it. A dropped SYN makes a connect wait a
            # second for its retransmission, past the timeout.
            for _ in range(clients):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=0.5)
                sock.sendall(frame)
                sockets.append(sock)
            assert len(sockets) == clients
            for sock in sockets:
                sock.setblocking(False)
            wires = [WireClient(*await asyncio.open_connection(sock=sock)) for sock in sockets]
            answers = await asyncio.gather(*(wire.read(HEARTBEAT, 4, timeout=5) for wire in wires))
            assert answers == [(7, HeartbeatResponse(error_code=3))] * clients
            for wire in wires:
                wire.writer.close()
        finally:
            for sock in sockets:
                sock.close()

    run(body)
