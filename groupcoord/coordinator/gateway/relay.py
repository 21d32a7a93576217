"""Relay a group request to the sidecar process that coordinates the group.

Kafka's admin client sends IncrementalAlterConfigs / DescribeConfigs for a group to any broker,
not to the group's coordinator. With several sidecar processes, the one that receives such a
request passes the part about groups it does not own to their owner (known from placement) over
one short-lived connection, and hands the answer back. A relayed request carries ``RELAY_CLIENT_ID``
and is never relayed again, so two processes that disagree about an owner cannot loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.messages.schema import Message

RELAY_CLIENT_ID = "groupcoord-relay"
_LEN = struct.Struct(">i")
# A relayed answer is small (group configs); anything bigger is not one.
_MAX_ANSWER_BYTES = 16 * 1024 * 1024


async def relay(host: str, port: int, header: RequestHeader, body: Message, timeout_s: float) -> Message:
    """Send ``body`` to the sidecar at ``host:port`` and return its answer (raises OSError,
    TimeoutError or ValueError when it cannot be had)."""
    relayed = RequestHeader(header.api_key, header.api_version, 1, RELAY_CLIENT_ID)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        writer.write(encode_request(relayed, body))
        await writer.drain()
        (size,) = _LEN.unpack(await asyncio.wait_for(reader.readexactly(4), timeout_s))
        if not 0 < size <= _MAX_ANSWER_BYTES:
            raise ValueError(f"answer of {size} bytes")
        payload = await asyncio.wait_for(reader.readexactly(size), timeout_s)
    except asyncio.IncompleteReadError as exc:
        raise ConnectionError("the peer closed the connection") from exc
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    _, answer = decode_response(header.api_key, header.api_version, payload)
    return answer
