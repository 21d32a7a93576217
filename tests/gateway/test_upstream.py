"""The connection to a broker (``gateway.upstream``): what it frees when closed, how answers pair.

A scripted broker on loopback (``test_streaming``'s) stands for the broker, so each test decides
what comes back on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import re
import struct
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.coordinator.gateway import GatewayServer
from groupcoord.coordinator.gateway import upstream as upstream_module
from groupcoord.coordinator.gateway.upstream import UpstreamConnection
from tests.gateway.test_streaming import FETCH, LOOPS, ScriptedBroker, body_for, framed, request, run
from tests.gateway.wire_client import WireClient


async def answer_each(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
    writer.write(framed(body_for(correlation_id, 100, correlation_id)))
    await writer.drain()


@contextlib.contextmanager
def no_cyclic_collection() -> Iterator[None]:
    """Only reference counting frees objects here: what a cycle holds stays."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


async def freed(refs: list[weakref.ref[Any]], within: float = 5.0) -> bool:
    """Whether every referent is gone within ``within`` seconds (the loop turning meanwhile)."""
    deadline = asyncio.get_running_loop().time() + within
    while any(ref() is not None for ref in refs):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _held(refs: list[weakref.ref[Any]]) -> list[str]:
    """What still holds the live referents (for the failure message)."""
    return [
        f"{type(obj).__name__} held by {[type(r).__name__ for r in gc.get_referrers(obj)]}"
        for obj in (ref() for ref in refs)
        if obj is not None
    ]


def _tracked(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Any]]:
    """Weak references to every upstream connection made from now on, and to its protocol."""
    refs: list[weakref.ref[Any]] = []
    init = UpstreamConnection.__init__

    def tracking(self: UpstreamConnection, protocol: Any, address: tuple[str, int]) -> None:
        init(self, protocol, address)
        refs.extend((weakref.ref(self), weakref.ref(protocol)))

    monkeypatch.setattr(UpstreamConnection, "__init__", tracking)
    return refs


# --- a closed connection is freed at once ---------------------------------------------------------
#
# Each upstream connection has a 64 KiB read-ahead buffer, and the gateway runs young collections
# only every 100,000 allocations (runtime/collector.py): a closed connection left as a reference
# cycle held its buffer until then, ~70 KB per connection a client opened and closed.


