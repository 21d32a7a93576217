"""GatewayServer behaviour that needs no cluster: group APIs, framing faults, isolation, limits.

The bootstrap address points at a closed port: none of this may touch the cluster.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest
from groupcoord.coordinator.messages.schema import Message
from groupcoord.local_broker import free_port
from tests.gateway.fakes import FakeGroupHandler
from tests.gateway.wire_client import WireClient

HEARTBEAT = 12


class ScriptedHandler(FakeGroupHandler):
    """Heartbeats take ``delays[group_id]`` seconds; group "boom" raises, group "wrong" answers badly."""

    def __init__(self, delays: dict[str, float] | None = None) -> None:
        super().__init__()
        self.delays = delays or {}
        self.active = 0
        self.max_active = 0
        self.finished: list[str] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, HeartbeatRequest):
            self.calls.append((context.api_key, context.api_version, type(request).__name__))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            try:
                await asyncio.sleep(self.delays.get(request.group_id, 0))
            finally:
                self.active -= 1
            self.finished.append(request.group_id)
            if request.group_id == "boom":
                raise RuntimeError("handler exploded")
            if request.group_id == "wrong":
                return FindCoordinatorResponse()
            return HeartbeatResponse(error_code=request.generation_id)
        return await super().handle(context, request)


def _config(**overrides: Any) -> GatewayConfig:
    return GatewayConfig(bootstrap_servers=[f"127.0.0.1:{free_port()}"], listen_port=0, **overrides)


def run(
    test: Callable[[GatewayServer, ScriptedHandler], Awaitable[None]],
    handler: ScriptedHandler | None = None,
    **overrides: Any,
) -> None:
    async def main() -> None:
        chosen = handler or ScriptedHandler()
        async with GatewayServer(_config(**overrides), chosen) as server:
            await asyncio.wait_for(test(server, chosen), 30)

    asyncio.run(main())


async def connect(server: GatewayServer) -> WireClient:
    return await WireClient.connect("127.0.0.1", server.port)


def heartbeat(group: str = "g", code: int = 0) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=code, member_id="m")


def test_group_api_reaches_the_handler() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        client = await connect(server)
        for version in range(5):
            response = await client.call(HEARTBEAT, version, heartbeat(code=7))
            assert response == HeartbeatResponse(error_code=7)
        assert [c[:2] for c in handler.calls] == [(12, v) for v in range(5)]
        await client.close()

    run(body)


def test_pipelined_answers_keep_request_order() -> None:
    # Earlier requests take longer, so only ordering on the connection can keep them in order.
    delays = {f"g{i}": 0.05 * (5 - i) for i in range(6)}

    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        client = await connect(server)
        sent = [client.send(HEARTBEAT, 4, heartbeat(f"g{i}", code=i), correlation_id=1000 - i) for i in range(6)]
        sent.append(client.send(10, 6, FindCoordinatorRequest(key_type=0, coordinator_keys=["x"]), 5))
        got = [await client.read(HEARTBEAT, 4) for _ in range(6)]
        assert [cid for cid, _ in got] == sent[:6]
        assert [r.error_code for _, r in got] == list(range(6))  # type: ignore[attr-defined]
        cid, _ = await client.read(10, 6)
        assert cid == 5
        # A broker handles one request per connection at a time; so does the gateway's handler.
        assert handler.max_active == 1
        await client.close()

    run(body, ScriptedHandler(delays))


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_for_groups_answers_the_sidecar(version: int) -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        client = await connect(server)
        request = FindCoordinatorRequest(key="g1", key_type=0, coordinator_keys=["g1", "g2"])
        response = await client.call(10, version, request)
        assert isinstance(response, FindCoordinatorResponse)
        node = (server.config.coordinator_node_id, "127.0.0.1", server.port)
        if version >= 4:
            assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in response.coordinators] == [
                ("g1", *node, 0),
                ("g2", *node, 0),
            ]
        else:
            assert (response.node_id, response.host, response.port, response.error_code) == (*node, 0)
        await client.close()

    run(body)


def test_oversized_frame_closes_only_that_connection() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send_raw(struct.pack(">i", 4097) + b"x" * 16)
        assert await bad.closed_by_peer()
        assert await good.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await bad.close()
        await good.close()

    run(body, max_frame_bytes=4096)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">i", -1), id="negative-length"),
        pytest.param(struct.pack(">i", 3) + b"abc", id="shorter-than-header"),
        pytest.param(struct.pack(">i", 10) + struct.pack(">hhi", 12, 4, 1) + b"\x00\x05", id="truncated-client-id"),
        pytest.param(struct.pack(">i", 11) + struct.pack(">hhih", 12, 1, 1, -1) + b"\x00", id="truncated-body"),
        pytest.param(struct.pack(">i", 12) + struct.pack(">hhih", 12, 99, 1, -1) + b"\x00\x00", id="unknown-version"),
        pytest.param(struct.pack(">i", 8) + struct.pack(">hhi", 10, 42, 1), id="find-coordinator-unknown-version"),
    ],
)
def test_malformed_requests_close_only_that_connection(payload: bytes, caplog: pytest.LogCaptureFixture) -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        bad, good = await connect(server), await connect(server)
        bad.send_raw(payload)
        assert await bad.closed_by_peer()
        assert await good.call(HEARTBEAT, 3, heartbeat()) == HeartbeatResponse()
        await bad.close()
        await good.close()

    with caplog.at_level("WARNING", logger="groupcoord.coordinator.gateway"):
        run(body)
    assert any("closing client connection" in r.getMessage() for r in caplog.records)


def test_handler_failure_or_wrong_answer_closes_the_connection() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        for group in ("boom", "wrong"):
            client = await connect(server)
            client.send(HEARTBEAT, 4, heartbeat(group))
            assert await client.closed_by_peer()
            await client.close()
        client = await connect(server)
        assert await client.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await client.close()

    run(body)


def test_slow_reader_and_slow_group_do_not_stall_others() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        # A client that pipelines thousands of requests and never reads its answers...
        hog = await connect(server)
        for _ in range(20_000):
            hog.send(16, 4, ListGroupsRequest())
        # ...and one whose group's handler never returns.
        stuck = await connect(server)
        stuck.send(HEARTBEAT, 4, heartbeat("stuck"))
        others = [await connect(server) for _ in range(3)]
        loop = asyncio.get_running_loop()
        start = loop.time()
        for client in others:
            for _ in range(5):
                assert await client.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert loop.time() - start < 5
        for client in [hog, stuck, *others]:
            await client.close()

    run(body, ScriptedHandler({"stuck": 3600}))


def test_max_connections() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        first, second = await connect(server), await connect(server)
        assert await first.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        assert await second.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        third = await connect(server)
        assert await third.closed_by_peer()
        await first.close()
        await asyncio.sleep(0.1)
        fourth = await connect(server)
        assert await fourth.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        for client in (second, third, fourth):
            await client.close()

    run(body, max_connections=2)


def test_unreachable_cluster_closes_forwarding_connections_only() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        forwarding, group = await connect(server), await connect(server)
        forwarding.send_raw(struct.pack(">i", 10) + struct.pack(">hhih", 18, 3, 1, -1))  # ApiVersions
        assert await forwarding.closed_by_peer(timeout=15)
        assert await group.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await forwarding.close()
        await group.close()

    run(body, upstream_connect_timeout_s=2)


def test_disconnect_does_not_cancel_a_running_handler_call() -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        client = await connect(server)
        client.send(HEARTBEAT, 4, heartbeat("slow"))
        client.send(HEARTBEAT, 4, heartbeat("queued"))
        await asyncio.sleep(0.05)
        await client.close()
        for _ in range(100):
            if handler.finished == ["slow", "queued"]:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"handler calls finished: {handler.finished}")

    run(body, ScriptedHandler({"slow": 0.3}))
