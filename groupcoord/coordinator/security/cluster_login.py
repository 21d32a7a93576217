"""The sidecar's own SASL login on the raw connections it opens to the cluster (the transaction
bridge's AddPartitionsToTxn, Produce and Fetch; the share data path's reads), with the credentials
of its ``client`` settings, the ones its librdkafka producers, consumers and admin clients use.

PLAIN, SCRAM-SHA-256/512 (RFC 5802, by scramp, as the CLI's own connections) and OAUTHBEARER
(RFC 7628, the token taken as librdkafka takes it: ``security/oauthbearer.py``) are spoken here.
GSSAPI needs a Kerberos ticket this module cannot get (``UnsupportedLogin``): ``serve`` then warns
and leaves TxnOffsetCommit and share reads unserved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from scramp import ScramClient, ScramException

from groupcoord.coordinator.security.oauthbearer import (
    OAUTHBEARER,
    BearerToken,
    BearerTokens,
    TokenConfigError,
    TokenUnavailable,
    client_response,
    token_source,
)

PLAIN = "PLAIN"
LOGIN_MECHANISMS = frozenset({PLAIN, OAUTHBEARER, "SCRAM-SHA-256", "SCRAM-SHA-512"})
_SASL_PROTOCOLS = frozenset({"sasl_plaintext", "sasl_ssl"})


class UnsupportedLogin(ValueError):
    """The ``client`` settings ask for a SASL login the sidecar's own connections cannot make."""


class LoginFailed(ConnectionError):
    """The cluster refused the login, or answered it in a way SASL does not allow."""


@dataclass(frozen=True)
class ClusterLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)
    # OAUTHBEARER's token source (shared by every connection of the process); None otherwise.
    tokens: BearerTokens | None = field(default=None, repr=False, compare=False)

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
        if mechanism == OAUTHBEARER:
            try:
                return cls(mechanism, "", "", BearerTokens(token_source(config)))
            except TokenConfigError as exc:
                raise UnsupportedLogin(str(exc)) from exc
        username, password = config.get("sasl.username"), config.get("sasl.password")
        if not username or password is None:
            raise UnsupportedLogin(f"{mechanism} needs sasl.username and sasl.password in the client settings")
        return cls(mechanism, str(username), str(password))

    async def begin(self) -> SaslExchange:
        """A new exchange; for OAUTHBEARER with the current token, fetched on a worker thread
        when it is due (a token endpoint is slow next to the event loop)."""
        if self.tokens is None:
            return self.exchange()
        return await asyncio.to_thread(self.exchange)

    def exchange(self) -> SaslExchange:
        """A new exchange; for OAUTHBEARER this may fetch a token, blocking (``begin`` on a loop)."""
        if self.tokens is not None:
            try:
                return OAuthBearerExchange(self.tokens.current())
            except TokenUnavailable as exc:
                raise LoginFailed(f"no OAUTHBEARER token: {exc}") from exc
        if self.mechanism == PLAIN:
            return PlainExchange(self.username, self.password)
        return ScramExchange(self.mechanism, self.username, self.password)


class SaslExchange(Protocol):
    """One login: ``first()`` is the client's first message; ``answer(challenge)`` the next one,
    or None when the exchange is over (then the last server message has been checked)."""

    def first(self) -> bytes: ...

    def answer(self, challenge: bytes) -> bytes | None: ...


class PlainExchange:
    def __init__(self, username: str, password: str) -> None:
        self._message = f"\x00{username}\x00{password}".encode()

    def first(self) -> bytes:
        return self._message

    def answer(self, challenge: bytes) -> bytes | None:
        return None


class ScramExchange:
    """RFC 5802's client side (no channel binding, as Kafka) through scramp, the implementation the
    CLI's own connections use too: the proof is sent and the server's signature checked."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._client = ScramClient([mechanism], username, password)
        self._sent_final = False

    def first(self) -> bytes:
        return self._client.get_client_first().encode()

    def answer(self, challenge: bytes) -> bytes | None:
        try:
            if not self._sent_final:
                self._client.set_server_first(challenge.decode())
                self._sent_final = True
                return self._client.get_client_final().encode()
            self._client.set_server_final(challenge.decode())
        except (ScramException, UnicodeDecodeError) as exc:
            raise LoginFailed(f"SCRAM: {exc}") from exc
        return None


class OAuthBearerExchange:
    """RFC 7628's client side: the token in the first message; an empty answer is success. A
    refusal comes as a JSON error with no error code, answered with a lone kvsep (``\\x01``), after
    which the server fails the exchange (Kafka's OAuthBearerSaslServer)."""

    def __init__(self, token: BearerToken) -> None:
        self.token = token
        self._refusal: bytes | None = None

    def first(self) -> bytes:
        return client_response(self.token)

    def answer(self, challenge: bytes) -> bytes | None:
        if self._refusal is not None:
            raise LoginFailed(f"token refused: {self._refusal.decode('utf-8', 'replace')}")
        if not challenge:
            return None
        self._refusal = challenge[:1000]
        return b"\x01"
