"""Forwarded answers are streamed: byte for byte, in request order, never taken whole when cut short.

A scripted broker on loopback answers the forwarded requests, so each test decides exactly how an
answer reaches the gateway (whole, in pieces, half and then nothing). Every test runs on asyncio's
own event loop and, when installed, on uvloop, as the sidecar runs on either.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import random
import shutil
import ssl
import struct
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.gateway import GatewayConfig, GatewayServer, TlsSettings
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from tests.gateway.test_integration import _make_cert
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, heartbeat
from tests.gateway.wire_client import WireClient

FETCH = 1
LIST_OFFSETS = 2
FIND_COORDINATOR = 10
LOOPS = ["asyncio"] + (["uvloop"] if importlib.util.find_spec("uvloop") else [])

# How the scripted broker answers one request: given the correlation id and the request payload,
# write the answer (or not) to the stream.
Respond = Callable[[int, bytes, asyncio.StreamWriter], Awaitable[None]]


def body_for(correlation_id: int, size: int, seed: int) -> bytes:
    """An answer payload of ``size`` bytes: the correlation id, then seeded random bytes."""
    return struct.pack(">i", correlation_id) + random.Random(seed).randbytes(size - 4)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request(api_key: int, correlation_id: int, extra: bytes = b"") -> bytes:
    """A forwarded request: the gateway reads only its header, so the body can be anything."""
    payload = struct.pack(">hhih", api_key, 4, correlation_id, 4) + b"test" + extra
    return framed(payload)


class ScriptedBroker:
    """Reads request frames and hands each to ``respond``, one at a time in order, as a broker does."""

    def __init__(self, respond: Respond, tls: ssl.SSLContext | None = None) -> None:
        self.respond = respond
        self.tls = tls
        self.requests: list[int] = []
        self.payloads: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.connections: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> ScriptedBroker:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.connections:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.append(writer)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                payload = await reader.readexactly(size)
                (correlation_id,) = struct.unpack_from(">i", payload, 4)
                self.requests.append(correlation_id)
                self.payloads.append(payload)
                await self.respond(correlation_id, payload, writer)
                if writer.is_closing():
                    return


def run(
    respond: Respond,
    test: Callable[[GatewayServer, WireClient, ScriptedBroker], Awaitable[None]],
    loop: str,
    tls: tuple[ssl.SSLContext, ssl.SSLContext | None] | None = None,
    **config: Any,
) -> None:
    """``tls``: the server and client contexts, for the scripted broker and the test's client."""

    async def main() -> None:
        async with ScriptedBroker(respond, tls[0] if tls else None) as broker:
            gateway_config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{broker.port}"], listen_port=0, **config)
            async with GatewayServer(gateway_config, ScriptedHandler()) as server:
                client = WireClient(
                    *await asyncio.open_connection("127.0.0.1", server.port, ssl=tls[1] if tls else None)
                )
                try:
                    await asyncio.wait_for(test(server, client, broker), 60)
                finally:
                    await client.close()

    run_on(loop, main)


