"""Identity without SASL: TLS client certificates, and no borrowing of the sidecar's upstream certificate."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from groupcoord.coordinator.gateway import ConnectionContext, GatewayServer, TlsSettings
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, connect, heartbeat, run
from tests.gateway.wire_client import WireClient

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(directory: Path) -> dict[str, Path]:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate CN=alice."""
    p = {name: directory / f"{name}.pem" for name in ("ca", "ca-key", "server", "server-key", "alice", "alice-key")}
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", str(p["ca-key"]),
             "-out", str(p["ca"]), "-subj", "/CN=test-ca")  # fmt: skip
    for name, subject, ext in (
        ("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1"),
        ("alice", "/CN=alice/OU=tenants", "extendedKeyUsage=clientAuth"),
    ):
        csr = directory / f"{name}.csr"
        extfile = directory / f"{name}.ext"
        extfile.write_text(ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(p[f"{name}-key"]), "-out", str(csr),
                 "-subj", subject)  # fmt: skip
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(p["ca"]), "-CAkey", str(p["ca-key"]),
                 "-CAcreateserial", "-days", "1", "-out", str(p[name]), "-extfile", str(extfile))  # fmt: skip
    return p


class PrincipalHandler(ScriptedHandler):
    def __init__(self) -> None:
        super().__init__()
        self.principals: list[str | None] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.principals.append(context.principal)
        return await super().handle(context, request)


def test_client_certificate_authenticates_with_its_common_name(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    handler = PrincipalHandler()

    async def body(server: GatewayServer, _: ScriptedHandler) -> None:
        ctx = ssl.create_default_context(cafile=str(pki["ca"]))
        ctx.load_cert_chain(pki["alice"], pki["alice-key"])
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx)
        client = WireClient(reader, writer)
        assert await client.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await client.close()
        # Without a certificate the handshake itself fails, and nothing reaches the handler.
        bare = ssl.create_default_context(cafile=str(pki["ca"]))
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=bare)
            writer.write(b"\x00\x00\x00\x00")
            await writer.drain()
            await reader.readexactly(1)

    listener = TlsSettings(
        certfile=pki["server"], keyfile=pki["server-key"], cafile=pki["ca"], require_client_cert=True
    )
    run(body, handler, listener_tls=listener, authentication="required")
    assert handler.principals == ["alice"]


def test_unauthenticated_plaintext_client_is_refused_when_authentication_is_required() -> None:
    handler = PrincipalHandler()

    async def body(server: GatewayServer, _: ScriptedHandler) -> None:
        client = await connect(server)
        client.send(HEARTBEAT, 4, heartbeat())
        assert await client.closed_by_peer()
        await client.close()

    run(body, handler, authentication="required")
    assert handler.principals == []


@pytest.mark.parametrize("allowed", [False, True])
def test_forwarding_would_borrow_the_sidecars_certificate(
    allowed: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pki = make_pki(tmp_path)
    upstream = TlsSettings(cafile=pki["ca"], certfile=pki["alice"], keyfile=pki["alice-key"])

    async def body(server: GatewayServer, _: ScriptedHandler) -> None:
        client = await connect(server)
        client.send(3, 12, MetadataRequest(topics=None))
        # Either way the connection ends (the cluster port is closed here); why is what matters.
        assert await client.closed_by_peer(timeout=15)
        await client.close()
        # Group APIs do not touch the upstream connection and keep working.
        other = await connect(server)
        assert await other.call(HEARTBEAT, 4, heartbeat()) == HeartbeatResponse()
        await other.close()

    with caplog.at_level("WARNING", logger="groupcoord.coordinator.gateway"):
        run(body, upstream_tls=upstream, allow_shared_upstream_identity=allowed, upstream_connect_timeout_s=2)
    borrowed = [r for r in caplog.records if "sidecar's principal" in r.getMessage()]
    assert bool(borrowed) is not allowed
