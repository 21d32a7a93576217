"""Where a Fetch request (v4-v12, the versions the reader relay lets its consumers use) holds its
MaxWaitMs, so the relay can read and set it in the frame's bytes without decoding the request.

A Fetch request's body begins ReplicaId (int32, v0-v14), MaxWaitMs (int32); the request header
before it is the api key, version and correlation id, the client id (int16-prefixed, -1 for
null) and, from v12 (flexible versions), the header's tagged fields.
"""

from __future__ import annotations

import struct

from groupcoord.coordinator.gateway.codec import CodecError, read_tag_count, read_uvarint
from groupcoord.coordinator.gateway.framing import FrameError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_FETCH = 1
# The oldest Fetch with a flexible header is v12; ReplicaId leaves the body at v15.
_FLEXIBLE_FROM = 12
_LAST_WITH_REPLICA_ID = 14


def max_wait_offset(frame: bytes | bytearray | memoryview) -> int | None:
    """The offset of MaxWaitMs in ``frame`` (a whole request with its 4-byte length prefix), or
    None when it is not a Fetch request the relay knows the layout of, or is cut short."""
    try:
        if len(frame) < 4 + _HEADER.size:
            return None
        key, version, _ = _HEADER.unpack_from(frame, 4)
        if key != _FETCH or version > _LAST_WITH_REPLICA_ID:
            return None
        pos = 4 + _HEADER.size
        (client_id,) = _I16.unpack_from(frame, pos)
        pos += 2 + max(client_id, 0)
        if version >= _FLEXIBLE_FROM:
            tags, pos = read_tag_count(frame, pos)
            for _ in range(tags):
                _, pos = read_uvarint(frame, pos)
                size, pos = read_uvarint(frame, pos)
                pos += size
        pos += 4  # ReplicaId
        return pos if pos + 4 <= len(frame) else None
    except (struct.error, CodecError, FrameError):
        return None


def max_wait_ms(frame: bytes | bytearray | memoryview, offset: int) -> int:
    return int(_I32.unpack_from(frame, offset)[0])


def with_max_wait(frame: bytes | bytearray, offset: int, wait_ms: int) -> bytes:
    """A copy of ``frame`` asking the broker to wait at most ``wait_ms``."""
    out = bytearray(frame)
    _I32.pack_into(out, offset, wait_ms)
    return bytes(out)