def run_on(loop: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``main()`` on the event loop named ``loop`` (one of ``LOOPS``)."""
    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


async def read_raw_frame(client: WireClient) -> bytes:
    (size,) = struct.unpack(">i", await asyncio.wait_for(client.reader.readexactly(4), 20))
    return await asyncio.wait_for(client.reader.readexactly(size), 20)


@pytest.mark.parametrize("loop", LOOPS)
def test_answers_of_every_size_arrive_byte_for_byte_and_in_order(loop: str) -> None:
    # Sizes on both sides of the gateway's 64 KiB read-ahead buffer, up to several MB, written by
    # the broker in pieces of random size: every way an answer can be split across reads.
    rng = random.Random(15)
    sizes = [4, 5, 100, 65_531, 65_532, 65_536, 65_540, 200_000, 6_000_000, 8, 1_000_000, 70_000, 12]
    sizes += [rng.randrange(4, 300_000) for _ in range(40)]

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        data = framed(body_for(correlation_id, sizes[correlation_id], correlation_id))
        at = 0
        while at < len(data):
            step = rng.choice((1, 3, 4096, 65_536, 300_000))
            writer.write(data[at : at + step])
            at += step
            await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        for correlation_id in range(len(sizes)):
            client.send_raw(request(FETCH, correlation_id))
        for correlation_id, size in enumerate(sizes):
            got = await read_raw_frame(client)
            assert len(got) == size
            assert got == body_for(correlation_id, size, correlation_id)
        # Every answer's bytes went back to the budgets once written.
        await asyncio.sleep(0.1)
        assert server.buffer_budget.used == 0

    run(respond, test, loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_streamed_answer_is_written_whole_before_the_answers_after_it(loop: str) -> None:
    big = 5_000_000
    half = asyncio.Event()
    rest = asyncio.Event()

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        data = framed(body_for(correlation_id, big if correlation_id == 1 else 64, correlation_id))
        if correlation_id == 1:
            writer.write(data[: len(data) // 2])
            await writer.drain()
            half.set()
            await rest.wait()
            data = data[len(data) // 2 :]
        writer.write(data)
        await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        # A large forwarded answer, then requests answered by the gateway itself (ready at once)
        # and forwarded ones: all must come back in request order, each whole.
        client.send_raw(request(FETCH, 1))
        client.send(HEARTBEAT, 4, heartbeat(code=3), correlation_id=2)
        client.send_raw(request(LIST_OFFSETS, 3))
        client.send(FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0), correlation_id=4)
        await asyncio.wait_for(half.wait(), 20)
        # Streamed: the first bytes reach the client while the broker still owes the rest.
        (size,) = struct.unpack(">i", await asyncio.wait_for(client.reader.readexactly(4), 20))
        assert size == big
        first = await asyncio.wait_for(client.reader.readexactly(1_000_000), 20)
        rest.set()
        remainder = await asyncio.wait_for(client.reader.readexactly(size - len(first)), 20)
        assert first + remainder == body_for(1, big, 1)
        cid, answer = await client.read(HEARTBEAT, 4)
        assert (cid, answer) == (2, HeartbeatResponse(error_code=3))
        assert await read_raw_frame(client) == body_for(3, 64, 3)
        cid, found = await client.read(FIND_COORDINATOR, 3)
        assert cid == 4 and isinstance(found, FindCoordinatorResponse) and found.port == server.port

    run(respond, test, loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_an_upstream_dying_mid_answer_closes_the_client_before_a_whole_frame(loop: str) -> None:
    big = 5_000_000

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        data = framed(body_for(correlation_id, big, correlation_id))
        writer.write(data[:1_500_000])
        await writer.drain()
        writer.transport.abort()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        client.send_raw(request(FETCH, 1))
        client.send(HEARTBEAT, 4, heartbeat(code=3), correlation_id=2)  # answered here, must not follow
        (size,) = struct.unpack(">i", await asyncio.wait_for(client.reader.readexactly(4), 20))
        assert size == big
        with pytest.raises(asyncio.IncompleteReadError) as cut:
            await asyncio.wait_for(client.reader.readexactly(size), 20)
        # What arrived is the broker's bytes and nothing else: no other answer spliced in.
        assert 0 < len(cut.value.partial) <= 1_500_000 - 4
        assert cut.value.partial == body_for(1, big, 1)[: len(cut.value.partial)]
        await asyncio.sleep(0.1)
        assert server.buffer_budget.used == 0

    run(respond, test, loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_answers_held_for_a_client_stay_within_its_byte_budget(loop: str) -> None:
    # More than loopback's socket buffers can absorb (a few MB each way), so the gateway must
    # hold answers itself.
    budget = 8_000_000
    answer_bytes = 3_000_000
    count = 12

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, answer_bytes, correlation_id)))
        await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        # The client sends every request and reads nothing for a while: the broker's answers
        # (36 MB) exceed the connection's budget (8 MB), so the gateway must stop reading them.
        for correlation_id in range(count):
            client.send_raw(request(FETCH, correlation_id))
        connection = None
        highest = 0
        for _ in range(50):
            await asyncio.sleep(0.02)
            (connection,) = (c for c in server.connections.values() if c is not None)
            highest = max(highest, connection.budget.own.used)
        assert connection is not None
        assert 0 < highest <= budget
        for correlation_id in range(count):
            assert await read_raw_frame(client) == body_for(correlation_id, answer_bytes, correlation_id)
        await asyncio.sleep(0.1)
        assert connection.budget.own.used == 0 and server.buffer_budget.used == 0

    run(respond, test, loop, max_buffered_bytes_per_connection=budget)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_that_reads_slowly_holds_no_second_copy_of_the_answer(loop: str) -> None:
    # The answer is held once, in its own buffer (counted in the budget); the client's transport
    # is handed pieces only as fast as it sends them, so it never buffers the rest a second time.
    big = 24_000_000

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, big, correlation_id)))
        await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        client.send_raw(request(FETCH, 1))
        (connection,) = [c for c in server.connections.values() if c is not None]
        transport = connection.stream.transport
        held = 0
        for _ in range(100):
            await asyncio.sleep(0.01)
            held = max(held, transport.get_write_buffer_size())
        # Before: everything the sockets did not absorb (~20 MB) sat in the transport as well.
        assert held <= 2_000_000
        got = await read_raw_frame(client)
        assert got == body_for(1, big, 1)
        await asyncio.sleep(0.1)
        assert server.buffer_budget.used == 0

    run(respond, test, loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_requests_of_every_size_reach_the_broker_byte_for_byte(loop: str) -> None:
    # Large requests (Produce) are received into a buffer of their own and forwarded from it;
    # small ones pass through the gateway's read-ahead buffer. The client writes them all at once
    # in pieces of random size, so frames straddle every read boundary.
    rng = random.Random(16)
    sizes = [0, 1, 32_000, 32_768, 32_769, 65_000, 65_536, 70_000, 3_000_000, 10, 1_000_000]
    sizes += [rng.randrange(0, 200_000) for _ in range(40)]
    extras = [rng.randbytes(n) for n in sizes]

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, 8, correlation_id)))

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        frames = b"".join(request(FETCH, i, extra) for i, extra in enumerate(extras))
        at = 0
        while at < len(frames):
            step = rng.choice((1, 2, 5, 4096, 40_000, 300_000))
            client.send_raw(frames[at : at + step])
            at += step
            await client.writer.drain()
        for correlation_id in range(len(sizes)):
            assert await read_raw_frame(client) == body_for(correlation_id, 8, correlation_id)
        assert broker.requests == list(range(len(sizes)))
        assert [p[14:] for p in broker.payloads] == extras  # after the header
        await asyncio.sleep(0.1)
        assert server.buffer_budget.used == 0

    run(respond, test, loop)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
@pytest.mark.parametrize("loop", LOOPS)
def test_large_frames_both_ways_over_tls_on_both_sides(loop: str, tmp_path: Path) -> None:
    cert, key = _make_cert(tmp_path)
    settings = TlsSettings(certfile=cert, keyfile=key)
    sizes = {1: 3_000_000, 2: 20, 3: 700_000, 4: 65_540}

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, sizes[correlation_id], correlation_id)))
        await writer.drain()

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        extras = {cid: random.Random(cid).randbytes(size) for cid, size in sizes.items()}
        for cid, extra in extras.items():
            client.send_raw(request(FETCH, cid, extra))
        for cid, size in sizes.items():
            assert await read_raw_frame(client) == body_for(cid, size, cid)
        assert [p[14:] for p in broker.payloads] == list(extras.values())

    server_side, client_side = settings.server_context(), ssl.create_default_context(cafile=str(cert))
    if loop == "uvloop":
        # uvloop's start_tls on an accepted connection never completes the handshake (on main
        # before this change too), so under uvloop only the broker side is TLS here.
        run(respond, test, loop, (server_side, None), upstream_tls=TlsSettings(cafile=cert))
    else:
        run(
            respond,
            test,
            loop,
            (server_side, client_side),
            listener_tls=settings,
            upstream_tls=TlsSettings(cafile=cert),
        )


def _fetch_v4(topic: str, correlation_id: int) -> bytes:
    """Fetch v4 of partition 0 from offset 0, up to 64 MB."""
    client_id = b"stream-test"
    header = struct.pack(">hhih", FETCH, 4, correlation_id, len(client_id)) + client_id
    # replica, max wait (the local broker answers a wait of 0 with no data), min bytes, max bytes, isolation
    body = struct.pack(">iiiib", -1, 500, 1, 64 << 20, 0)
    body += struct.pack(">ih", 1, len(topic)) + topic.encode() + struct.pack(">iiqi", 1, 0, 0, 64 << 20)
    return framed(header + body)


@pytest.mark.integration
# kafka-python (creating the topic) loads its schemas through a deprecated importlib API.
@pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")
def test_a_large_fetch_answer_through_the_gateway_equals_the_direct_one(bootstrap: str, unique_name: str) -> None:
    from confluent_kafka import Producer

    from tests.gateway.clients import create_topic

    create_topic(bootstrap, unique_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    rng = random.Random(4)
    for i in range(6_000):
        producer.produce(unique_name, key=b"%d" % i, value=rng.randbytes(1024), partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0

    async def fetch(host: str, port: int) -> bytes:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(_fetch_v4(unique_name, 77))
            (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))
            return await asyncio.wait_for(reader.readexactly(size), 30)
        finally:
            writer.close()

    async def main() -> tuple[bytes, bytes]:
        host, _, port = bootstrap.rpartition(":")
        config = GatewayConfig(bootstrap_servers=bootstrap, listen_port=0)
        async with GatewayServer(config, ScriptedHandler()) as server:
            through = await fetch("127.0.0.1", server.port)
        return await fetch(host, int(port)), through

    direct, through = asyncio.run(main())
    assert len(direct) > 5_000_000  # several MB: streamed in many pieces
    assert through == direct


def test_the_scripted_broker_answers_directly_as_it_does_through_the_gateway() -> None:
    # The byte-for-byte tests compare against what the broker wrote; check that reading the broker
    # directly yields the same bytes, so the comparison is not with the gateway's own output.
    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, 300_000, correlation_id)))
        await writer.drain()

    async def main() -> None:
        async with ScriptedBroker(respond) as broker:
            client = await WireClient.connect("127.0.0.1", broker.port)
            client.send_raw(request(FETCH, 9, os.urandom(10)))
            assert await read_raw_frame(client) == body_for(9, 300_000, 9)
            await client.close()

    asyncio.run(main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_large_produce_to_the_log_topic_is_still_refused(loop: str) -> None:
    # Frames above the read-ahead buffer arrive in a buffer of their own (a bytearray): the
    # log-topic check must still see them.
    topic = b"__group_coordinator_log"
    records = random.Random(5).randbytes(200_000)

    def produce_v3(correlation_id: int, name: bytes) -> bytes:
        header = struct.pack(">hhih", 0, 3, correlation_id, 4) + b"test"
        body = struct.pack(">hhi", -1, 1, 30_000)  # no transactional id, acks=1, timeout
        body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">iii", 1, 0, len(records)) + records
        return framed(header + body)

    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(framed(body_for(correlation_id, 8, correlation_id)))

    async def test(server: GatewayServer, client: WireClient, broker: ScriptedBroker) -> None:
        client.send_raw(produce_v3(1, b"other-topic"))
        assert await read_raw_frame(client) == body_for(1, 8, 1)  # forwarded as it is
        client.send_raw(produce_v3(2, topic))
        answer = await read_raw_frame(client)
        # Produce v3 answer: correlation id, one topic (the log topic), partition 0 refused with
        # TOPIC_AUTHORIZATION_FAILED (29).
        at = 4 + 4 + 2 + len(topic) + 4 + 4
        assert answer[:4] == struct.pack(">i", 2) and topic in answer[:at]
        assert struct.unpack_from(">h", answer, at)[0] == 29
        assert broker.requests == [1]  # the log topic's produce never reached the broker
        assert len(broker.payloads[0]) > 200_000

    run(respond, test, loop, protected_topics=[topic.decode()])
