"""OAUTHBEARER tokens for the sidecar's own connections, taken from its ``client`` settings the way
librdkafka takes them, so an operator configures the login once for both.

Two of librdkafka's token sources are followed (``sasl.oauthbearer.method``):

- ``default`` with ``enable.sasl.oauthbearer.unsecure.jwt=true``: an unsecured JWT (RFC 7515
  header ``{"alg":"none"}``, no signature) built from ``sasl.oauthbearer.config``, space-separated
  ``principal=``, ``principalClaimName=``, ``scope=`` (comma-separated), ``scopeClaimName=``,
  ``lifeSeconds=`` (default 3600) and ``extension_NAME=value``; claims principal, ``iat``, ``exp``
  and the scope list, as librdkafka builds them. Without the unsecured JWT, librdkafka calls an
  application callback, which a settings file cannot name: ``UnsupportedLogin``.
- ``oidc``: the OAuth 2.0 client-credentials grant (RFC 6749 4.4) against
  ``sasl.oauthbearer.token.endpoint.url``, with ``sasl.oauthbearer.client.id``/``client.secret``
  as HTTP Basic credentials, ``sasl.oauthbearer.scope`` and ``sasl.oauthbearer.extensions``
  (comma-separated ``key=value``). The token is kept until shortly before it expires.

The SASL message is RFC 7628's client response: ``n,,\\x01auth=Bearer <token>\\x01`` then each
extension as ``key=value\\x01`` and a closing ``\\x01``. A server that refuses the token answers
with a JSON error and no error code; the client then sends a lone ``\\x01`` and the server fails
the exchange (``OAuthBearerExchange``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

OAUTHBEARER = "OAUTHBEARER"
# A token is replaced once this share of its life has passed, as librdkafka refreshes it.
_REFRESH_AT = 0.8
_DEFAULT_LIFE_S = 3600
_HTTP_TIMEOUT_S = 10.0
_HTTP_ATTEMPTS = 3
# A token endpoint's answer is a small JSON document; anything larger is refused unread.
_MAX_TOKEN_RESPONSE = 1 << 20
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
# RFC 7628 3.1: value = *(VCHAR / SP / HTAB / CR / LF)
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")


class TokenConfigError(ValueError):
    """The ``sasl.oauthbearer.*`` settings describe no token this module can obtain."""


class TokenUnavailable(ConnectionError):
    """The token endpoint could not be reached or answered without a usable token."""


@dataclass(frozen=True)
class BearerToken:
    value: str = field(repr=False)
    expires_at: float  # wall-clock seconds
    principal: str
    extensions: tuple[tuple[str, str], ...] = ()
    issued_at: float = 0.0

    @property
    def refresh_at(self) -> float:
        return self.issued_at + (self.expires_at - self.issued_at) * _REFRESH_AT


def client_response(token: BearerToken) -> bytes:
    """RFC 7628's initial client response (GS2 header without authzid)."""
    pairs = "".join(f"{key}={value}\x01" for key, value in token.extensions)
    return f"n,,\x01auth=Bearer {token.value}\x01{pairs}\x01".encode()


