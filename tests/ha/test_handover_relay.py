"""A stopping process relays its moved groups' requests to the successor (``service/handover_relay.py``).

The successor is a real gateway on loopback (its group handler scripted); no cluster is touched.
"""

from __future__ import annotations

import asyncio
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext, GatewayConfig, GatewayServer
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import answer_now_of
from groupcoord.coordinator.gateway.relay import RELAY_CLIENT_ID
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.server import group_handler
from groupcoord.coordinator.service.handover_relay import HandoverRelay, error_codes
from groupcoord.local_broker import free_port
from tests.security.test_secured_handler import NoTopics

SHARD = {"moved": 3, "stays": 5}


class Stopped:
    """The stopping process's own handler: its shards no longer serve here."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.seen.append(type(request).__name__)
        if isinstance(request, HeartbeatRequest):
            return HeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)
        if isinstance(request, JoinGroupRequest):
            return JoinGroupResponse(error_code=ErrorCode.NOT_COORDINATOR)
        assert isinstance(request, OffsetCommitRequest)
        return _commit_answer(request, ErrorCode.NOT_COORDINATOR)


class Successor:
    """The successor's handler: loading until ``serving`` is set."""

    def __init__(self) -> None:
        self.serving = False
        self.clients: list[str | None] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.clients.append(context.header.client_id)
        code = ErrorCode.NONE if self.serving else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if isinstance(request, HeartbeatRequest):
            return HeartbeatResponse(error_code=code)
        assert isinstance(request, OffsetCommitRequest)
        return _commit_answer(request, code)


