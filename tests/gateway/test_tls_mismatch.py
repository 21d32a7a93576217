"""A TLS client on a plaintext listener is told apart from an oversized frame: one log line says so."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import pytest

from groupcoord.coordinator.gateway import GatewayServer
from groupcoord.coordinator.gateway.framing import FrameError, check_frame_size
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, connect, heartbeat, run


def test_a_client_hello_is_named() -> None:
    # TLS record: handshake (0x16), version 3.x, then its length; as a Kafka length ~370 MB.
    with pytest.raises(FrameError, match="a TLS client on this plaintext listener"):
        check_frame_size(bytes([0x16, 0x03, 0x01, 0x02]), 100 * 1024 * 1024)
    with pytest.raises(FrameError, match="exceeds the 1000-byte limit"):
        check_frame_size((5000).to_bytes(4, "big"), 1000)


def test_tls_client_on_a_plaintext_listener_is_one_clear_line(caplog: pytest.LogCaptureFixture) -> None:
    async def body(server: GatewayServer, handler: ScriptedHandler) -> None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            _, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", server.port, ssl=context), timeout=10
            )
            writer.close()
        good = await connect(server)  # the listener goes on serving
        assert await good.call(HEARTBEAT, 3, heartbeat()) is not None
        await good.close()

    with caplog.at_level("WARNING", logger="groupcoord.coordinator.gateway"):
        run(body)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(lines) == 1 and "a TLS client on this plaintext listener" in lines[0], lines
