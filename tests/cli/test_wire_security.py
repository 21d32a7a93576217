"""The CLI's own connections (``groupcoord.cli.wire``) over TLS with a client certificate, as the
librdkafka properties say, and the SCRAM client against an independent server (scramp). SASL end to
end is in tests/security/test_share_groups_cli_sasl.py."""

from __future__ import annotations

import asyncio
import shutil
import ssl
from pathlib import Path
from typing import Any

import pytest
from scramp import ScramMechanism

from groupcoord.cli.wire import WireClient
from groupcoord.cli.wire_security import AuthenticationError, protocol_of, scram
from groupcoord.coordinator.gateway import GatewayServer, TlsSettings
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from tests.gateway.test_server import HEARTBEAT, ScriptedHandler, heartbeat, run
from tests.security.test_identity import PrincipalHandler, make_pki


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_with_a_client_certificate(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    handler = PrincipalHandler()
    props = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki["ca"]),
        "ssl.certificate.location": str(pki["alice"]),
        "ssl.key.location": str(pki["alice-key"]),
    }

    def call(port: int, settings: dict[str, str]) -> object:
        with WireClient(f"127.0.0.1:{port}", 5, settings) as client:
            return client.call(HEARTBEAT, 4, heartbeat())

    async def body(server: GatewayServer, _: ScriptedHandler) -> None:
        assert await asyncio.to_thread(call, server.port, props) == HeartbeatResponse()
        # A server the CA did not sign is refused by the client (ssl.SSLError is an OSError).
        with pytest.raises(ssl.SSLError):
            await asyncio.to_thread(call, server.port, {**props, "ssl.ca.location": str(pki["alice"])})

    listener = TlsSettings(
        certfile=pki["server"], keyfile=pki["server-key"], cafile=pki["ca"], require_client_cert=True
    )
    run(body, handler, listener_tls=listener, authentication="required")
    assert handler.principals == ["alice"]


def _server(password: str) -> Any:
    mechanism = ScramMechanism("SCRAM-SHA-256")
    info = mechanism.make_auth_info(password)
    return mechanism.make_server(lambda user: info)


def test_scram_client_against_an_independent_server() -> None:
    server = _server("pencil")
    steps = iter(("first", "final"))

    def exchange(token: bytes) -> bytes:
        if next(steps) == "first":
            server.set_client_first(token.decode())
            return str(server.get_server_first()).encode()
        server.set_client_final(token.decode())
        return str(server.get_server_final()).encode()

    scram(exchange, "SCRAM-SHA-256", "user,=odd", "pencil")


def test_a_forged_server_signature_is_refused() -> None:
    server = _server("pencil")

    def exchange(token: bytes) -> bytes:
        if token.startswith(b"n,,"):
            server.set_client_first(token.decode())
            return str(server.get_server_first()).encode()
        server.set_client_final(token.decode())
        return b"v=" + b"A" * 44  # not the server's proof of the password

    with pytest.raises(AuthenticationError, match="authentication failed"):
        scram(exchange, "SCRAM-SHA-256", "user", "pencil")


def test_unknown_protocols_are_named() -> None:
    assert protocol_of({}) == "PLAINTEXT"
    assert protocol_of({"security.protocol": "sasl_ssl"}) == "SASL_SSL"
    with pytest.raises(AuthenticationError, match="security.protocol=KERBEROS"):
        protocol_of({"security.protocol": "kerberos"})
