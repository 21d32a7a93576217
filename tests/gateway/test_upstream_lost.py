"""A client connection's own broker connection lost while the client is idle: the client sees its
connection close, as it would see a broker's, after the answers it is owed.

Each client connection forwards over one upstream connection of its own (``gateway.upstream``),
which carries the client's SASL login and the broker's per-connection state: once it is gone the
client connection cannot forward again, and used to learn that only at its next forwarded request.
A scripted broker on loopback (``test_streaming``'s) stands for the broker.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer
from groupcoord.coordinator.gateway.connection import ClientConnection
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, heartbeat
from tests.gateway.test_streaming import FETCH, LOOPS, ScriptedBroker, body_for, framed, request, run_on
from tests.gateway.wire_client import WireClient


async def answer_each(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
    writer.write(framed(body_for(correlation_id, 100, correlation_id)))
    await writer.drain()


class HeldHandler(ScriptedHandler):
    """Heartbeats of group "held" are answered once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, HeartbeatRequest) and request.group_id == "held":
            self.holding.set()
            await self.release.wait()
        return await super().handle(context, request)


def run(test: Any, loop: str, handler: ScriptedHandler | None = None) -> None:
    async def main() -> None:
        async with ScriptedBroker(answer_each) as broker:
            config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{broker.port}"], listen_port=0)
            async with GatewayServer(config, handler or ScriptedHandler()) as server:
                client = await WireClient.connect("127.0.0.1", server.port)
                try:
                    await asyncio.wait_for(test(server, client, broker), 30)
                finally:
                    await client.close()

    run_on(loop, main)


def the_connection(server: GatewayServer) -> ClientConnection:
    (connection,) = (c for c in server.connections.values() if c is not None)
    return connection


async def upstream_lost(connection: ClientConnection) -> None:
    while connection.upstream is None or not connection.upstream.closed:
        await asyncio.sleep(0.01)


def drop(broker: ScriptedBroker, how: str) -> None:
    """End the broker's side of the one upstream connection: a clean close (FIN) or a reset."""
    (writer,) = broker.connections
    if how == "close":
        writer.close()
    else:
        writer.transport.abort()


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("how", ["close", "reset"])
def test_an_idle_client_is_closed_when_its_broker_connection_drops(loop: str, how: str) -> None:
    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        client.send_raw(request(FETCH, 1))
        assert await client.read_frame() == body_for(1, 100, 1)
        # Nothing owed, nothing sent: the client waits, as an idle consumer or producer does.
        drop(broker, how)
        assert await client.closed_by_peer(timeout=10)

    run(test, loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_answers_owed_when_the_broker_connection_drops_are_written_first(loop: str) -> None:
    handler = HeldHandler()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        client.send_raw(request(FETCH, 1))
        assert await client.read_frame() == body_for(1, 100, 1)
        client.send(HEARTBEAT, 4, heartbeat("held", code=7), correlation_id=2)
        await handler.holding.wait()
        drop(broker, "close")
        await upstream_lost(the_connection(server))
        handler.release.set()
        # The answer owed is written, in its place; then the connection closes.
        cid, answer = await client.read(HEARTBEAT, 4)
        assert (cid, answer) == (2, HeartbeatResponse(error_code=7))
        assert await client.closed_by_peer(timeout=10)

    run(test, loop, handler)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_that_never_forwarded_is_not_closed_for_the_cluster(loop: str) -> None:
    """Group requests alone open no upstream connection: there is none to lose."""

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        assert await client.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        other = await WireClient.connect("127.0.0.1", server.port)
        try:
            other.send_raw(request(FETCH, 1))
            assert await other.read_frame() == body_for(1, 100, 1)
            drop(broker, "close")
            assert await other.closed_by_peer(timeout=10)
        finally:
            await other.close()
        assert await client.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()

    run(test, loop)
