"""Whole-message encode/decode: header plus body, for the APIs listed in ``apis``."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.coordinator.gateway.apis import APIS, ApiSpec
from groupcoord.coordinator.gateway.codec import CodecError, decode_struct, encode_struct
from groupcoord.coordinator.gateway.commit_columns import decode_offset_commit, encode_offset_commit_answer
from groupcoord.coordinator.gateway.framing import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    peek_request,
)
from groupcoord.coordinator.messages.schema import Message


class UnsupportedApi(CodecError):
    """An API key this codec has no schema for."""


class UnsupportedVersion(CodecError):
    """A known API at a version outside the supported range."""


@dataclass(slots=True)
class Request:
    header: RequestHeader
    body: Message


def spec_for(api_key: int, api_version: int) -> ApiSpec:
    spec = APIS.get(api_key)
    if spec is None:
        raise UnsupportedApi(f"unknown API key {api_key}")
    if not spec.supports(api_version):
        raise UnsupportedVersion(f"{spec.name} v{api_version} is outside v{spec.min_version}-v{spec.max_version}")
    return spec


def decode_request(payload: bytes | bytearray | memoryview) -> Request:
    """A request frame's payload (without the length prefix) -> header and typed body."""
    key, version, _ = peek_request(payload)
    spec = spec_for(key, version)
    header, pos = decode_request_header(payload, spec.request_header_version(version))
    data = memoryview(payload)[pos:]
    if key == _OFFSET_COMMIT:
        # Its partitions as columns (``commit_columns``); anything unusual is the codec's.
        commit = decode_offset_commit(data, version)
        if commit is not None:
            return Request(header, commit)
    body = decode_struct(spec.request, data, version, spec.flexible(version))
    return Request(header, body)


_OFFSET_COMMIT = 8


class RequestMemo:
    """``decode_request`` for one connection's steady heartbeats, which repeat the same bytes but
    for the correlation id: a frame equal to the last one decoded here in everything else gets
    that request's body again (and its header with the new correlation id), without decoding it
    (a third of the in-process cost of a steady ConsumerGroupHeartbeat answered at once). The
    body is shared between the requests: only for requests no handler changes (the heartbeats
    ``ClientConnection._answer_at_once`` is offered)."""

    __slots__ = ("_head", "_tail", "_request", "_routed")

    def __init__(self) -> None:
        self._head = self._tail = b""
        self._request: Request | None = None
        self._routed = False  # the gateway's routing took ``_request`` (``routed``)

    def decode(self, payload: bytes | bytearray) -> Request:
        # The header's fixed part: api key and version (4 bytes), correlation id (4); the rest
        # (client id, tagged fields, body) must match as it is.
        head, tail = bytes(payload[:4]), bytes(payload[8:])
        last = self._again(payload, head, tail)
        if last is not None:
            return last
        request = decode_request(payload)
        self._head, self._tail, self._request, self._routed = head, tail, request, False
        return request

    def routed(self, request: Request) -> None:
        """Routing decided to hand ``request`` (the last one decoded here) to the handler."""
        self._routed = self._request is not None and request.body is self._request.body

    def repeated(self, payload: bytes | bytearray) -> Request | None:
        """The request routing last took (``routed``) again, with the new correlation id, if
        ``payload`` repeats its frame; else None. The decision routing takes on a request depends
        on its bytes and on facts of the connection that stay as they are between two requests,
        but for its authentication, which the caller checks again."""
        if not self._routed:
            return None
        return self._again(payload, bytes(payload[:4]), bytes(payload[8:]))

    def repeats(self, payload: bytes | bytearray) -> bool:
        """``repeated`` would give a request (the frame routing took last, with another
        correlation id), without making it."""
        return self._routed and payload[8:] == self._tail and payload[:4] == self._head

    def _again(self, payload: bytes | bytearray, head: bytes, tail: bytes) -> Request | None:
        last = self._request
        if last is None or tail != self._tail or head != self._head:
            return None
        header = last.header
        correlation_id = int.from_bytes(payload[4:8], "big", signed=True)
        header = RequestHeader(
            header.api_key, header.api_version, correlation_id, header.client_id, header.unknown_tagged_fields
        )
        return Request(header, last.body)


