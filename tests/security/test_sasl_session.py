"""What the gateway learns from relayed SASL messages: principal per mechanism, outcome, expiry."""

from __future__ import annotations

import base64
import json

import pytest
from scramp import ScramClient

from groupcoord.coordinator.security.sasl import SaslRefused, SaslSession, principal_from_first_message


def _jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


def test_principals_per_mechanism() -> None:
    assert principal_from_first_message("PLAIN", b"\x00alice\x00pw") == "alice"
    assert principal_from_first_message("PLAIN", b"alice\x00alice\x00pw") == "alice"
    first = ScramClient(["SCRAM-SHA-256"], "we,ird=name", "pw").get_client_first().encode()
    assert principal_from_first_message("SCRAM-SHA-256", first) == "we,ird=name"
    token = _jwt({"sub": "carol", "exp": 2**31})
    message = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
    assert principal_from_first_message("OAUTHBEARER", message) == "carol"


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ("PLAIN", b"mallory\x00alice\x00pw"),  # authzid differs from authcid
        ("PLAIN", b"no separators"),
        ("SCRAM-SHA-256", b"n,a=mallory,n=alice,r=abc"),
        ("SCRAM-SHA-512", b"garbage"),
        ("OAUTHBEARER", b"n,,\x01auth=Bearer not-a-jwt\x01\x01"),
        ("OAUTHBEARER", f"n,,\x01auth=Bearer {_jwt({'aud': 'x'})}\x01\x01".encode()),
        ("GSSAPI", b"anything"),
    ],
)
def test_messages_the_gateway_cannot_follow_are_refused(mechanism: str, message: bytes) -> None:
    with pytest.raises(SaslRefused):
        principal_from_first_message(mechanism, message)


def test_authenticated_only_after_the_clusters_final_yes() -> None:
    now = [100.0]
    session = SaslSession(clock=lambda: now[0])
    session.handshake("SCRAM-SHA-256", 0)
    session.client_message(b"n,,n=alice,r=abc")
    session.server_message(0, b"r=abcdef,s=c2FsdA==,i=4096", 0)
    assert not session.authenticated  # server-first is not a verdict
    session.client_message(b"c=biws,r=abcdef,p=proof")
    session.server_message(0, b"v=signature", 60_000)
    assert session.authenticated and session.principal == "alice"
    now[0] += 61
    assert not session.authenticated  # the session lifetime the cluster gave has passed
    # Re-authentication as the same user renews it; as another user is refused.
    session.handshake("PLAIN", 0)
    session.client_message(b"\x00alice\x00pw")
    session.server_message(0, b"", 60_000)
    assert session.authenticated
    session.handshake("PLAIN", 0)
    session.client_message(b"\x00bob\x00pw")
    with pytest.raises(SaslRefused):
        session.server_message(0, b"", 0)
    assert not session.authenticated


def test_a_refusal_never_authenticates() -> None:
    session = SaslSession()
    session.handshake("PLAIN", 0)
    session.client_message(b"\x00alice\x00wrong")
    session.server_message(58, b"", 0)
    assert not session.authenticated
    with pytest.raises(SaslRefused):
        session.client_message(b"\x00alice\x00again")  # no handshake in force any more
    session.handshake("PLAIN", 33)  # the cluster refused the mechanism
    assert not session.in_progress
