"""Kafka framing and headers: a 4-byte big-endian length prefix, then a request or response header.

Request header v0 = api key, api version, correlation id; v1 adds the client id (a classic nullable
string even in flexible versions); v2 adds a tagged-field section. Response header v0 = correlation
id; v1 adds a tagged-field section.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from groupcoord.coordinator.gateway.codec import CodecError, read_tag_count, read_uvarint, write_uvarint

_LEN = struct.Struct(">i")
_PEEK = struct.Struct(">hhi")
_I16 = struct.Struct(">h")


class FrameError(ValueError):
    """The byte stream cannot be split into frames; the connection must be closed."""


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    unknown_tagged_fields: dict[int, bytes] = field(default_factory=dict, repr=False)


def frame(payload: bytes | bytearray) -> bytes:
    return _LEN.pack(len(payload)) + bytes(payload)


class FrameSplitter:
    """Turns an arbitrary chunking of a byte stream into whole frames (payloads without prefix)."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        while len(self._buf) >= 4:
            size = check_frame_size(bytes(self._buf[:4]), self.max_frame_bytes)
            if len(self._buf) < 4 + size:
                break
            frames.append(bytes(self._buf[4 : 4 + size]))
            del self._buf[: 4 + size]
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)


def check_frame_size(prefix: bytes | bytearray, max_frame_bytes: int) -> int:
    size = int(_LEN.unpack(prefix)[0])
    if size < 0:
        raise FrameError(f"negative frame length {size}")
    if size > max_frame_bytes:
        if prefix[0] == 0x16 and prefix[1] == 0x03:  # a TLS handshake record, read as a length
            raise FrameError(
                "a TLS client on this plaintext listener (its ClientHello read as a frame length): the client has"
                " security.protocol SSL or SASL_SSL, the listener has no gateway.listener_tls"
            )
        raise FrameError(f"frame of {size} bytes exceeds the {max_frame_bytes}-byte limit")
    return size


def peek_request(payload: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """api key, api version and correlation id: the fixed prefix of every request header."""
    if len(payload) < _PEEK.size:
        raise FrameError(f"request of {len(payload)} bytes is shorter than a header")
    key, version, correlation_id = _PEEK.unpack_from(payload, 0)
    return int(key), int(version), int(correlation_id)


def peek_correlation_id(payload: bytes | bytearray | memoryview) -> int:
    if len(payload) < 4:
        raise FrameError("response shorter than its correlation id")
    return int(_LEN.unpack_from(payload, 0)[0])


def decode_request_header(payload: bytes | bytearray | memoryview, header_version: int) -> tuple[RequestHeader, int]:
    """The header and the offset where the body starts."""
    buf = payload if isinstance(payload, memoryview) else memoryview(payload)
    key, version, correlation_id = peek_request(buf)
    header = RequestHeader(key, version, correlation_id)
    pos = _PEEK.size
    if header_version >= 1:
        if pos + 2 > len(buf):
            raise CodecError("truncated client id")
        n = int(_I16.unpack_from(buf, pos)[0])
        pos += 2
        if n >= 0:
            if pos + n > len(buf):
                raise CodecError("truncated client id")
            try:
                header.client_id = bytes(buf[pos : pos + n]).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CodecError("client id is not valid UTF-8") from exc
            pos += n
    if header_version >= 2:
        pos = _read_tags(buf, pos, header.unknown_tagged_fields)
    return header, pos


def encode_request_header(header: RequestHeader, header_version: int, out: bytearray) -> None:
    out += _PEEK.pack(header.api_key, header.api_version, header.correlation_id)
    if header_version >= 1:
        if header.client_id is None:
            out += _I16.pack(-1)
        else:
            raw = header.client_id.encode("utf-8")
            out += _I16.pack(len(raw)) + raw
    if header_version >= 2:
        _write_tags(out, header.unknown_tagged_fields)


def decode_response_header(payload: bytes | bytearray | memoryview, header_version: int) -> tuple[int, int]:
    """The correlation id and the offset where the body starts."""
    buf = payload if isinstance(payload, memoryview) else memoryview(payload)
    correlation_id = peek_correlation_id(buf)
    pos = 4
    if header_version >= 1:
        pos = _read_tags(buf, pos, {})
    return correlation_id, pos


def encode_response_header(correlation_id: int, header_version: int, out: bytearray) -> None:
    out += _LEN.pack(correlation_id)
    if header_version >= 1:
        write_uvarint(out, 0)


def _read_tags(buf: memoryview, pos: int, into: dict[int, bytes]) -> int:
    count, pos = read_tag_count(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if pos + size > len(buf):
            raise CodecError("truncated header tagged field")
        into[tag] = bytes(buf[pos : pos + size])
        pos += size
    return pos


def _write_tags(out: bytearray, tags: dict[int, bytes]) -> None:
    write_uvarint(out, len(tags))
    for tag in sorted(tags):
        write_uvarint(out, tag)
        write_uvarint(out, len(tags[tag]))
        out += tags[tag]


def produce_acks(payload: bytes | bytearray | memoryview, api_version: int) -> int:
    """The ``acks`` of a Produce request: 0 means the broker sends no response at all."""
    buf = payload if isinstance(payload, memoryview) else memoryview(payload)
    flexible = api_version >= 9
    _, pos = decode_request_header(buf, 2 if flexible else 1)
    if api_version >= 3:
        if flexible:
            n, pos = read_uvarint(buf, pos)
            pos += max(n - 1, 0)
        else:
            if pos + 2 > len(buf):
                raise CodecError("truncated transactional id")
            n = int(_I16.unpack_from(buf, pos)[0])
            pos += 2 + max(n, 0)
    if pos + 2 > len(buf):
        raise CodecError("truncated acks")
    return int(_I16.unpack_from(buf, pos)[0])
