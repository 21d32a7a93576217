"""TLS and SASL for ``groupcoord.cli.wire``'s own connections, from the same librdkafka properties
the other commands take (``--command-config``): ``security.protocol`` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
``ssl.key.password``, ``ssl.endpoint.identification.algorithm``,
``enable.ssl.certificate.verification``, ``sasl.mechanism(s)`` (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, OAUTHBEARER), ``sasl.username``, ``sasl.password``, and for OAUTHBEARER
librdkafka's ``sasl.oauthbearer.*`` (``security/oauthbearer.py``).

SASL is Kafka's framed exchange (SaslHandshake v1, then SaslAuthenticate v2 tokens), which is all
the sidecar's gateway follows; the exchanges are the sidecar's own login exchanges (``cluster_login``).
"""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Callable

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_response_header, encode_request_header
from groupcoord.coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.cluster_login import (
    LOGIN_MECHANISMS,
    OAUTHBEARER,
    ClusterLogin,
    LoginFailed,
    SaslExchange,
    ScramExchange,
    UnsupportedLogin,
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


class AuthenticationError(Exception):
    """The settings are unusable, or the server refused the login (the message says which)."""


def protocol_of(props: dict[str, str]) -> str:
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise AuthenticationError(f"security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}")
    return protocol


def tls_context(props: dict[str, str]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=props.get("ssl.ca.location"))
    if props.get("ssl.endpoint.identification.algorithm", "https").lower() == "none":
        context.check_hostname = False
    if props.get("enable.ssl.certificate.verification", "true").lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    certificate = props.get("ssl.certificate.location")
    if certificate:
        context.load_cert_chain(certificate, props.get("ssl.key.location"), props.get("ssl.key.password"))
    return context


Exchange = Callable[[bytes], bytes]


def sasl_login(sock: socket.socket, props: dict[str, str], read_exactly: Callable[[int], bytes]) -> None:
    """Authenticate ``sock`` with the mechanism the properties name, or raise AuthenticationError."""
    mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "GSSAPI")).upper()
    if mechanism not in LOGIN_MECHANISMS:
        raise AuthenticationError(
            f"sasl.mechanism={mechanism} is not supported here (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER)"
        )
    # The sidecar's own login (cluster_login) makes every mechanism's exchange; for PLAIN and SCRAM
    # missing credentials go to the server as empty ones, which refuses them in its own words.
    login = ClusterLogin(mechanism, props.get("sasl.username", ""), props.get("sasl.password", ""))
    if mechanism == OAUTHBEARER:
        try:
            login = ClusterLogin.from_client_config({**props, "security.protocol": "SASL_PLAINTEXT"}) or login
        except UnsupportedLogin as exc:
            raise AuthenticationError(str(exc)) from exc
    ids = iter(range(1, 1 << 30))

    def call(key: int, version: int, body: Message, answer: type[Message]) -> Message:
        flexible = version in type(body).FLEXIBLE
        out = bytearray()
        encode_request_header(RequestHeader(key, version, next(ids), "groupcoord-cli"), 2 if flexible else 1, out)
        encode_struct(body, version, flexible, out)
        sock.sendall(struct.pack(">i", len(out)) + bytes(out))
        (size,) = struct.unpack(">i", read_exactly(4))
        payload = read_exactly(size)
        _, pos = decode_response_header(payload, 1 if flexible else 0)
        return decode_struct(answer, memoryview(payload)[pos:], version, flexible)

    handshake = call(_SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse)
    assert isinstance(handshake, SaslHandshakeResponse)
    if handshake.error_code:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise AuthenticationError(f"the server does not take SASL mechanism {mechanism} (it takes {offered})")

    def exchange(token: bytes) -> bytes:
        answer = call(_SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse)
        assert isinstance(answer, SaslAuthenticateResponse)
        if answer.error_code:
            raise AuthenticationError(f"authentication failed: {answer.error_message or f'error {answer.error_code}'}")
        return answer.auth_bytes

    try:
        first = login.exchange()
    except LoginFailed as exc:  # OAUTHBEARER: no token to send
        raise AuthenticationError(f"authentication failed: {exc}") from exc
    run_exchange(first, exchange)


def scram(exchange: Exchange, mechanism: str, user: str, password: str) -> None:
    """RFC 5802's client side, as the sidecar's own cluster connections speak it."""
    run_exchange(ScramExchange(mechanism, user, password), exchange)


def run_exchange(login: SaslExchange, exchange: Exchange) -> None:
    """Send the login's messages until it has none left, each server answer checked by it."""
    try:
        token: bytes | None = login.first()
        while token is not None:
            token = login.answer(exchange(token))
    except LoginFailed as exc:
        raise AuthenticationError(f"authentication failed: {exc}") from exc
