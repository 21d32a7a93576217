"""Group requests the handler answers without waiting (``answer_now``) are answered as they
arrive (``ClientConnection._answer_at_once``): same answers, in request order, and the rules of
the queued path (a failing handler closes the connection, an answered request keeps the
connection from idling out). No cluster is needed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

from groupcoord.coordinator.gateway import ConnectionContext, GatewayServer
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.sasl import SaslSession
from tests.gateway.test_server import _config, connect

CGH = 68
HEARTBEAT = 12


class NowHandler:
    """ConsumerGroupHeartbeat by group: "now" answered at once, "later" once ``gate`` is set,
    "queued" not taken by ``answer_now`` (so by ``handle``), "boom" raises. The answer carries
    the request's member epoch, so answers can be told apart."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.taken_now: list[str] = []
        self.handled: list[str] = []

    def answer_now(self, context: ConnectionContext, request: Message) -> Any:
        if isinstance(request, HeartbeatRequest):  # classic: as a steady one
            self.taken_now.append("classic")
            return HeartbeatResponse(throttle_time_ms=request.generation_id)
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        if request.group_id == "queued":
            return None
        self.taken_now.append(request.group_id)
        if request.group_id == "boom":
            raise RuntimeError("handler exploded")
        if request.group_id == "later":
            return self._later(request)
        return ConsumerGroupHeartbeatResponse(member_epoch=request.member_epoch)

    async def _later(self, request: ConsumerGroupHeartbeatRequest) -> Message:
        await self.gate.wait()
        return ConsumerGroupHeartbeatResponse(member_epoch=request.member_epoch)

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        self.handled.append(request.group_id)
        return ConsumerGroupHeartbeatResponse(member_epoch=request.member_epoch)


def heartbeat(group: str, epoch: int = 1) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id=group, member_id="m", member_epoch=epoch)


def run(test: Any, **overrides: Any) -> None:
    async def main() -> None:
        handler = NowHandler()
        async with GatewayServer(_config(**overrides), handler) as server:
            await asyncio.wait_for(test(server, handler), 30)

    asyncio.run(main())


def test_a_request_answered_at_once_never_reaches_handle() -> None:
    async def body(server: GatewayServer, handler: NowHandler) -> None:
        client = await connect(server)
        # One answered by handle first: a frame that arrives before the reader first waits (uvloop
        # may deliver it in the loop turn that accepted the connection) is the reader's, as it
        # should be; from its answer on the reader waits, so every later one is offered at once.
        assert await client.call(CGH, 1, heartbeat("queued", 4)) == ConsumerGroupHeartbeatResponse(member_epoch=4)
        for epoch in (1, 2, 3):
            assert await client.call(CGH, 1, heartbeat("now", epoch)) == ConsumerGroupHeartbeatResponse(
                member_epoch=epoch
            )
        assert handler.taken_now == ["now"] * 3 and handler.handled == ["queued"]
        await client.close()

    run(body)


def test_a_classic_heartbeat_is_offered_at_once_too() -> None:
    async def body(server: GatewayServer, handler: NowHandler) -> None:
        client = await connect(server)
        assert await client.call(CGH, 1, heartbeat("queued")) == ConsumerGroupHeartbeatResponse(member_epoch=1)
        for generation in (3, 4):
            request = HeartbeatRequest(group_id="g", generation_id=generation, member_id="m")
            assert await client.call(HEARTBEAT, 4, request) == HeartbeatResponse(throttle_time_ms=generation)
        assert handler.taken_now == ["classic", "classic"] and handler.handled == ["queued"]
        await client.close()

    run(body)


def test_answers_keep_request_order_behind_one_answered_later() -> None:
    async def body(server: GatewayServer, handler: NowHandler) -> None:
        client = await connect(server)
        sent = [client.send(CGH, 1, heartbeat(group, epoch)) for epoch, group in enumerate(["later", "now", "now"])]
        waiting: Awaitable[Any] = asyncio.ensure_future(client.read(CGH, 1))
        while len(handler.taken_now) + len(handler.handled) < 1:
            await asyncio.sleep(0.01)
        handler.gate.set()
        got = [await waiting, await client.read(CGH, 1), await client.read(CGH, 1)]
        assert [cid for cid, _ in got] == sent
        assert [r.member_epoch for _, r in got] == [0, 1, 2]
        await client.close()

    run(body)


def test_a_handler_failing_at_once_closes_the_connection() -> None:
    async def body(server: GatewayServer, handler: NowHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send(CGH, 1, heartbeat("boom"))
        assert await bad.closed_by_peer()
        assert await good.call(CGH, 1, heartbeat("now", 5)) == ConsumerGroupHeartbeatResponse(member_epoch=5)
        await bad.close()
        await good.close()

    run(body)


def test_requests_answered_at_once_keep_the_connection_from_idling_out() -> None:
    async def body(server: GatewayServer, handler: NowHandler) -> None:
        client = await connect(server)
        # The reader waits from this answer on (see the first test).
        assert await client.call(CGH, 1, heartbeat("queued")) == ConsumerGroupHeartbeatResponse(member_epoch=1)
        # Three idle timeouts' worth of heartbeats, each well within one: the reader itself sees
        # none of them, yet the connection is not idle.
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            assert await client.call(CGH, 1, heartbeat("now")) == ConsumerGroupHeartbeatResponse(member_epoch=1)
            await asyncio.sleep(0.05)
        assert handler.handled == ["queued"]
        await client.close()

    run(body, connections_max_idle_ms=500)


def test_a_repeated_heartbeat_is_refused_once_the_connections_session_has_expired() -> None:
    """A frame that repeats the one routing took last is not routed again (``RequestMemo.repeated``),
    but the connection's authentication is checked again for it: once the session expires (KIP-368)
    the very same heartbeat closes the connection, as any group request then does."""

    async def body(server: GatewayServer, handler: NowHandler) -> None:
        client = await connect(server)
        while not any(server.connections.values()):
            await asyncio.sleep(0.01)
        (connection,) = (c for c in server.connections.values() if c is not None)
        # As if the client had logged in (what SASL through the cluster sets), for a while.
        now = [100.0]
        connection.session = SaslSession(clock=lambda: now[0])
        connection.session.authenticate_externally("alice")
        connection.session.expires_at = 200.0
        assert await client.call(CGH, 1, heartbeat("queued")) == ConsumerGroupHeartbeatResponse(member_epoch=1)
        for _ in range(2):  # the second repeats the first byte for byte but for its correlation id
            assert await client.call(CGH, 1, heartbeat("now")) == ConsumerGroupHeartbeatResponse(member_epoch=1)
        now[0] = 300.0  # the session is over
        client.send(CGH, 1, heartbeat("now"))
        assert await client.closed_by_peer()
        assert handler.taken_now == ["now", "now"]
        await client.close()

    run(body, authentication="required")
