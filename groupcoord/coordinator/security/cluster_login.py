"""The sidecar's own SASL login on the raw connections it opens to the cluster (the transaction
bridge's AddPartitionsToTxn, Produce and Fetch), with the credentials of its ``client`` settings,
the ones its librdkafka producers, consumers and admin clients use.

PLAIN and SCRAM-SHA-256/512 (RFC 5802, as Kafka's ScramSaslClient) are spoken here. GSSAPI and
OAUTHBEARER need a ticket or a token provider librdkafka has and this module has not: a cluster
that requires them is refused at start-up (``UnsupportedLogin``) rather than failing every
transactional commit later.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
LOGIN_MECHANISMS = frozenset({PLAIN, *SCRAM_HASHES})
_SASL_PROTOCOLS = frozenset({"sasl_plaintext", "sasl_ssl"})
_GS2_HEADER = "n,,"


class UnsupportedLogin(ValueError):
    """The ``client`` settings ask for a SASL login the sidecar's own connections cannot make."""


class LoginFailed(ConnectionError):
    """The cluster refused the login, or answered it in a way SASL does not allow."""


@dataclass(frozen=True)
class ClusterLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)

    @classmethod
    def from_client_config(cls, config: Mapping[str, str]) -> ClusterLogin | None:
        """The login the librdkafka settings ``config`` describe; None when they use no SASL."""
        protocol = str(config.get("security.protocol", "plaintext")).lower()
        if protocol not in _SASL_PROTOCOLS:
            return None
        # librdkafka's name is sasl.mechanisms (sasl.mechanism is its alias); its default is GSSAPI.
        mechanism = str(config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI"))).upper()
        if mechanism not in LOGIN_MECHANISMS:
            raise UnsupportedLogin(
                f"sasl.mechanism {mechanism} is not supported on the sidecar's own connections "
                f"(supported: {', '.join(sorted(LOGIN_MECHANISMS))})"
            )
        username, password = config.get("sasl.username"), config.get("sasl.password")
        if not username or password is None:
            raise UnsupportedLogin(f"{mechanism} needs sasl.username and sasl.password in the client settings")
        return cls(mechanism, str(username), str(password))

    def exchange(self) -> SaslExchange:
        if self.mechanism == PLAIN:
            return PlainExchange(self.username, self.password)
        return ScramExchange(self.mechanism, self.username, self.password)


class SaslExchange:
    """One login: ``first()`` is the client's first message; ``answer(challenge)`` the next one,
    or None when the exchange is over (then the last server message has been checked)."""

    def first(self) -> bytes:
        raise NotImplementedError

    def answer(self, challenge: bytes) -> bytes | None:
        raise NotImplementedError


class PlainExchange(SaslExchange):
    def __init__(self, username: str, password: str) -> None:
        self._message = f"\x00{username}\x00{password}".encode()

    def first(self) -> bytes:
        return self._message

    def answer(self, challenge: bytes) -> bytes | None:
        return None


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: bytes) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError as exc:
        raise LoginFailed("SCRAM server message is not UTF-8") from exc
    out: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise LoginFailed(f"malformed SCRAM server message: {text!r}")
        out.setdefault(part[0], part[2:])
    return out


class ScramExchange(SaslExchange):
    """RFC 5802 client (no channel binding), as Kafka's ScramSaslClient."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        self._hash = SCRAM_HASHES[mechanism]
        self._password = password.encode()
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._bare = f"n={_saslname(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

    def first(self) -> bytes:
        return (_GS2_HEADER + self._bare).encode()

    def answer(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final(challenge)
        self._verify(challenge)
        return None

    def _final(self, server_first: bytes) -> bytes:
        attrs = _attributes(server_first)
        if "e" in attrs:
            raise LoginFailed(f"SCRAM refused: {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce) or salt is None:
            raise LoginFailed("SCRAM server-first message with a foreign nonce or no salt")
        if not iterations.isdigit() or int(iterations) < 1:
            raise LoginFailed(f"SCRAM iteration count {iterations!r}")
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, base64.b64decode(salt), int(iterations))
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c={base64.b64encode(_GS2_HEADER.encode()).decode()},r={nonce}"
        auth_message = f"{self._bare},{server_first.decode()},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: bytes) -> None:
        attrs = _attributes(server_final)
        if "e" in attrs:
            raise LoginFailed(f"SCRAM refused: {attrs['e']}")
        assert self._server_signature is not None
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), self._server_signature):
            raise LoginFailed("SCRAM server signature does not match: not the cluster we know")