def jwt_claims(token: str) -> dict[str, Any] | None:
    """The claims of a JWT (its second, base64url part), unverified; None when it is not one."""
    pieces = token.split(".")
    if len(pieces) < 2:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(pieces[1] + "=" * (-len(pieces[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def _b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()


def _checked_extensions(pairs: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    for key, value in pairs:
        # librdkafka's rules: the key is letters only and not "auth" (the token's own key).
        if not _EXTENSION_KEY.fullmatch(key) or key == "auth":
            raise TokenConfigError(f"OAUTHBEARER extension key {key!r} must be letters only and not 'auth'")
        if not _EXTENSION_VALUE.fullmatch(value):
            raise TokenConfigError(f"OAUTHBEARER extension {key} has a character RFC 7628 does not allow")
    return tuple(pairs)


@dataclass(frozen=True)
class UnsecuredJwt:
    """librdkafka's ``sasl.oauthbearer.config`` for its unsecured JWT."""

    principal: str
    principal_claim: str = "sub"
    scope: tuple[str, ...] = ()
    scope_claim: str = "scope"
    life_seconds: int = _DEFAULT_LIFE_S
    extensions: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> UnsecuredJwt:
        named: dict[str, str] = {}
        extensions: list[tuple[str, str]] = []
        for item in text.split(" "):
            if not item:
                continue
            key, eq, value = item.partition("=")
            if key.startswith("extension_"):
                extensions.append((key[len("extension_") :], value))
                continue
            if not eq or key not in ("principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds"):
                raise TokenConfigError(f"unrecognized sasl.oauthbearer.config beginning at: {item}")
            if key in named:
                raise TokenConfigError(f"sasl.oauthbearer.config: multiple '{key}=' entries")
            if not value:
                raise TokenConfigError(f"sasl.oauthbearer.config: empty '{key}='")
            named[key] = value
        if "principal" not in named:
            raise TokenConfigError("sasl.oauthbearer.config: no principal=<value>")
        life = named.get("lifeSeconds", str(_DEFAULT_LIFE_S))
        if not life.isdigit() or not 0 < int(life) <= 2**31 - 1:
            raise TokenConfigError(f"sasl.oauthbearer.config: lifeSeconds must be a positive integer: {life}")
        # Duplicates dropped, order kept, empty items (",,") skipped, as librdkafka does.
        scope = tuple(dict.fromkeys(s for s in named.get("scope", "").split(",") if s))
        return cls(
            principal=named["principal"],
            principal_claim=named.get("principalClaimName", "sub"),
            scope=scope,
            scope_claim=named.get("scopeClaimName", "scope"),
            life_seconds=int(life),
            extensions=_checked_extensions(extensions),
        )

    def token(self, now: float) -> BearerToken:
        # Seconds with millisecond precision, as librdkafka writes iat and exp.
        issued = round(now, 3)
        claims: dict[str, Any] = {self.principal_claim: self.principal, "iat": issued}
        claims["exp"] = round(issued + self.life_seconds, 3)
        if self.scope:
            claims[self.scope_claim] = list(self.scope)
        value = f"{_b64url({'alg': 'none'})}.{_b64url(claims)}."
        return BearerToken(value, issued + self.life_seconds, self.principal, self.extensions, issued)


def _parse_extensions(text: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq:
            raise TokenConfigError(f"sasl.oauthbearer.extensions: {item!r} is not key=value")
        pairs.append((key.strip(), value))
    return _checked_extensions(pairs)


@dataclass(frozen=True)
class ClientCredentials:
    """The OAuth 2.0 client-credentials grant against a token endpoint (librdkafka's ``oidc``)."""

    endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str = ""
    extensions: tuple[tuple[str, str], ...] = ()
    subject_claim: str = "sub"
    timeout_s: float = _HTTP_TIMEOUT_S

    def request(self) -> urllib.request.Request:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        return urllib.request.Request(
            self.endpoint,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Accept": "application/json",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            method="POST",
        )

    def token(self, now: float) -> BearerToken:
        """A fresh token from the endpoint (blocking: called on a worker thread)."""
        body = _post_with_retries(self)
        try:
            answer = json.loads(body)
        except ValueError as exc:
            raise TokenUnavailable(f"token endpoint {self.endpoint}: the answer is not JSON") from exc
        value = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(value, str) or not value:
            raise TokenUnavailable(f"token endpoint {self.endpoint}: the answer has no access_token")
        claims = jwt_claims(value) or {}
        # The earliest of the answer's expires_in and the JWT's own exp claim.
        candidates = [float(x) for x in (claims.get("exp"),) if isinstance(x, int | float)]
        expires_in = answer.get("expires_in")
        if isinstance(expires_in, int | float) and expires_in > 0:
            candidates.append(now + float(expires_in))
        if not candidates:
            raise TokenUnavailable(f"token endpoint {self.endpoint}: the token has neither expires_in nor exp")
        principal = claims.get(self.subject_claim)
        return BearerToken(
            value, min(candidates), str(principal) if principal else self.client_id, self.extensions, now
        )


class _Retryable(Exception):
    pass


def _post_with_retries(grant: ClientCredentials) -> bytes:
    @retry(
        retry=retry_if_exception_type(_Retryable),
        stop=stop_after_attempt(_HTTP_ATTEMPTS),
        wait=wait_exponential(multiplier=0.5, max=4),
        reraise=True,
    )
    def attempt() -> bytes:
        try:
            with urllib.request.urlopen(grant.request(), timeout=grant.timeout_s) as answer:  # noqa: S310
                body: bytes = answer.read(_MAX_TOKEN_RESPONSE + 1)
        except urllib.error.HTTPError as exc:
            detail = f"token endpoint {grant.endpoint}: HTTP {exc.code} {exc.reason}"
            # A refusal of the credentials will not change on retry; a server error may.
            if exc.code >= 500 or exc.code == 429:
                raise _Retryable(detail) from exc
            raise TokenUnavailable(detail) from exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise _Retryable(f"token endpoint {grant.endpoint}: {getattr(exc, 'reason', exc)}") from exc
        if len(body) > _MAX_TOKEN_RESPONSE:
            raise TokenUnavailable(f"token endpoint {grant.endpoint}: answer larger than {_MAX_TOKEN_RESPONSE} bytes")
        return body

    try:
        return attempt()
    except _Retryable as exc:
        raise TokenUnavailable(str(exc)) from exc


class TokenSource(Protocol):
    def token(self, now: float) -> BearerToken: ...


class BearerTokens:
    """The current token of one source, replaced once most of its life has passed; shared by every
    connection of the process (thread-safe: fetched on worker threads)."""

    def __init__(self, source: TokenSource, clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self._clock = clock
        self._lock = threading.Lock()
        self._current: BearerToken | None = None

    def current(self) -> BearerToken:
        with self._lock:
            now = self._clock()
            if self._current is None or now >= self._current.refresh_at:
                self._current = self.source.token(now)
            return self._current


def token_source(config: Mapping[str, str]) -> TokenSource:
    """The token source librdkafka would use for these ``client`` settings."""
    method = str(config.get("sasl.oauthbearer.method", "default")).lower()
    if method == "oidc":
        grant = str(config.get("sasl.oauthbearer.grant.type", "client_credentials"))
        if grant != "client_credentials":
            raise TokenConfigError(f"sasl.oauthbearer.grant.type {grant} is not supported (client_credentials is)")
        endpoint = config.get("sasl.oauthbearer.token.endpoint.url")
        client_id = config.get("sasl.oauthbearer.client.id")
        secret = config.get("sasl.oauthbearer.client.secret")
        if not endpoint or not client_id or secret is None:
            raise TokenConfigError(
                "sasl.oauthbearer.method=oidc needs sasl.oauthbearer.token.endpoint.url, "
                "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
            )
        return ClientCredentials(
            str(endpoint),
            str(client_id),
            str(secret),
            str(config.get("sasl.oauthbearer.scope", "")),
            _parse_extensions(str(config.get("sasl.oauthbearer.extensions", ""))),
            str(config.get("sasl.oauthbearer.sub.claim.name", "sub")),
        )
    if method != "default":
        raise TokenConfigError(f"sasl.oauthbearer.method {method} is not one librdkafka knows (default, oidc)")
    if str(config.get("enable.sasl.oauthbearer.unsecure.jwt", "false")).lower() not in ("true", "1"):
        raise TokenConfigError(
            "OAUTHBEARER with sasl.oauthbearer.method=default needs enable.sasl.oauthbearer.unsecure.jwt=true "
            "(a token callback cannot be named in settings); or use sasl.oauthbearer.method=oidc"
        )
    return UnsecuredJwt.parse(str(config.get("sasl.oauthbearer.config", "")))
