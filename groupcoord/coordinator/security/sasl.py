"""What the gateway learns from a SASL exchange it relays: the mechanism, the principal, the outcome.

The cluster does the verifying; the gateway only watches the exchange on the client's own upstream
connection. The principal comes from the client's first message (the identity the cluster then
verified): PLAIN's authcid, SCRAM's ``n=`` user name, OAUTHBEARER's ``sub`` claim (the token is
parsed, not verified: the cluster verified it). Authentication counts only once the cluster has
answered the exchange's last step with error 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.security.oauthbearer import OAUTHBEARER, jwt_claims

PLAIN = "PLAIN"
SCRAM_MECHANISMS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
SUPPORTED_MECHANISMS = frozenset({PLAIN, OAUTHBEARER, *SCRAM_MECHANISMS})


class SaslRefused(ValueError):
    """The exchange cannot be followed (unknown mechanism, malformed message, changed principal)."""


def principal_from_first_message(mechanism: str, message: bytes) -> str:
    """The user name the client's first SASL message claims, for a supported mechanism."""
    if mechanism == PLAIN:
        return _plain_user(message)
    if mechanism in SCRAM_MECHANISMS:
        return _scram_user(message)
    if mechanism == OAUTHBEARER:
        return _oauthbearer_subject(message)
    raise SaslRefused(f"SASL mechanism {mechanism!r} is not one the gateway can follow")


def _text(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SaslRefused("SASL message is not UTF-8") from exc


def _plain_user(message: bytes) -> str:
    # RFC 4616: [authzid] NUL authcid NUL passwd. Kafka requires authzid empty or equal to authcid.
    parts = _text(message).split("\x00")
    if len(parts) != 3 or not parts[1]:
        raise SaslRefused("malformed PLAIN message")
    authzid, authcid, _ = parts
    if authzid and authzid != authcid:
        raise SaslRefused("PLAIN authorization id differs from the authentication id")
    return authcid


def _scram_user(message: bytes) -> str:
    # RFC 5802 client-first-message: gs2-header "n,," / "y,," / "n,a=authzid," then "n=user,r=nonce".
    text = _text(message)
    parts = text.split(",")
    if len(parts) < 4 or parts[0] not in ("n", "y") or not parts[2].startswith("n="):
        raise SaslRefused("malformed SCRAM client-first message")
    user = _scram_unescape(parts[2][2:])
    authzid = parts[1]
    if authzid and (not authzid.startswith("a=") or _scram_unescape(authzid[2:]) != user):
        raise SaslRefused("SCRAM authorization id differs from the user name")
    if not user:
        raise SaslRefused("empty SCRAM user name")
    return user


def _scram_unescape(value: str) -> str:
    return value.replace("=2C", ",").replace("=3D", "=")


def _oauthbearer_subject(message: bytes) -> str:
    # RFC 7628: gs2-header, then \x01-separated key=value pairs, one of them "auth=Bearer <token>".
    text = _text(message)
    token = None
    for part in text.split("\x01"):
        if part.startswith("auth="):
            scheme, _, value = part[5:].partition(" ")
            if scheme.lower() == "bearer":
                token = value.strip()
    if not token:
        raise SaslRefused("OAUTHBEARER message has no bearer token")
    claims = jwt_claims(token)
    if claims is None:
        raise SaslRefused("OAUTHBEARER token is not a JWT with base64url JSON claims")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SaslRefused("OAUTHBEARER token has no sub claim")
    return subject


@dataclass(slots=True)
class _Exchange:
    mechanism: str
    step: int = 0
    claimed: str | None = None


class SaslSession:
    """One client connection's authentication state, as seen from the relayed SASL messages.

    Calls mirror the wire: ``handshake`` when the cluster accepted a SaslHandshake, then for each
    SaslAuthenticate ``client_message`` before relaying it and ``server_message`` with the
    cluster's answer. ``clock`` is injectable so session expiry is testable.
    """

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self.principal: str | None = None
        self.mechanism: str | None = None
        self.expires_at: float | None = None
        self.sasl_used = False
        self._exchange: _Exchange | None = None

    def now(self) -> float:
        clock = self._clock
        assert callable(clock)
        return float(clock())

    @property
    def authenticated(self) -> bool:
        if self.principal is None:
            return False
        return self.expires_at is None or self.now() < self.expires_at

    @property
    def in_progress(self) -> bool:
        return self._exchange is not None

    def authenticate_externally(self, principal: str) -> None:
        """An identity established outside SASL (a verified TLS client certificate)."""
        self.principal = principal
        self.mechanism = "SSL"

    def handshake(self, mechanism: str, error_code: int) -> None:
        if error_code != ErrorCode.NONE:
            return
        if mechanism not in SUPPORTED_MECHANISMS:
            raise SaslRefused(f"SASL mechanism {mechanism!r} is not one the gateway can follow")
        self._exchange = _Exchange(mechanism)

    def client_message(self, auth_bytes: bytes) -> None:
        exchange = self._exchange
        if exchange is None:
            raise SaslRefused("SaslAuthenticate without a SaslHandshake")
        if exchange.step == 0:
            exchange.claimed = principal_from_first_message(exchange.mechanism, auth_bytes)
        exchange.step += 1

    def server_message(self, error_code: int, auth_bytes: bytes, session_lifetime_ms: int) -> None:
        exchange = self._exchange
        if exchange is None:
            return
        if error_code != ErrorCode.NONE:
            self._exchange = None
            return
        if not self._complete(exchange, auth_bytes):
            return
        self._exchange = None
        assert exchange.claimed is not None
        if self.principal is not None and self.principal != exchange.claimed and self.sasl_used:
            # Kafka refuses a re-authentication that changes the principal (KIP-368).
            self.principal = None
            raise SaslRefused("re-authentication changed the principal")
        self.principal = exchange.claimed
        self.mechanism = exchange.mechanism
        self.sasl_used = True
        self.expires_at = self.now() + session_lifetime_ms / 1000 if session_lifetime_ms > 0 else None

    @staticmethod
    def _complete(exchange: _Exchange, server_bytes: bytes) -> bool:
        if exchange.mechanism in SCRAM_MECHANISMS:
            # server-first (step 1) carries the nonce; server-final "v=<signature>" ends it.
            return exchange.step >= 2 and server_bytes.startswith(b"v=")
        if exchange.mechanism == OAUTHBEARER:
            # RFC 7628: success is an empty server message. A refused token is answered with a
            # JSON error and error 0 (Kafka's OAuthBearerSaslServer), the failure coming only
            # after the client's kvsep: that answer authenticates no one.
            return exchange.step == 1 and not server_bytes
        # PLAIN: the cluster's first answer with error 0 is the verdict.
        return exchange.step == 1