def _commit_answer(request: OffsetCommitRequest, code: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def _context(api_key: int, version: int, client_id: str = "client") -> ConnectionContext:
    return ConnectionContext(RequestHeader(api_key, version, 7, client_id), "127.0.0.1", 1, 2)


def _commit(group: str) -> OffsetCommitRequest:
    partitions = [OffsetCommitRequestPartition(partition_index=0, committed_offset=42)]
    return OffsetCommitRequest(group_id=group, topics=[OffsetCommitRequestTopic(name="t", partitions=partitions)])


def _run(test: Any) -> None:
    async def main() -> None:
        successor = Successor()
        config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{free_port()}"], listen_port=0)
        async with GatewayServer(config, successor) as server:
            stopped = Stopped()
            named: dict[int, tuple[str, int]] = {}
            relay = HandoverRelay(stopped, SHARD.__getitem__, timeout_s=5, successor_wait_s=5)
            relay.enabled = True
            relay.successor_of = named.get
            await asyncio.wait_for(test(relay, stopped, successor, named, ("127.0.0.1", server.port)), 30)

    asyncio.run(main())


def test_requests_of_moved_shards_wait_for_the_successor_and_get_its_answer() -> None:
    async def test(
        relay: HandoverRelay, stopped: Stopped, successor: Successor, named: dict[int, Any], where: Any
    ) -> None:
        heartbeat = HeartbeatRequest(group_id="moved", generation_id=1, member_id="m")
        # Not stopping: NOT_COORDINATOR, as ever.
        answer = await relay.handle(_context(12, 4), heartbeat)
        assert isinstance(answer, HeartbeatResponse) and answer.error_code == ErrorCode.NOT_COORDINATOR
        relay.stopping([SHARD["moved"]])
        # The successor is named a moment after the shards stopped serving: the request waits for it.
        waiting = asyncio.ensure_future(relay.handle(_context(12, 4), heartbeat))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        named[SHARD["moved"]] = where
        answer = await waiting
        # Loading there: retried by the client on this connection, no coordinator lookup.
        assert isinstance(answer, HeartbeatResponse) and answer.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        successor.serving = True
        answer = await relay.handle(_context(8, 8), _commit("moved"))
        assert error_codes(answer) == {ErrorCode.NONE}
        assert successor.clients == [RELAY_CLIENT_ID, RELAY_CLIENT_ID]
        # The successor serves: from now on the client is sent to look it up (NOT_COORDINATOR here).
        answer = await relay.handle(_context(8, 8), _commit("moved"))
        assert error_codes(answer) == {ErrorCode.NOT_COORDINATOR}
        assert relay.relayed == 2 and len(successor.clients) == 2

    _run(test)


def test_only_moved_single_group_requests_from_clients_are_relayed() -> None:
    async def test(
        relay: HandoverRelay, stopped: Stopped, successor: Successor, named: dict[int, Any], where: Any
    ) -> None:
        successor.serving = True
        relay.stopping([SHARD["moved"]])
        named[SHARD["moved"]] = where
        # A group whose shard is not handed over, a JoinGroup (it waits on a rebalance), and a
        # request that is itself a relay keep this process's answer.
        stays = await relay.handle(_context(12, 4), HeartbeatRequest(group_id="stays"))
        join = await relay.handle(_context(11, 7), JoinGroupRequest(group_id="moved"))
        relayed = await relay.handle(_context(12, 4, RELAY_CLIENT_ID), HeartbeatRequest(group_id="moved"))
        for answer in (stays, join, relayed):
            assert error_codes(answer) == {ErrorCode.NOT_COORDINATOR}
        assert successor.clients == []
        assert stopped.seen == ["HeartbeatRequest", "JoinGroupRequest", "HeartbeatRequest"]

    _run(test)


def test_without_a_successor_the_answer_stands_and_the_stop_does_not_wait() -> None:
    async def test(
        relay: HandoverRelay, stopped: Stopped, successor: Successor, named: dict[int, Any], where: Any
    ) -> None:
        relay.stopping([SHARD["moved"]])
        waiting = asyncio.ensure_future(relay.handle(_context(12, 4), HeartbeatRequest(group_id="moved")))
        await asyncio.sleep(0.05)
        relay.give_up()  # nobody else runs
        answer = await waiting
        assert error_codes(answer) == {ErrorCode.NOT_COORDINATOR}
        await asyncio.wait_for(relay.settled(quiet_s=10, cap_s=20), 1)
        assert successor.clients == []

    _run(test)


def test_the_listener_stays_until_the_moved_groups_fall_quiet() -> None:
    async def test(
        relay: HandoverRelay, stopped: Stopped, successor: Successor, named: dict[int, Any], where: Any
    ) -> None:
        successor.serving = True
        relay.stopping([SHARD["moved"]])
        named[SHARD["moved"]] = where
        settled = asyncio.ensure_future(relay.settled(quiet_s=0.3, cap_s=20))
        for _ in range(5):  # a client still committing through this process
            await relay.handle(_context(8, 8), _commit("moved"))
            await asyncio.sleep(0.1)
            assert not settled.done()
        await asyncio.wait_for(settled, 5)

    _run(test)


class AtOnce(Stopped):
    """A handler answering heartbeats at once ("now") or once ``gate`` opens ("later")."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    def answer_now(self, context: ConnectionContext, request: Message) -> Any:
        assert isinstance(request, HeartbeatRequest)
        if request.member_id == "now":
            return HeartbeatResponse(error_code=ErrorCode.NONE)
        return self._later()

    async def _later(self) -> Message:
        await self.gate.wait()
        return HeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)


def test_the_serve_handler_chain_passes_answer_now_through_until_the_stop() -> None:
    # Every layer of serve's group handler offers answer_now: one that lacked it (the relay did)
    # silently turned the gateway's at-once path off for every steady heartbeat.
    async def relayed(host: str, port: int, header: RequestHeader, body: Message, timeout: float) -> Message:
        return HeartbeatResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    async def main() -> None:
        inner = AtOnce()
        relay = HandoverRelay(inner, SHARD.__getitem__, call=relayed)
        relay.enabled = True
        relay.successor_of = lambda shard: ("127.0.0.1", 1)
        chain = answer_now_of(group_handler(relay, NoTopics(), None, frozenset(), frozenset()))
        assert chain is not None
        now = HeartbeatRequest(group_id="moved", generation_id=1, member_id="now")
        assert chain(_context(12, 4), now) == HeartbeatResponse(error_code=ErrorCode.NONE)
        # Taken before the stop, answered NOT_COORDINATOR after it began: relayed, as by handle.
        later = chain(_context(12, 4), HeartbeatRequest(group_id="moved", generation_id=1, member_id="later"))
        assert later is not None and not isinstance(later, Message)
        relay.stopping([SHARD["moved"]])
        inner.gate.set()
        assert await later == HeartbeatResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        assert relay.relayed == 1
        # Stopping: nothing at once, handle (which relays) takes every request.
        assert chain(_context(12, 4), now) is None

    asyncio.run(main())
