"""One connection to a backing broker, carrying one client connection's forwarded requests.

Brokers answer the requests of one connection in order, so responses are matched to requests
first-in first-out; the correlation id is only checked. Keeping one upstream connection per client
connection (rather than multiplexing) keeps per-connection broker state (SASL, throttling,
ordering) exactly as the client would have it talking to the broker directly, and makes correlation
id remapping unnecessary.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, Protocol, cast

from groupcoord.coordinator.gateway.answers import retrieve
from groupcoord.coordinator.gateway.framing import FrameError
from groupcoord.coordinator.gateway.limits import ConnectionBudget

log = logging.getLogger(__name__)

_LEN = struct.Struct(">i")
# Responses from a broker are trusted; the limit only rejects a corrupt length prefix.
MAX_UPSTREAM_FRAME = 2**31 - 1


class UpstreamClosed(ConnectionError):
    pass


async def open_stream(
    address: tuple[str, int], tls: ssl.SSLContext | None, timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = address
    return await asyncio.wait_for(
        asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None, limit=2**20),
        timeout,
    )


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes:
    prefix = await reader.readexactly(4)
    size = int(_LEN.unpack(prefix)[0])
    if size < 0 or size > max_bytes:
        raise FrameError(f"frame length {size} outside 0..{max_bytes}")
    return await reader.readexactly(size)


# Below this, prefix and payload are joined into one write (one send); above it they are written
# apart, because joining would copy a large Produce or Fetch payload (and asyncio's writelines
# joins too on Python 3.11).
_JOIN_BELOW = 64 * 1024


def write_framed(writer: asyncio.StreamWriter | asyncio.WriteTransport, payload: bytes | bytearray) -> None:
    """Write one frame: its 4-byte length prefix, then the payload."""
    prefix = _LEN.pack(len(payload))
    if len(payload) < _JOIN_BELOW:
        writer.write(prefix + payload)
    else:
        # The prefix goes out with the payload's first bytes (no 4-byte packet of its own); the
        # rest as a memoryview: when the socket takes only part, the transport slices off what
        # was sent, and slicing bytes or a bytearray would copy the rest.
        writer.write(prefix + payload[:_JOIN_BELOW])
        writer.write(memoryview(payload)[_JOIN_BELOW:])


# Bytes read ahead between answers: small answers are sliced out of it whole; a larger one gets its
# own buffer of the announced size, and its remaining bytes are received straight into that.
_SCRATCH_BYTES = 64 * 1024


# At most this much of a streamed answer is handed to the client's transport at once. A transport
# keeps what the socket does not take at once, and asyncio's (Python 3.11) copies it into a buffer
# of its own; handing over bounded pieces, and none while the transport asks to pause, keeps that
# copy to one piece instead of the rest of a many-MB Fetch answer.
_PIECE = 256 * 1024

# Kafka never answers a Produce with acks=0, and the client expects no answer; some brokers answer
# anyway: Tansu (the local broker, ``groupcoord.local_broker``) does. Answers are paired with
# requests strictly in order, so such an answer was taken for the next one's (or for none) and the
# connection failed: librdkafka lost most of an acks=0 producer's records through the sidecar.
# The correlation ids of the acks=0 Produce requests sent are remembered, so their answers are
# recognised and dropped (``UpstreamConnection._answers_acks_zero``): as runs of consecutive ids
# (clients count them up), so a producer sending only acks=0 to Kafka, which answers none, holds a
# few runs, not an entry per request. At most this many runs, the oldest forgotten first.
ACKS_ZERO_REMEMBERED = 1024


class AnswerSink(Protocol):
    """Where a streamed answer is written: the client connection's transport, and its flow control."""

    @property
    def transport(self) -> asyncio.WriteTransport: ...

    @property
    def write_paused(self) -> bool: ...

    def on_resume(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` when the transport may take more (or the connection is lost)."""


class Answer:
    """One response owed by the broker.

    Its payload arrives into one buffer of the announced size. The client connection's writer either
    awaits it whole (answers that are rewritten or looked into), or, once every earlier answer on the
    connection is written, calls ``stream_to``: what has arrived is written to the client at once and
    every later chunk as it arrives (in pieces, as fast as the client's transport takes them), so the
    client sees its first byte without waiting for the last. Regions of the buffer are never written
    twice, so handing slices of it to a transport is safe.
    """

    __slots__ = ("correlation_id", "size", "_buf", "_filled", "_sink", "_sent", "_done", "_written")

    def __init__(self, correlation_id: int, done: asyncio.Future[None]) -> None:
        self.correlation_id = correlation_id
        self.size = -1  # unknown until its length prefix arrives
        self._buf: bytes | bytearray = b""
        self._filled = 0
        self._sink: AnswerSink | None = None
        self._sent = -1  # payload bytes written to the sink; -1: not even the length prefix
        self._done = done
        self._written: asyncio.Future[None] | None = None  # while streaming: set once all is written
        done.add_done_callback(retrieve)

    @property
    def arrived(self) -> bool:
        return self._done.done()

    def on_arrival(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(size)`` once the whole answer has arrived (not if it never does)."""

        def done(fut: asyncio.Future[None]) -> None:
            if not fut.cancelled() and fut.exception() is None:
                callback(self.size)

        self._done.add_done_callback(done)

    def __await__(self) -> Generator[Any, None, bytes]:
        """The whole payload (without length prefix), once it has arrived."""
        yield from self._done.__await__()
        return self._buf if isinstance(self._buf, bytes) else bytes(self._buf)

    async def stream_to(self, sink: AnswerSink) -> int:
        """Write the answer, length prefix first, to ``sink`` as its bytes arrive; its size once all
        are handed to the transport. Raises UpstreamClosed when the broker connection ends before
        the last byte: the client then holds a frame shorter than its prefix says and must be
        disconnected."""
        self._sink = sink
        self._written = self._done.get_loop().create_future()
        sink.on_resume(self._flush)
        try:
            self._flush()
            await self._done
            await self._written
        finally:
            sink.on_resume(None)
            self._sink = None
        return self.size

    # --- fed by the protocol -------------------------------------------------------------------

    def _whole(self, payload: bytes) -> None:
        self.size = self._filled = len(payload)
        self._buf = payload
        self._flush()
        self._done.set_result(None)

    def _begin(self, size: int, first: memoryview) -> memoryview:
        """Start receiving a payload of ``size`` bytes whose first bytes are ``first``; the buffer
        the rest is to be received into."""
        self.size = size
        self._buf = buf = bytearray(size)
        n = len(first)
        buf[:n] = first
        self._filled = n
        self._flush()
        return memoryview(buf)

    def _received(self, filled: int) -> None:
        self._filled = filled
        self._flush()
        if filled == self.size:
            self._done.set_result(None)

    def _fail(self, reason: BaseException) -> None:
        if not self._done.done():
            self._done.set_exception(reason)

    def _flush(self) -> None:
        sink = self._sink
        if sink is None or self.size < 0:
            return
        transport = sink.transport
        if transport.is_closing():
            # The client is gone: nothing more can be written, and the writer learns it on drain.
            self._finish_writing()
            return
        filled, sent = self._filled, self._sent
        if sent < 0:
            # The prefix goes out joined with up to one scratch buffer's worth of payload: one
            # send, and never a copy of a large payload.
            sent = min(filled, _SCRATCH_BYTES)
            transport.write(_LEN.pack(self.size) + self._buf[:sent])
        view = memoryview(self._buf)
        # A send that fails closes the transport at once: the pieces after it are not written
        # (asyncio would drop each and log a WARNING per write past the fifth).
        while sent < filled and not sink.write_paused and not transport.is_closing():
            end = min(filled, sent + _PIECE)
            transport.write(view[sent:end])
            sent = end
        self._sent = sent
        if sent == self.size or transport.is_closing():
            self._finish_writing()

    def _finish_writing(self) -> None:
        written = self._written
        if written is not None and not written.done():
            written.set_result(None)


class _UpstreamProtocol(asyncio.BufferedProtocol):
    """Splits the broker's byte stream into answers without copying large ones.

    Between answers, bytes are received into a small scratch buffer; an answer found whole there is
    sliced out, and one that is not gets a buffer of its announced size which the socket then
    fills directly. Each answer's bytes are taken from the connection's budget before its payload
    is read: while none is free, reading pauses, so TCP pushes back on the broker.
    """

    def __init__(self, budget: ConnectionBudget | None) -> None:
        self.budget = budget
        self.upstream: UpstreamConnection | None = None
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._scratch = bytearray(_SCRATCH_BYTES)
        self._start = 0  # unparsed bytes of the scratch buffer: [_start, _end)
        self._end = 0
        self._answer: Answer | None = None  # the answer whose payload is being received directly
        self._view: memoryview | None = None
        self._filled = 0
        self._granted = False  # budget taken for the frame at _start
        self._budget_wait: asyncio.Task[None] | None = None
        self._skip = 0  # bytes still to drop of an answer to an acks=0 Produce (ACKS_ZERO_REMEMBERED)
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None

    # --- asyncio.BufferedProtocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without deriving from it.
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._view is not None:
            return self._view[self._filled :]
        if self._start > 0:
            # Same-size slice assignment: allowed while the scratch buffer is exported.
            n = self._end - self._start
            self._scratch[:n] = self._scratch[self._start : self._end]
            self._start, self._end = 0, n
        if self._end == len(self._scratch):
            # Only while reading is paused for budget and the transport still delivers.
            self._scratch = self._scratch + bytearray(_SCRATCH_BYTES)
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        try:
            if self._view is not None:
                self._filled += nbytes
                answer = self._answer
                assert answer is not None
                if self._filled == answer.size:
                    self._view = self._answer = None
                answer._received(self._filled)
            else:
                self._end += nbytes
                self._parse()
        except FrameError as exc:
            self._broken(exc)

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost fails what is owed

    def connection_lost(self, exc: Exception | None) -> None:
        if self._budget_wait is not None:
            self._budget_wait.cancel()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if not self.closed.done():
            self.closed.set_result(None)
        upstream = self.upstream
        if upstream is not None:
            upstream._lost(exc)
        # The upstream connection and this protocol refer to each other: a cycle, which only the
        # cyclic collector would free, and it runs rarely here (runtime/collector.py), so every
        # closed connection held its 64 KiB scratch buffer until then (a process opening and
        # closing many client connections held hundreds of MB). Nothing is read after this, so
        # the cycle is broken and what was being read dropped: reference counting frees them now.
        self.upstream = None
        self._scratch = bytearray()
        self._start = self._end = 0
        self._answer = self._view = None

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def drain(self) -> None:
        if self._write_paused and not self.closed.done():
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    # --- splitting --------------------------------------------------------------------------------

    def _parse(self) -> None:
        scratch = self._scratch
        if self._skip:
            dropped = min(self._skip, self._end - self._start)
            self._start += dropped
            self._skip -= dropped
        # 8 bytes: the length prefix and the correlation id every answer starts with.
        while self._end - self._start >= 8 and self._budget_wait is None:
            start = self._start
            size = int(_LEN.unpack_from(scratch, start)[0])
            if size < 4:
                raise FrameError(f"answer of {size} bytes is shorter than its correlation id")
            if not self._granted:
                if self._answers_acks_zero(scratch, start + 4):
                    # Owed to no one (see ACKS_ZERO_REMEMBERED): dropped unread, so no budget.
                    end = start + 4 + size
                    if end <= self._end:
                        self._start = end
                        continue
                    self._skip = end - self._end
                    self._start = self._end = 0
                    return
                if self.budget is not None and not self.budget.try_acquire(size):
                    self._wait_for_budget(size)
                    return
                self._granted = True
            answer = self._next_answer(scratch, start + 4)
            end = start + 4 + size
            if end <= self._end:
                self._granted = False
                self._start = end
                answer._whole(bytes(scratch[start + 4 : end]))
            else:
                self._granted = False
                first = memoryview(scratch)[start + 4 : self._end]
                self._start = self._end = 0
                self._view = answer._begin(size, first)
                self._answer = answer
                self._filled = answer._filled
                return

    def _answers_acks_zero(self, scratch: bytearray, payload_at: int) -> bool:
        upstream = self.upstream
        return upstream is not None and upstream._answers_acks_zero(int(_LEN.unpack_from(scratch, payload_at)[0]))

    def _next_answer(self, scratch: bytearray, payload_at: int) -> Answer:
        upstream = self.upstream
        if upstream is None or not upstream._pending:
            raise FrameError("response with no request outstanding")
        answer = upstream._pending[0]
        got = int(_LEN.unpack_from(scratch, payload_at)[0])
        if got != answer.correlation_id:
            raise FrameError(f"correlation id {got} where {answer.correlation_id} was due")
        upstream._pending.popleft()
        upstream._owed_answered += 1
        return answer

    def _wait_for_budget(self, size: int) -> None:
        assert self.budget is not None and self.transport is not None
        if not self.transport.is_closing():
            self.transport.pause_reading()
        self._budget_wait = asyncio.create_task(self._acquire(self.budget, size))

    async def _acquire(self, budget: ConnectionBudget, size: int) -> None:
        await budget.acquire(size)
        self._budget_wait = None
        self._granted = True
        try:
            self._parse()
        except FrameError as exc:
            self._broken(exc)
            return
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def _broken(self, exc: FrameError) -> None:
        upstream = self.upstream
        if upstream is not None:
            log.warning("upstream connection failed broker=%s:%s error=%s", *upstream.address, exc)
            upstream._fail(UpstreamClosed(f"upstream {upstream.address[0]}:{upstream.address[1]}: {exc}"))
        if self.transport is not None:
            self.transport.abort()


class UpstreamConnection:
    def __init__(self, protocol: _UpstreamProtocol, address: tuple[str, int]) -> None:
        self.address = address
        self._protocol = protocol
        transport = protocol.transport
        assert transport is not None
        self._transport = transport
        # Answers owed, in request order (a broker answers one connection's requests in order).
        self._pending: deque[Answer] = deque()
        # Answers owed so far, and received so far: every request's place in the order of answers.
        self._owed_sent = 0
        self._owed_answered = 0
        # Produce requests with acks=0 sent, which a broker may answer all the same (Tansu does,
        # Kafka never does; see ACKS_ZERO_REMEMBERED), in runs of consecutive correlation ids:
        # (first id, how many, answers owed before them).
        self._acks_zero_sent: deque[tuple[int, int, int]] = deque(maxlen=ACKS_ZERO_REMEMBERED)
        self._closed: BaseException | None = None
        # Told once the connection is lost (``on_lost``); never when the gateway closes it.
        self._on_lost: Callable[[], None] | None = None
        self._loop = asyncio.get_running_loop()
        self._writing = asyncio.Lock()
        if protocol.closed.done():
            # Lost already: connection_lost has run, and will not drop this reference (a cycle).
            self._lost(None)
        else:
            protocol.upstream = self

    @classmethod
    async def open(
        cls,
        address: tuple[str, int],
        tls: ssl.SSLContext | None,
        timeout: float,
        budget: ConnectionBudget | None = None,
    ) -> UpstreamConnection:
        """Connect; each answer's bytes are taken from ``budget`` before its payload is read, and
        the client connection gives them back once the answer is written."""
        host, port = address
        loop = asyncio.get_running_loop()
        _, protocol = await asyncio.wait_for(
            loop.create_connection(
                lambda: _UpstreamProtocol(budget), host, port, ssl=tls, server_hostname=host if tls else None
            ),
            timeout,
        )
        return cls(protocol, address)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def on_lost(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` once, when the connection is lost: the broker closed or reset it, or
        it failed (at once if it is lost already); not when the gateway closes it (``close``).
        The answers owed have failed by then."""
        if self._closed is not None:
            if callback is not None:
                callback()
            return
        self._on_lost = callback

    async def send(self, request: bytes | bytearray, correlation_id: int, expect_response: bool) -> Answer:
        """Write one request (its payload; the length prefix is added) and return its answer.

        When no response is expected (Produce with acks=0) the answer has already arrived, empty.
        """
        # One request at a time: a large one is written in several steps, and the broker must see
        # each frame whole, in the order of the answers owed.
        async with self._writing:
            if self._closed is not None:
                raise UpstreamClosed(str(self._closed))
            answer = Answer(correlation_id, self._loop.create_future())
            if expect_response:
                self._pending.append(answer)
                self._owed_sent += 1
            else:
                answer._whole(b"")
                self._sent_acks_zero(correlation_id)
            # The prefix joined with the first bytes (a small request whole), then the rest a piece
            # at a time, each once the transport has room, so what the socket does not take at
            # once is never copied whole into the transport's own buffer.
            self._transport.write(_LEN.pack(len(request)) + request[:_JOIN_BELOW])
            view = memoryview(request)
            for at in range(_JOIN_BELOW, len(request), _PIECE):
                await self._protocol.drain()
                self._transport.write(view[at : at + _PIECE])
            await self._protocol.drain()
        return answer

    def _sent_acks_zero(self, correlation_id: int) -> None:
        sent = self._acks_zero_sent
        if sent:
            first, count, owed_before = sent[-1]
            if owed_before == self._owed_sent and correlation_id == first + count:
                sent[-1] = (first, count + 1, owed_before)
                return
        sent.append((correlation_id, 1, self._owed_sent))

    def _answers_acks_zero(self, correlation_id: int) -> bool:
        """Whether the answer arriving next, carrying ``correlation_id``, is a broker's answer to a
        Produce with acks=0 (Tansu answers them, Kafka does not: ACKS_ZERO_REMEMBERED), to be
        dropped. Brokers answer in order, so it can only answer an acks=0 request sent after the
        last request whose answer has come and before the next one owed; those before it that
        were not answered never will be. Everything else is paired strictly as before, and when
        the request owed next carries the same correlation id (a client reusing ids), it wins, as
        Kafka would have it."""
        sent = self._acks_zero_sent
        while sent:
            first, count, owed_before = sent[0]
            if owed_before > self._owed_answered:
                return False  # sent after the request owed next: its answer comes after that one
            end = first + count
            if owed_before == self._owed_answered and first <= correlation_id < end:
                pending = self._pending
                if pending and pending[0].correlation_id == correlation_id:
                    return False
                # Answered; the run's ids before it were not, and never will be.
                if correlation_id + 1 < end:
                    sent[0] = (correlation_id + 1, end - correlation_id - 1, owed_before)
                else:
                    sent.popleft()
                return True
            sent.popleft()  # not answered, and never will be (Kafka)
        return False

    def _lost(self, exc: BaseException | None) -> None:
        if exc is not None:
            log.warning("upstream connection failed broker=%s:%s error=%s", *self.address, exc)
            self._fail(UpstreamClosed(f"upstream {self.address[0]}:{self.address[1]}: {exc}"))
        else:
            self._fail(UpstreamClosed("upstream closed the connection"))

    def _fail(self, reason: BaseException) -> None:
        if self._closed is None:
            self._closed = reason
        protocol = self._protocol
        if protocol._answer is not None:
            protocol._answer._fail(reason)
        while self._pending:
            self._pending.popleft()._fail(reason)
        self._transport.close()
        # Dropped as it is called: it refers to the client connection, which refers to this one.
        callback, self._on_lost = self._on_lost, None
        if callback is not None:
            callback()

    async def close(self) -> None:
        self._on_lost = None  # closed by its own client connection: nobody to tell
        self._fail(UpstreamClosed("upstream connection closed by the gateway"))
        with contextlib.suppress(OSError, ssl.SSLError):
            await self._protocol.closed