@pytest.mark.parametrize("by", ["gateway", "broker"])
def test_a_closed_upstream_connection_is_freed_by_reference_counting(by: str) -> None:
    async def main() -> None:
        async with ScriptedBroker(answer_each) as broker:
            with no_cyclic_collection():
                upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
                answer = await upstream.send(request(FETCH, 7)[4:], 7, expect_response=True)
                assert await answer == body_for(7, 100, 7)
                refs: list[weakref.ref[Any]] = [weakref.ref(upstream), weakref.ref(upstream._protocol)]
                if by == "broker":
                    broker.connections[0].transport.abort()
                    while not upstream.closed:
                        await asyncio.sleep(0.01)
                await upstream.close()
                del upstream, answer
                assert await freed(refs), _held(refs)

    asyncio.run(main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_connection_closed_frees_its_upstream_connection_at_once(
    loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refs = _tracked(monkeypatch)

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        with no_cyclic_collection():
            for correlation_id in range(3):
                other = await WireClient.connect("127.0.0.1", server.port)
                other.send_raw(request(FETCH, correlation_id))
                assert await other.read_frame() == body_for(correlation_id, 100, correlation_id)
                await other.close()
            assert len(refs) == 6
            assert await freed(refs), _held(refs)

    run(answer_each, test, loop)


# --- answers to Produce with acks=0 -----------------------------------------------------------------
#
# Kafka never answers a Produce with acks=0; Tansu (the local broker) does. Either way every other
# answer must reach its request, and the connection stay up.

PRODUCE = 0
# Requests as a client sends them: (correlation id, whether an answer is owed; False: acks=0).
MIXED = [(1, False), (2, False), (3, True), (4, False), (5, True), (6, True), (7, False), (8, False), (9, True)]


def answer_size(correlation_id: int) -> int:
    # Some answers larger than the connection's 64 KiB read-ahead buffer, so dropping one spans reads.
    return 200_000 if correlation_id % 4 == 0 else 40 + correlation_id % 1000


def answering(acks_zero_too: bool, pieces: int = 7, only_even: bool = False) -> Any:
    """A broker answering in order; ``acks_zero_too``: Produce with acks=0 too, as Tansu does
    (``only_even``: those with an even correlation id only)."""

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        (api_key,) = struct.unpack_from(">h", payload)
        if api_key == PRODUCE and (not acks_zero_too or (only_even and correlation_id % 2)):
            return
        data = framed(body_for(correlation_id, answer_size(correlation_id), correlation_id))
        for at in range(0, len(data), len(data) // pieces + 1):
            writer.write(data[at : at + len(data) // pieces + 1])
            await writer.drain()

    return respond


async def send_all(upstream: UpstreamConnection, requests: list[tuple[int, bool]]) -> None:
    answers = []
    for correlation_id, owed in requests:
        payload = request(FETCH if owed else PRODUCE, correlation_id)[4:]
        answers.append((correlation_id, owed, await upstream.send(payload, correlation_id, owed)))
    for correlation_id, owed, answer in answers:
        got = await asyncio.wait_for(answer, 10)
        assert got == (body_for(correlation_id, answer_size(correlation_id), correlation_id) if owed else b"")


@pytest.mark.parametrize("broker_kind", ["tansu", "kafka", "some"])
@pytest.mark.parametrize(
    "requests",
    [
        MIXED,
        [(1, False), (2, False), (3, False)],  # nothing owed when the answers come
        [(1, True), (2, False)],
        [(2**31 - 1, False), (0, True)],  # ids wrap
    ],
)
def test_answers_to_acks_zero_produce_are_dropped_and_the_rest_paired(
    broker_kind: str, requests: list[tuple[int, bool]]
) -> None:
    async def main() -> None:
        respond = answering(acks_zero_too=broker_kind != "kafka", only_even=broker_kind == "some")
        async with ScriptedBroker(respond) as broker:
            upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
            try:
                await send_all(upstream, requests)
                # Then another round on the same connection: nothing left over from the first.
                await send_all(upstream, [((cid + 100) % 2**31, owed) for cid, owed in requests] + [(500, True)])
                await asyncio.sleep(0.1)
                assert not upstream.closed
                assert broker.requests == [cid for cid, _ in requests] + [
                    (cid + 100) % 2**31 for cid, _ in requests
                ] + [500]
            finally:
                await upstream.close()

    asyncio.run(main())


def _answer_then(correlation_ids: list[int]) -> Any:
    """A broker that answers the first request with the answers of ``correlation_ids``."""

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        if correlation_id == 1:
            for answered in correlation_ids:
                writer.write(framed(body_for(answered, 64, answered)))
            await writer.drain()

    return respond


@pytest.mark.parametrize(
    ("requests", "answered"),
    [
        ([(1, True)], [9, 1]),  # an answer to nothing this connection sent
        ([(1, False), (2, True)], [2, 1]),  # the acks=0 answer after a later request's: out of order
        ([(1, True), (2, False)], [2, 1]),  # an acks=0 request's answer before one owed earlier
    ],
)
def test_any_other_answer_out_of_order_still_fails_the_connection(
    requests: list[tuple[int, bool]], answered: list[int]
) -> None:
    async def main() -> None:
        async with ScriptedBroker(_answer_then(answered)) as broker:
            upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
            try:
                for correlation_id, expect in requests:
                    payload = request(FETCH if expect else PRODUCE, correlation_id)[4:]
                    await upstream.send(payload, correlation_id, expect)
                for _ in range(500):
                    if upstream.closed:
                        break
                    await asyncio.sleep(0.01)
                assert re.search("correlation id|no request outstanding", str(upstream._closed))
            finally:
                await upstream.close()

    asyncio.run(main())


def test_a_request_reusing_an_acks_zero_id_gets_the_answer_when_the_broker_does_not_answer_acks_zero() -> None:
    # Kafka: the acks=0 Produce (id 0) is not answered, so the answer carrying 0 is the next request's.
    async def main() -> None:
        async with ScriptedBroker(answering(acks_zero_too=False)) as broker:
            upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
            try:
                await send_all(upstream, [(0, False), (0, True), (0, True)])
                assert not upstream.closed
            finally:
                await upstream.close()

    asyncio.run(main())


def test_acks_zero_ids_are_remembered_in_runs_the_last_ones_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_module, "ACKS_ZERO_REMEMBERED", 3)

    async def main() -> None:
        async with ScriptedBroker(answering(acks_zero_too=False)) as broker:
            upstream = await UpstreamConnection.open(("127.0.0.1", broker.port), None, 5.0)
            try:
                # Consecutive ids: one run, however many (Kafka answers none of them).
                await send_all(upstream, [(cid, False) for cid in range(1, 1001)])
                assert list(upstream._acks_zero_sent) == [(1, 1000, 0)]
                # Ids apart: a run each, and only the last ACKS_ZERO_REMEMBERED kept.
                await send_all(upstream, [(cid, False) for cid in range(2000, 2010, 2)])
                assert [first for first, _, _ in upstream._acks_zero_sent] == [2004, 2006, 2008]
                await send_all(upstream, [(3000, True)])
                assert not upstream.closed
            finally:
                await upstream.close()

    asyncio.run(main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_connection_reset_frees_its_upstream_connection_at_once(
    loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client closes with an answer unread: its socket resets the connection, and the gateway's
    # reads fail with ConnectionResetError, raised from what the client stream stored.
    refs = _tracked(monkeypatch)

    async def large(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, 500_000, correlation_id)))
        await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        with no_cyclic_collection():
            for correlation_id in range(3):
                other = await WireClient.connect("127.0.0.1", server.port)
                other.send_raw(request(FETCH, correlation_id))
                await asyncio.wait_for(other.reader.readexactly(1000), 10)
                other.writer.transport.abort()
            assert len(refs) == 6
            assert await freed(refs), _held(refs)

    run(large, test, loop)


def test_a_streamed_answer_stops_writing_once_a_send_fails() -> None:
    """A send that fails closes the transport at once (``connection_lost`` comes a turn later):
    the rest of an answer that has arrived is not written piece by piece into it, which asyncio
    drops with a WARNING per write past the fifth (bursts of 20+ lines seen at shard moves)."""
    from groupcoord.coordinator.gateway.upstream import _PIECE, Answer

    class FailingTransport(asyncio.WriteTransport):
        def __init__(self) -> None:
            super().__init__()
            self.writes = 0
            self.closing = False

        def write(self, data: Any) -> None:
            self.writes += 1
            self.closing = True  # the send failed: closed, as asyncio's transport does

        def is_closing(self) -> bool:
            return self.closing

    class Sink:
        def __init__(self) -> None:
            self.transport = FailingTransport()
            self.write_paused = False

        def on_resume(self, callback: Any) -> None:
            pass

    async def main() -> tuple[int, int]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        answer = Answer(1, done)
        sink = Sink()
        answer._whole(b"x" * (40 * _PIECE))  # arrived whole: one flush writes it all
        size = await asyncio.wait_for(answer.stream_to(sink), 5)
        return size, sink.transport.writes

    size, writes = asyncio.run(main())
    assert size == 40 * _PIECE
    assert writes == 1
