"""ClientStream's read deadlines: one loop timer per stream, moved lazily, expiring only what waits too long."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from groupcoord.coordinator.gateway.client_stream import ClientStream


class Transport(asyncio.Transport):
    """Just enough of a transport for reading: nothing is sent anywhere."""

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


async def _nothing(stream: ClientStream) -> None:
    pass


def _stream(loop: asyncio.AbstractEventLoop) -> ClientStream:
    stream = ClientStream(loop, _nothing, tls=False)
    stream.connection_made(Transport())
    return stream


def _receive(stream: ClientStream, data: bytes) -> None:
    # As the transport does: as much as the offered buffer holds per receive.
    while data:
        buf = stream.get_buffer(len(data))
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        stream.buffer_updated(n)
        data = data[n:]


def test_waits_that_are_answered_arm_one_timer_for_the_stream_not_one_each() -> None:
    async def run() -> int:
        loop = asyncio.get_running_loop()
        stream = _stream(loop)
        armed = 0
        call_at = loop.call_at

        def counting(when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
            nonlocal armed
            armed += 1
            return call_at(when, callback, *args)

        loop.call_at = counting  # type: ignore[method-assign, assignment]  # [assignment]: checked against the unbound method
        try:
            for _ in range(100):
                waiting = asyncio.ensure_future(stream.read_start(loop.time() + 600))
                await asyncio.sleep(0)
                _receive(stream, b"x")
                assert await waiting
                assert await stream.readexactly(1) == b"x"
        finally:
            loop.call_at = call_at  # type: ignore[method-assign]
            stream.connection_lost(None)
        return armed

    assert asyncio.run(run()) == 1


def test_a_wait_still_times_out_at_its_deadline_and_an_earlier_deadline_is_not_missed() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        stream = _stream(loop)
        # A far deadline armed first, then a wait with a near one: the near one expires in time.
        waiting = asyncio.ensure_future(stream.read_start(loop.time() + 600))
        await asyncio.sleep(0)
        _receive(stream, b"x")
        assert await waiting
        await stream.readexactly(1)
        started = loop.time()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(stream.read_start(loop.time() + 0.05), 5)
        assert loop.time() - started < 5
        stream.connection_lost(None)

    asyncio.run(run())


def test_a_timer_armed_for_an_earlier_wait_does_not_expire_a_later_one_early() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        stream = _stream(loop)
        waiting = asyncio.ensure_future(stream.read_start(loop.time() + 0.05))
        await asyncio.sleep(0)
        _receive(stream, b"x")
        assert await waiting
        await stream.readexactly(1)
        # The timer armed for 50 ms fires while this wait (deadline 10 s) goes on: it re-arms.
        later = asyncio.ensure_future(stream.read_start(loop.time() + 10))
        await asyncio.sleep(0.2)
        assert not later.done()
        _receive(stream, b"y")
        assert await later
        stream.connection_lost(None)

    asyncio.run(run())


class CountingTransport(Transport):
    def __init__(self) -> None:
        super().__init__()
        self.pauses = 0

    def pause_reading(self) -> None:
        self.pauses += 1


def _counted_stream(loop: asyncio.AbstractEventLoop) -> tuple[ClientStream, CountingTransport]:
    stream = ClientStream(loop, _nothing, tls=False)
    transport = CountingTransport()
    stream.connection_made(transport)
    return stream, transport


def test_a_connection_starts_with_a_small_buffer_and_grows_it_only_when_a_client_sends_more() -> None:
    async def run() -> None:
        stream, transport = _counted_stream(asyncio.get_running_loop())
        start = len(stream._buf)
        # Heartbeat-sized requests, one at a time, as a group member sends them: never grown.
        for i in range(50):
            _receive(stream, bytes([i]) * 300)
            assert await stream.readexactly(300) == bytes([i]) * 300
        assert len(stream._buf) == start <= 4096
        # A 20 KiB request (read through the read-ahead buffer, below the own-buffer size) arrives
        # in pieces: it grows the buffer and arrives whole.
        frame = bytes(range(256)) * 80
        reading = asyncio.ensure_future(stream.readexactly(len(frame)))
        await asyncio.sleep(0)
        for piece in range(0, len(frame), 3000):
            _receive(stream, frame[piece : piece + 3000])
        assert await reading == frame
        assert len(stream._buf) > start
        # Pipelined requests up to the full read-ahead size are taken in without pausing reading.
        for _ in range(10):
            _receive(stream, b"z" * 3000)
        assert transport.pauses == 0 and stream.buffered == 30_000
        stream.connection_lost(None)

    asyncio.run(run())


def test_a_client_pipelining_past_the_starting_buffer_gets_the_grown_one_not_a_pause() -> None:
    async def run() -> None:
        stream, transport = _counted_stream(asyncio.get_running_loop())
        sent = b"".join(bytes([i]) * 1000 for i in range(12))  # 12 KB before anything is read
        for piece in range(0, len(sent), 1000):
            _receive(stream, sent[piece : piece + 1000])
        assert transport.pauses == 0
        assert b"".join([await stream.readexactly(1000) for _ in range(12)]) == sent
        stream.connection_lost(None)

    asyncio.run(run())


def test_drain_raises_once_the_transport_is_closing_before_connection_lost_comes() -> None:
    """A failed send closes the transport at once and reports ``connection_lost`` a loop turn
    later: the writer must stop at its drain then, not write the answers queued behind it into a
    closed transport (asyncio logs a WARNING per such write past the fifth)."""

    class Closing(Transport):
        def is_closing(self) -> bool:
            return True

    async def run() -> None:
        stream = ClientStream(asyncio.get_running_loop(), _nothing, tls=False)
        stream.connection_made(Closing())
        with pytest.raises(ConnectionResetError):
            await stream.drain()

    asyncio.run(run())
