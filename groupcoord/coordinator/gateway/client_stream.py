"""A client connection's byte stream: request frames read without copying large ones, answers written.

asyncio's StreamReader copies every byte it receives about three times (into a fresh bytes per
read, into its buffer, and out again by ``readexactly``), which for Produce requests was most of
the gateway's CPU. Here bytes are received into a small read-ahead buffer, and a large frame's
payload straight into one buffer of its announced size, which is what the gateway forwards.
At most one read-ahead buffer's worth is read beyond what the connection has asked for: when it
is full, reading pauses, so a client that sends faster than its requests are taken is pushed
back by TCP. The read side mirrors the StreamReader calls the connection used (``readexactly``
raises ``asyncio.IncompleteReadError`` at EOF); the write side the StreamWriter's.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from collections.abc import Callable, Coroutine
from typing import Any, cast

# Read-ahead buffer; a frame larger than half of it is received into its own buffer.
_READ_AHEAD = 64 * 1024
# What a connection starts with, grown to _READ_AHEAD the first time it fills or a frame needs
# more: a member that only heartbeats never does, and 5,000 members held 320 MB of zeroed
# 64 KiB buffers (and zeroing them was the largest cost of their connecting).
_READ_START = 4 * 1024
_OWN_BUFFER_ABOVE = _READ_AHEAD // 2
# Move unread bytes to the front once less than this is free behind them.
_COMPACT_BELOW = _READ_AHEAD // 4


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class ClientStream(asyncio.BufferedProtocol):
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_connect: Callable[[ClientStream], Coroutine[Any, Any, None]],
        tls: bool,
    ) -> None:
        self._loop = loop
        self._on_connect = on_connect
        self._tls = tls
        self._task: asyncio.Task[None] | None = None
        self.transport: asyncio.Transport  # set by connection_made
        self._buf = bytearray(_READ_START)
        self._start = 0  # unread bytes: [_start, _end)
        self._end = 0
        self._frame: bytearray | None = None  # a large payload being received in place
        self._frame_view: memoryview | None = None
        self._frame_filled = 0
        self._wanted = 0  # bytes the reader waits for in the read-ahead buffer
        self._waiter: asyncio.Future[None] | None = None
        self._deadline: float | None = None  # the waiting read's deadline, if it has one
        # One loop timer per stream, moved later lazily (see ``_wait``): at ``_timer_at``.
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._eof = False
        # No request is read after the one being read (``end_requests``); answers still are written.
        self._requests_ended = False
        self._error: Exception | None = None  # how the connection was lost, if not by a clean close
        self._lost = False
        self._read_paused = False
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._on_resume: Callable[[], None] | None = None  # a streamed answer waiting for room
        self._closed: asyncio.Future[None] = loop.create_future()
        # Offered each whole request frame (its payload) that arrives while the reader waits for
        # the next one to start; True: it was answered, the stream drops it (``answer_at_once``).
        self._at_once: Callable[[bytes], bool] | None = None
        self._at_once_idle_s = 0.0
        self._at_frame_start = False  # the reader waits in ``read_start``

    # --- asyncio.BufferedProtocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without deriving from it.
        self.transport = cast(asyncio.Transport, transport)
        if self._tls:
            # Nothing may be read before start_tls takes over, or the ClientHello would land here.
            self.transport.pause_reading()
        self._task = self._loop.create_task(self._on_connect(self))

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame_view is not None:
            return self._frame_view[self._frame_filled :]
        buf = self._buf
        if self._start == self._end:
            self._start = self._end = 0
        elif self._start > 0 and len(buf) - self._end < _COMPACT_BELOW:
            # Same-size slice assignment: allowed even while a view of the buffer is alive.
            n = self._end - self._start
            buf[:n] = buf[self._start : self._end]
            self._start, self._end = 0, n
        if self._end == len(buf):
            # Only when the transport delivers although reading is paused (it may, briefly).
            self._buf = buf = buf + bytearray(_READ_AHEAD)
        return memoryview(buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame_view is not None:
            self._frame_filled += nbytes
            if self._frame_filled == len(self._frame_view):
                # Complete: later bytes go to the read-ahead buffer (an empty view would be EOF).
                self._frame_view = None
                self._wake()
            return
        self._end += nbytes
        if self._at_frame_start and self._at_once is not None:
            self._answer_at_once(self._at_once)
        if self._end - self._start >= self._wanted:
            self._wake()
        if self._end - self._start >= len(self._buf) and len(self._buf) < _READ_AHEAD:
            self._grow()  # a client sending more than the starting buffer: pipelining, large requests
        if self._end - self._start >= len(self._buf) and not self._read_paused and not self.transport.is_closing():
            self._read_paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        # Keep the connection half-open, so answers still owed reach the client (as
        # StreamReaderProtocol does); TLS cannot be half-open.
        return self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:  # it would keep the stream alive until it fires
            self._timer.cancel()
            self._timer = None
        self._eof = True
        self._lost = True
        self._error = exc
        self._wake()
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self._resumed()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self._resumed()

    def _resumed(self) -> None:
        if self._on_resume is not None:
            self._on_resume()

    # --- reading --------------------------------------------------------------------------------

    def loop_time(self) -> float:
        """The clock deadlines are given in."""
        return self._loop.time()

    @property
    def buffered(self) -> int:
        """Bytes received and not yet read."""
        return self._end - self._start

    # ``deadline`` (the loop's clock): raise TimeoutError if the bytes have not arrived by then. A
    # timer is armed only when the call has to wait, and is one loop timer rather than an
    # asyncio.timeout() block: the idle deadline is set for every request, and the context
    # manager's bookkeeping was a tenth of the forwarding CPU.

    async def read_start(self, deadline: float | None = None) -> bool:
        """Wait for the next byte; False at end of stream, or once requests have ended
        (``end_requests``). Frames answered at once meanwhile (``answer_at_once``) are not seen
        here: each moves ``deadline`` on by the idle time."""
        if self._end == self._start and not self._requests_ended:
            self._at_frame_start = True
            try:
                await self._wait_for(1, deadline, complete=False)
            finally:
                self._at_frame_start = False
        return self._end > self._start and not self._requests_ended

    @property
    def requests_ended(self) -> bool:
        return self._requests_ended

    def end_requests(self) -> None:
        """Read no further request: ``read_start`` returns False from now on, as at the end of the
        stream (a reader waiting in it is woken), while answers are still written. No frame is
        offered to ``answer_at_once`` any more."""
        self._requests_ended = True
        self._at_once = None
        self._wake()

    def answer_at_once(self, answer: Callable[[bytes], bool] | None, idle_s: float = 0.0) -> None:
        """Offer ``answer`` each request frame (the payload, without its length) that arrives
        whole while the reader waits for the next one, in order, as the bytes are received and
        before the reader is woken: True means it was answered (written) and is dropped, False
        stops the offers until the reader has waited again, the frame left to the reader. Saves a
        request that needs no waiting every loop turn and task step of the reader and writer.
        ``idle_s``: the reader's deadline moves to that long after each frame answered."""
        self._at_once, self._at_once_idle_s = answer, idle_s

    def _answer_at_once(self, answer: Callable[[bytes], bool]) -> None:
        buf = self._buf
        while self._end - self._start >= 4:
            start = self._start + 4
            end = start + int.from_bytes(buf[self._start : start], "big")
            if end > self._end or not answer(bytes(buf[start:end])):
                return
            self._start = end
            if self._deadline is not None:
                self._deadline = self._loop.time() + self._at_once_idle_s
        if self._start == self._end:
            self._start = self._end = 0

    async def readexactly(self, n: int, deadline: float | None = None) -> bytes | bytearray:
        available = self._end - self._start
        if available >= n:
            return self._take(n)
        if n <= _OWN_BUFFER_ABOVE:
            await self._wait_for(n, deadline)
            return self._take(n)
        frame = bytearray(n)
        frame[:available] = self._buf[self._start : self._end]
        self._start = self._end = 0
        self._frame, self._frame_view, self._frame_filled = frame, memoryview(frame), available
        self._resume_reading()
        try:
            while self._frame_filled < n:
                if self._eof:
                    if self._error is not None:
                        raise self._lost_error()
                    raise asyncio.IncompleteReadError(bytes(frame[: self._frame_filled]), n)
                await self._wait(deadline)
        finally:
            self._frame = self._frame_view = None
        return frame

    def _lost_error(self) -> Exception:
        """How the connection was lost, a new exception each time it is raised. The stored one,
        raised, would keep in its traceback the frames it passed (the client connection's, which
        hold this stream): a reference cycle, which only the cyclic collector frees (rarely:
        runtime/collector.py), holding the connection's buffers and its upstream connection."""
        error = self._error
        assert error is not None
        try:
            return copy.copy(error)
        except Exception:  # an exception that cannot be made again from its arguments
            return ConnectionError(str(error))

    def _grow(self) -> None:
        # A new buffer, never a resize: the transport may still hold a view of the old one.
        unread = self._end - self._start
        buf = bytearray(max(_READ_AHEAD, unread))
        buf[:unread] = self._buf[self._start : self._end]
        self._buf, self._start, self._end = buf, 0, unread

    def _take(self, n: int) -> bytes:
        start = self._start
        data = bytes(self._buf[start : start + n])
        self._start = start + n
        self._resume_reading()
        return data

    async def _wait_for(self, n: int, deadline: float | None, complete: bool = True) -> None:
        if n > len(self._buf):
            self._grow()
        self._wanted = n
        try:
            while self._end - self._start < n:
                if self._requests_ended and not complete:
                    return
                if self._eof:
                    if self._error is not None:
                        raise self._lost_error()
                    if not complete:
                        return
                    raise asyncio.IncompleteReadError(bytes(self._buf[self._start : self._end]), n)
                # Space for n bytes: the read-ahead buffer holds any frame read through it.
                self._resume_reading()
                await self._wait(deadline)
        finally:
            self._wanted = 0

    async def _wait(self, deadline: float | None) -> None:
        # The deadline is kept on the stream, and its one timer is armed only when none is, or
        # when the armed one is later than this deadline: a timer that fires before the current
        # deadline re-arms itself for it (``_on_timer``). Every wait for a client's next request
        # has a deadline (connections_max_idle_ms), and arming a loop timer for each, then
        # cancelling it when the request came, was two heap operations in Python per request
        # (5,000 members heartbeating: the heap held thousands of cancelled timers).
        self._waiter = waiter = self._loop.create_future()
        if deadline is not None:
            self._deadline = deadline
            if self._timer is None or self._timer_at > deadline:
                self._arm(deadline)
        try:
            await waiter
        finally:
            self._waiter = None
            self._deadline = None

    def _arm(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self._loop.call_at(at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        deadline, waiter = self._deadline, self._waiter
        if deadline is None or waiter is None or self._lost:
            return  # nothing waits with a deadline: the next wait arms the timer again
        if deadline > self._timer_at:
            self._arm(deadline)  # moved later since the timer was armed
            return
        _expire(waiter)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _resume_reading(self) -> None:
        if self._read_paused and self._end - self._start < len(self._buf):
            self._read_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    # --- writing (the StreamWriter calls the connection uses) -----------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.transport.write(data)

    @property
    def write_paused(self) -> bool:
        return self._write_paused

    def on_resume(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` whenever the transport may take more, and when the connection is lost
        (a streamed answer's writer: upstream.AnswerSink)."""
        self._on_resume = callback

    async def drain(self) -> None:
        # Closing: a failed send closes the transport at once, ``connection_lost`` a turn later.
        if self._lost or self.transport.is_closing():
            raise ConnectionResetError("Connection lost")
        if self._write_paused:
            waiter = self._loop.create_future()
            self._drain_waiters.append(waiter)
            await waiter
            if self._lost:
                raise ConnectionResetError("Connection lost")

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    async def start_tls(self, context: ssl.SSLContext) -> None:
        self.transport = cast(
            asyncio.Transport, await self._loop.start_tls(self.transport, self, context, server_side=True)
        )

    def close(self) -> None:
        self.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)
