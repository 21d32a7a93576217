"""A raw Kafka-protocol client for tests: write frames, read frames, nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import TypeVar

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.messages.schema import Message

M = TypeVar("M", bound=Message)


class WireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.next_id = 1

    @classmethod
    async def connect(cls, host: str, port: int) -> WireClient:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    def send(self, api_key: int, version: int, body: Message, correlation_id: int | None = None) -> int:
        cid = self.next_id if correlation_id is None else correlation_id
        self.next_id = cid + 1
        self.writer.write(encode_request(RequestHeader(api_key, version, cid, "wire-test"), body))
        return cid

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def read_frame(self, timeout: float = 10) -> bytes:
        prefix = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        (size,) = struct.unpack(">i", prefix)
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def read(self, api_key: int, version: int, timeout: float = 10) -> tuple[int, Message]:
        return decode_response(api_key, version, await self.read_frame(timeout))

    async def call(self, api_key: int, version: int, body: Message) -> Message:
        cid = self.send(api_key, version, body)
        got, response = await self.read(api_key, version)
        assert got == cid
        return response

    async def read_as(self, answer: type[M], api_key: int, version: int, timeout: float = 10) -> tuple[int, M]:
        """``read``, where the caller knows the response class: checked here, and typed for the caller."""
        cid, response = await self.read(api_key, version, timeout)
        assert isinstance(response, answer), response
        return cid, response

    async def call_as(self, answer: type[M], api_key: int, version: int, body: Message) -> M:
        """``call``, where the caller knows the response class: checked here, and typed for the caller."""
        response = await self.call(api_key, version, body)
        assert isinstance(response, answer), response
        return response

    async def closed_by_peer(self, timeout: float = 5) -> bool:
        try:
            data = await asyncio.wait_for(self.reader.read(65536), timeout)
        except (ConnectionResetError, BrokenPipeError):
            return True
        return data == b""

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()
