"""One connection the sidecar opens itself to a Kafka-protocol server, with its own SASL login.

The transaction bridge (``txn/``), the share data path's reads (``service/share_fetcher.py``) and
the relay of share requests to the sidecar process that owns a group (``gateway/relay.py``) all
send requests of their own, one at a time, over such a connection: to a broker of the cluster, or
to another sidecar process's listener (which relays the SASL exchange to the cluster, as it does
for any client). ``login`` is the sidecar's ``client`` credentials (``security/cluster_login.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import time
from typing import TypeVar

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_response_header, encode_request_header
from groupcoord.coordinator.gateway.upstream import MAX_UPSTREAM_FRAME, open_stream, read_frame
from groupcoord.coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.cluster_login import ClusterLogin, LoginFailed

# The client id of requests on a connection opened without one.
DEFAULT_CLIENT_ID = "groupcoord"
_SASL_HANDSHAKE_VERSION = 1  # v0 sends unframed tokens; every broker since Kafka 1.0 has v1
_SASL_AUTHENTICATE_VERSION = 1  # v1 carries the session lifetime (KIP-368)
M = TypeVar("M", bound=Message)


class BrokerUnreachable(ConnectionError):
    """The broker could not be reached or closed the connection (Tansu closes it on some errors)."""


class BrokerConnection:
    """One connection to one broker; requests are sent one at a time (a lock orders them)."""

    def __init__(
        self,
        address: tuple[str, int],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_id: str = DEFAULT_CLIENT_ID,
    ) -> None:
        self.address = address
        self.client_id = client_id
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.closed = False
        self.reauthenticate_at: float | None = None

    @classmethod
    async def open(
        cls,
        address: tuple[str, int],
        tls: ssl.SSLContext | None,
        timeout: float,
        login: ClusterLogin | None = None,
        client_id: str = DEFAULT_CLIENT_ID,
    ) -> BrokerConnection:
        """A connection, logged in with ``login`` when the cluster needs SASL (the sidecar's own
        credentials, as its librdkafka clients use them)."""
        try:
            reader, writer = await open_stream(address, tls, timeout)
        except (OSError, TimeoutError) as exc:
            raise BrokerUnreachable(f"{address[0]}:{address[1]}: {exc}") from exc
        conn = cls(address, reader, writer, client_id)
        if login is not None:
            try:
                await conn._login(login, timeout)
            except LoginFailed as exc:
                conn.close()
                raise BrokerUnreachable(f"{address[0]}:{address[1]}: SASL {login.mechanism} login: {exc}") from exc
        return conn

    @property
    def expired(self) -> bool:
        """Closed, or past the session lifetime the cluster gave the login (KIP-368): a broker
        closes such a connection at its next request, so a new one is opened instead."""
        return self.closed or (self.reauthenticate_at is not None and time.monotonic() >= self.reauthenticate_at)

    async def _login(self, login: ClusterLogin, timeout: float) -> None:
        handshake = await self.call(
            SaslHandshakeRequest(mechanism=login.mechanism), SaslHandshakeResponse, _SASL_HANDSHAKE_VERSION, timeout
        )
        if handshake.error_code != 0:
            raise LoginFailed(f"error {handshake.error_code}; the cluster offers {', '.join(handshake.mechanisms)}")
        exchange = await login.begin()
        token: bytes | None = exchange.first()
        while token is not None:
            answer = await self.call(
                SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse, _SASL_AUTHENTICATE_VERSION, timeout
            )
            if answer.error_code != 0:
                raise LoginFailed(f"error {answer.error_code}: {answer.error_message}")
            token = exchange.answer(answer.auth_bytes)
            if answer.session_lifetime_ms > 0:
                # Renewed with a margin, as librdkafka does well before the broker's deadline.
                self.reauthenticate_at = time.monotonic() + answer.session_lifetime_ms * 0.8 / 1000

    async def call(
        self, body: Message, response: type[M], version: int, timeout: float, client_id: str | None = None
    ) -> M:
        """``body``'s answer; ``client_id`` in place of the connection's own for this request."""
        flexible = version in type(body).FLEXIBLE
        async with self._lock:
            correlation_id = next(self._ids)
            out = bytearray(4)
            header = RequestHeader(type(body).API_KEY, version, correlation_id, client_id or self.client_id)
            encode_request_header(header, 2 if flexible else 1, out)
            encode_struct(body, version, flexible, out)
            out[0:4] = (len(out) - 4).to_bytes(4, "big")
            try:
                self._writer.write(out)
                await self._writer.drain()
                payload = await asyncio.wait_for(read_frame(self._reader, MAX_UPSTREAM_FRAME), timeout)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise BrokerUnreachable(f"{self.address[0]}:{self.address[1]}: {exc!r}") from exc
        answered, pos = decode_response_header(payload, 1 if flexible else 0)
        if answered != correlation_id:
            self.close()
            raise BrokerUnreachable(f"answer {answered} to request {correlation_id}")
        return decode_struct(response, memoryview(payload)[pos:], version, flexible)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                self._writer.close()
