"""Fuzzing the codec and a live gateway connection with hypothesis.

The default suite runs a short derandomized (seeded) slice; ``--run-slow`` runs a long one. The
properties: decoding arbitrary or mutated bytes either succeeds or raises ``CodecError`` (never
anything else); a live gateway fed arbitrary or mutated frames answers or closes that one
connection, the group handler never sees a request the codec refused, and another client keeps
being served throughout.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.gateway import GatewayConfig
from groupcoord.coordinator.gateway.apis import APIS, GROUP_API_KEYS
from groupcoord.coordinator.gateway.codec import CodecError, decode_struct
from groupcoord.coordinator.gateway.framing import FrameError, RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_request, encode_request
from groupcoord.local_broker import free_port
from tests.gateway.conftest import GatewayThread
from tests.gateway.samples import sample
from tests.gateway.test_server import ScriptedHandler, heartbeat

SPECS = sorted(APIS.values(), key=lambda s: s.key)
SEEDS: list[bytes] = []
for spec in SPECS:
    for version in range(spec.min_version, spec.max_version + 1):
        body = sample(spec.request, version, random.Random(spec.key * 100 + version))
        SEEDS.append(encode_request(RequestHeader(spec.key, version, 7, "fuzz"), body))

QUICK = settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def mutated_frame(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "byte", "insert", "delete", "truncate", "int"]))
        at = draw(st.integers(4, max(4, len(frame) - 1)))
        if kind == "flip" and at < len(frame):
            frame[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and at < len(frame):
            frame[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del frame[at : at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del frame[at:]
        elif kind == "int" and at + 4 <= len(frame):
            frame[at : at + 4] = struct.pack(">i", draw(st.sampled_from([-1, -2, 0, 0x7FFF, 0x8000, 2**31 - 1])))
    frame[0:4] = struct.pack(">i", len(frame) - 4)  # keep the length honest so the body is what is fuzzed
    return bytes(frame)


def _check_decode(payload: bytes) -> None:
    # FrameError: too short for a header (the connection checks that first and closes).
    with contextlib.suppress(CodecError, FrameError):
        decode_request(payload)


@QUICK
@given(mutated_frame())
def test_codec_refuses_mutations_cleanly(frame: bytes) -> None:
    _check_decode(frame[4:])


@QUICK
@given(st.sampled_from(SPECS), st.integers(0, 20), st.binary(max_size=300))
def test_codec_refuses_random_bodies_cleanly(spec: object, version: int, body: bytes) -> None:
    assert hasattr(spec, "request")
    for cls in (spec.request, spec.response):  # type: ignore[attr-defined]
        with contextlib.suppress(CodecError):
            decode_struct(cls, body, version, version in cls.FLEXIBLE)


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[GatewayThread, ScriptedHandler]]:
    handler = ScriptedHandler()
    config = GatewayConfig(
        bootstrap_servers=[f"127.0.0.1:{free_port()}"],  # nothing there: forwarded keys close
        listen_port=0,
        upstream_connect_timeout_s=0.5,
        request_read_timeout_ms=300,
        max_frame_bytes=1 << 20,
    )
    with GatewayThread(config, handler) as running:
        yield running, handler


def _exchange(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.settimeout(0.8)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except (TimeoutError, ConnectionError):
            pass


def _healthy(port: int) -> None:
    frame = encode_request(RequestHeader(12, 4, 99, "health"), heartbeat())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        assert len(s.recv(size, socket.MSG_WAITALL)) == size


def _group_requests_decode(handler: ScriptedHandler, before: int) -> None:
    # Every call that reached the handler was a request the codec accepted; nothing else.
    for key, _version, name in handler.calls[before:]:
        assert key in GROUP_API_KEYS and APIS[key].request.__name__ == name


def _fuzz_connection(live: tuple[GatewayThread, ScriptedHandler], data: bytes) -> None:
    running, handler = live
    before = len(handler.calls)
    _exchange(running.server.port, data)
    _group_requests_decode(handler, before)


@QUICK
@given(data=st.one_of(mutated_frame(), st.binary(max_size=200)))
def test_connection_survives_fuzzed_input(live: tuple[GatewayThread, ScriptedHandler], data: bytes) -> None:
    _fuzz_connection(live, data)
    _healthy(live[0].server.port)


@pytest.mark.slow
@LONG
@given(data=st.one_of(mutated_frame(), st.binary(max_size=2000), st.lists(mutated_frame(), max_size=5).map(b"".join)))
def test_connection_survives_fuzzed_input_long(live: tuple[GatewayThread, ScriptedHandler], data: bytes) -> None:
    _fuzz_connection(live, data)
    _healthy(live[0].server.port)


@pytest.mark.slow
@LONG
@given(mutated_frame())
def test_codec_refuses_mutations_cleanly_long(frame: bytes) -> None:
    _check_decode(frame[4:])


def test_many_fuzzed_connections_at_once(live: tuple[GatewayThread, ScriptedHandler]) -> None:
    rng = random.Random(20261123)
    cases = []
    for _ in range(60):
        frame = bytearray(rng.choice(SEEDS))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(4, len(frame)) if len(frame) > 4 else 4
            if at < len(frame):
                frame[at] = rng.randrange(256)
        cases.append(bytes(frame))
    threads = [threading.Thread(target=_exchange, args=(live[0].server.port, c)) for c in cases]
    for t in threads:
        t.start()
    _healthy(live[0].server.port)
    for t in threads:
        t.join(10)
    _healthy(live[0].server.port)
