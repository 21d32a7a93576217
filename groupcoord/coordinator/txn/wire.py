"""The few Kafka requests the sidecar sends on a client's behalf for transactional offsets.

A blocking-free, one-request-at-a-time connection on the project's codec, plus record batch v2
framing: one transactional batch out (kafka-python's builder, for its CRC-32C) and the headers of
the batches read back, control batches (COMMIT/ABORT markers) included. librdkafka's consumer
hides control batches, so this is the only reader that can see a transaction's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import struct
import time
from dataclasses import dataclass
from typing import TypeVar

from kafka.record.default_records import DefaultRecordBatchBuilder

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

CLIENT_ID = "groupcoord-txn"
_SASL_HANDSHAKE_VERSION = 1  # v0 sends unframed tokens; every broker since Kafka 1.0 has v1
_SASL_AUTHENTICATE_VERSION = 1  # v1 carries the session lifetime (KIP-368)
M = TypeVar("M", bound=Message)


class BrokerUnreachable(ConnectionError):
    """The broker could not be reached or closed the connection (Tansu closes it on some errors)."""


class BrokerConnection:
    """One connection to one broker; requests are sent one at a time (a lock orders them)."""

    def __init__(self, address: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.address = address
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
    ) -> BrokerConnection:
        """A connection, logged in with ``login`` when the cluster needs SASL (the sidecar's own
        credentials, as its librdkafka clients use them)."""
        try:
            reader, writer = await open_stream(address, tls, timeout)
        except (OSError, TimeoutError) as exc:
            raise BrokerUnreachable(f"{address[0]}:{address[1]}: {exc}") from exc
        conn = cls(address, reader, writer)
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
        exchange = login.exchange()
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

    async def call(self, body: Message, response: type[M], version: int, timeout: float) -> M:
        flexible = version in type(body).FLEXIBLE
        async with self._lock:
            correlation_id = next(self._ids)
            out = bytearray(4)
            header = RequestHeader(type(body).API_KEY, version, correlation_id, CLIENT_ID)
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


# --- record batches --------------------------------------------------------------------------

_TRANSACTIONAL = 0x10
_CONTROL = 0x20
# base offset (8), batch length (4), then from the leader epoch: leader epoch (4), magic (1),
# crc (4), attributes (2), last offset delta (4), base timestamp (8), max timestamp (8),
# producer id (8), producer epoch (2), base sequence (4), record count (4).
_HEAD = struct.Struct(">qi")
_BODY = struct.Struct(">ibIhiqqqhii")
_BATCH_OVERHEAD = 61
COMMIT_MARKER = 1
ABORT_MARKER = 0


def transactional_batch(
    key: bytes, value: bytes, producer_id: int, producer_epoch: int, sequence: int, now_ms: int | None = None
) -> bytes:
    """One uncompressed transactional record batch of one record."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=sequence,
        batch_size=len(key) + len(value) + 1024,
    )
    builder.append(0, int(time.time() * 1000) if now_ms is None else now_ms, key, value, [])
    return bytes(builder.build())


@dataclass(frozen=True, slots=True)
class BatchHead:
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    # For a control batch: COMMIT_MARKER or ABORT_MARKER; None for data.
    marker: int | None


def batch_heads(data: bytes | None) -> list[BatchHead]:
    """The complete batches of a Fetch answer's records (a partial one at the end is left out).
    Only a control batch's record is looked into: its key is version (int16) and type (int16)."""
    out: list[BatchHead] = []
    if not data:
        return out
    view = memoryview(data)
    pos = 0
    while pos + _BATCH_OVERHEAD <= len(view):
        base_offset, length = _HEAD.unpack_from(view, pos)
        end = pos + 12 + length
        if end > len(view) or length < _BATCH_OVERHEAD - 12:
            break
        (_, magic, _, attributes, last_delta, _, _, producer_id, epoch, _, count) = _BODY.unpack_from(view, pos + 12)
        marker = None
        if magic == 2 and attributes & _CONTROL and count > 0:
            marker = _control_type(view[pos + _BATCH_OVERHEAD : end])
        out.append(
            BatchHead(
                base_offset, base_offset + last_delta, producer_id, epoch, bool(attributes & _TRANSACTIONAL), marker
            )
        )
        pos = end
    return out


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _control_type(record: memoryview) -> int | None:
    """The type of a control record (its key: version int16, type int16)."""
    try:
        _, pos = _varint(record, 0)  # length
        pos += 1  # attributes
        _, pos = _varint(record, pos)  # timestamp delta
        _, pos = _varint(record, pos)  # offset delta
        key_length, pos = _varint(record, pos)
        if key_length < 4:
            return None
        return int(struct.unpack_from(">h", record, pos + 2)[0])
    except (IndexError, struct.error):
        return None
