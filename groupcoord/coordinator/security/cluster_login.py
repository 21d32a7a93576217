"""The sidecar's own SASL login on the raw connections it opens to the cluster (the transaction
bridge's AddPartitionsToTxn, Produce and Fetch), with the credentials of its ``client`` settings,
the ones its librdkafka producers, consumers and admin clients use.

PLAIN and SCRAM-SHA-256/512 (RFC 5802, by scramp, as the CLI's own connections) are spoken here.
GSSAPI and OAUTHBEARER need a ticket or a token provider librdkafka has and this module has not
(``UnsupportedLogin``): ``serve`` then warns and leaves TxnOffsetCommit unserved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from scramp import ScramClient, ScramException

PLAIN = "PLAIN"
LOGIN_MECHANISMS = frozenset({PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512"})
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
