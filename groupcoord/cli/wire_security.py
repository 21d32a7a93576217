"""TLS and SASL for ``groupcoord.cli.wire``'s own connections, from the same librdkafka properties
the other commands take (``--command-config``): ``security.protocol`` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
``ssl.key.password``, ``ssl.endpoint.identification.algorithm``,
``enable.ssl.certificate.verification``, ``sasl.mechanism(s)`` (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512), ``sasl.username``, ``sasl.password``.

SASL is Kafka's framed exchange (SaslHandshake v1, then SaslAuthenticate v2 tokens), which is all
the sidecar's gateway follows; SCRAM is RFC 5802's client side (with RFC 7677's hashes).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
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

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
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
    if mechanism != "PLAIN" and mechanism not in _SCRAM_HASHES:
        raise AuthenticationError(f"sasl.mechanism={mechanism} is not supported here (PLAIN, SCRAM-SHA-256/512)")
    user, password = props.get("sasl.username", ""), props.get("sasl.password", "")
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

    if mechanism == "PLAIN":
        exchange(f"\x00{user}\x00{password}".encode())
    else:
        scram(exchange, _SCRAM_HASHES[mechanism], user, password)


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def scram(exchange: Exchange, hash_name: str, user: str, password: str) -> None:
    """RFC 5802's client: first message, proof, and the server's signature checked."""
    name = user.replace("=", "=3D").replace(",", "=2C")
    nonce = base64.b64encode(secrets.token_bytes(18)).decode()
    first_bare = f"n={name},r={nonce}"
    server_first = exchange(f"n,,{first_bare}".encode()).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    if not fields.get("r", "").startswith(nonce) or "s" not in fields or "i" not in fields:
        raise AuthenticationError("authentication failed: the server's SCRAM challenge is not valid")
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = _hmac(hash_name, salted, b"Client Key")
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = _hmac(hash_name, hashlib.new(hash_name, client_key).digest(), auth_message)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_final = exchange(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()
    expected = _hmac(hash_name, _hmac(hash_name, salted, b"Server Key"), auth_message)
    if not hmac.compare_digest(server_final.removeprefix("v=").encode(), base64.b64encode(expected)):
        raise AuthenticationError("authentication failed: the server's SCRAM signature does not match")