# Field values a memoized answer may hold: immutable, so an equal answer encodes to equal bytes
# even when the handler hands out an object it changes later.
_SCALARS = frozenset({int, str, bool, type(None)})


class ResponseMemo:
    """``encode_response`` for one connection's steady heartbeat answers, which repeat the same
    answer but for the correlation id: an answer whose fields equal those of the last one encoded
    here (same API and version) gets that frame again with the new correlation id, without
    encoding it (~10 us of a steady ConsumerGroupHeartbeat's ~150 us of serve CPU, profiled; the
    comparison costs a few). Only answers made of scalar fields are kept (a heartbeat without an
    assignment): a nested struct could be changed in place between two answers."""

    __slots__ = ("_key", "_frame")

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._frame = b""

    def encode(self, api_key: int, api_version: int, correlation_id: int, body: Message) -> bytes:
        key = self._key_of(api_version, body)
        if key is not None and key == self._key:
            frame = self._frame
            return b"".join((frame[:4], correlation_id.to_bytes(4, "big", signed=True), frame[8:]))
        frame = encode_response(api_key, api_version, correlation_id, body)
        self._key, self._frame = key, frame
        return frame

    @staticmethod
    def _key_of(api_version: int, body: Message) -> tuple[object, ...] | None:
        if body.unknown_tagged_fields:
            return None
        cls = type(body)
        values = _fields_of(cls)(body)
        if not _SCALARS.issuperset(map(type, values)):
            return None
        return (cls, api_version, *values)


# Message class -> a getter of all its schema fields as one tuple (C-level: ``attrgetter``).
_GETTERS: dict[type, Callable[[Message], tuple[object, ...]]] = {}


def _fields_of(cls: type[Message]) -> Callable[[Message], tuple[object, ...]]:
    getter = _GETTERS.get(cls)
    if getter is None:
        names = [f.name for f in cls.SCHEMA]
        # attrgetter of one name gives the value itself, not a tuple of one.
        getter = operator.attrgetter(*names) if len(names) > 1 else (lambda m: tuple(getattr(m, n) for n in names))
        _GETTERS[cls] = getter
    return getter


def encode_request(header: RequestHeader, body: Message) -> bytes:
    """A full request frame, length prefix included."""
    spec = spec_for(header.api_key, header.api_version)
    if not isinstance(body, spec.request):
        raise CodecError(f"{type(body).__name__} is not a {spec.request.__name__}")
    out = bytearray(4)
    encode_request_header(header, spec.request_header_version(header.api_version), out)
    encode_struct(body, header.api_version, spec.flexible(header.api_version), out)
    out[0:4] = (len(out) - 4).to_bytes(4, "big")
    return bytes(out)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Message) -> bytes:
    """A full response frame, length prefix included."""
    spec = spec_for(api_key, api_version)
    if not isinstance(body, spec.response):
        raise CodecError(f"{type(body).__name__} is not a {spec.response.__name__}")
    out = bytearray(4)
    encode_response_header(correlation_id, spec.response_header_version(api_version), out)
    if api_key != _OFFSET_COMMIT or not encode_offset_commit_answer(body, api_version, out):
        encode_struct(body, api_version, spec.flexible(api_version), out)
    out[0:4] = (len(out) - 4).to_bytes(4, "big")
    return bytes(out)


def decode_response(api_key: int, api_version: int, payload: bytes | memoryview) -> tuple[int, Message]:
    """A response frame's payload -> correlation id and typed body."""
    spec = spec_for(api_key, api_version)
    correlation_id, pos = decode_response_header(payload, spec.response_header_version(api_version))
    body = decode_struct(spec.response, memoryview(payload)[pos:], api_version, spec.flexible(api_version))
    return correlation_id, body
