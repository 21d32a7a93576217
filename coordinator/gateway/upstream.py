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

from coordinator.gateway.framing import FrameError, peek_correlation_id
from coordinator.gateway.limits import ConnectionBudget

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


def write_framed(writer: asyncio.StreamWriter, payload: bytes) -> None:
    """Write one frame: its 4-byte length prefix, then the payload."""
    prefix = _LEN.pack(len(payload))
    if len(payload) < _JOIN_BELOW:
        writer.write(prefix + payload)
    else:
        writer.write(prefix)
        writer.write(payload)


def _retrieve(fut: asyncio.Future[bytes]) -> None:
    # A client that disconnected never awaits its remaining futures; reading the exception here
    # keeps asyncio from reporting it as "never retrieved".
    if not fut.cancelled():
        fut.exception()


class UpstreamConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        address: tuple[str, int],
        budget: ConnectionBudget | None = None,
    ) -> None:
        self.address = address
        # Each answer's bytes are taken from the budget before it is read; the client connection
        # gives them back once the answer is written.
        self._budget = budget
        self._reader = reader
        self._writer = writer
        self._pending: deque[tuple[int, asyncio.Future[bytes]]] = deque()
        self._closed: BaseException | None = None
        self._task = asyncio.create_task(self._read_loop(), name=f"upstream-{address[0]}:{address[1]}")

    @classmethod
    async def open(
        cls,
        address: tuple[str, int],
        tls: ssl.SSLContext | None,
        timeout: float,
        budget: ConnectionBudget | None = None,
    ) -> UpstreamConnection:
        reader, writer = await open_stream(address, tls, timeout)
        return cls(reader, writer, address, budget)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def send(self, request: bytes, correlation_id: int, expect_response: bool) -> asyncio.Future[bytes]:
        """Write one request (its payload; the length prefix is added); the future yields the response payload.

        When no response is expected (Produce with acks=0) the future is already resolved to b"".
        """
        if self._closed is not None:
            raise UpstreamClosed(str(self._closed))
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_retrieve)
        if expect_response:
            self._pending.append((correlation_id, fut))
        else:
            fut.set_result(b"")
        write_framed(self._writer, request)
        await self._writer.drain()
        return fut

    async def _read_loop(self) -> None:
        reason: BaseException = UpstreamClosed("upstream closed the connection")
        try:
            while True:
                prefix = await self._reader.readexactly(4)
                size = int(_LEN.unpack(prefix)[0])
                if size < 0:
                    raise FrameError(f"negative frame length {size}")
                if self._budget is not None:
                    await self._budget.acquire(size)
                payload = await self._reader.readexactly(size)
                if not self._pending:
                    raise FrameError("response with no request outstanding")
                expected, fut = self._pending.popleft()
                got = peek_correlation_id(payload)
                if got != expected:
                    raise FrameError(f"correlation id {got} where {expected} was due")
                if not fut.done():
                    fut.set_result(payload)
        except asyncio.CancelledError:
            reason = UpstreamClosed("upstream connection closed by the gateway")
        except (OSError, asyncio.IncompleteReadError, FrameError) as exc:
            if not isinstance(exc, asyncio.IncompleteReadError):
                log.warning("upstream connection failed broker=%s:%s error=%s", *self.address, exc)
            reason = UpstreamClosed(f"upstream {self.address[0]}:{self.address[1]}: {exc}")
        finally:
            self._fail(reason)

    def _fail(self, reason: BaseException) -> None:
        if self._closed is None:
            self._closed = reason
        while self._pending:
            _, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(reason)
        self._writer.close()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        with contextlib.suppress(OSError, ssl.SSLError):
            await self._writer.wait_closed()
