"""The sidecar's own SASL login (``security/cluster_login.py``): which ``client`` settings it is
built from, and the PLAIN and SCRAM exchanges (checked against ``scramp``'s server)."""

from __future__ import annotations

import pytest
from scramp import ScramMechanism

from groupcoord.coordinator.security.cluster_login import ClusterLogin, LoginFailed, UnsupportedLogin


def test_the_login_is_built_from_the_client_settings() -> None:
    assert ClusterLogin.from_client_config({"bootstrap.servers": "k:9092"}) is None
    assert ClusterLogin.from_client_config({"security.protocol": "SSL"}) is None
    login = ClusterLogin.from_client_config(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "scram-sha-512",
            "sasl.username": "gc",
            "sasl.password": "pw",
        }
    )
    assert login == ClusterLogin("SCRAM-SHA-512", "gc", "pw")
    assert "pw" not in repr(login)
    plain = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.username": "gc"}
    assert ClusterLogin.from_client_config({**plain, "sasl.password": "pw"}) == ClusterLogin("PLAIN", "gc", "pw")
    with pytest.raises(UnsupportedLogin, match="sasl.password"):
        ClusterLogin.from_client_config(plain)
    # librdkafka's default mechanism (GSSAPI) needs a Kerberos ticket; OAUTHBEARER without a token
    # source the settings can name (test_oauthbearer.py) is refused too.
    for mechanism in ({}, {"sasl.mechanism": "GSSAPI"}, {"sasl.mechanism": "OAUTHBEARER"}):
        with pytest.raises(UnsupportedLogin):
            ClusterLogin.from_client_config({"security.protocol": "SASL_PLAINTEXT", **mechanism})


def test_plain_sends_the_user_and_password() -> None:
    exchange = ClusterLogin("PLAIN", "gc", "pw").exchange()
    assert exchange.first() == b"\x00gc\x00pw"
    assert exchange.answer(b"") is None


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_logs_in_and_checks_the_server(mechanism: str) -> None:
    scram = ScramMechanism(mechanism)
    server = scram.make_server(lambda user: scram.make_auth_info("pw", iteration_count=4096))
    exchange = ClusterLogin(mechanism, "g,c=", "pw").exchange()
    server.set_client_first(exchange.first().decode())
    final = exchange.answer(server.get_server_first().encode())
    assert final is not None
    server.set_client_final(final.decode())  # raises on a wrong proof
    assert exchange.answer(server.get_server_final().encode()) is None

    # A server that does not know the password cannot forge its signature.
    other = ClusterLogin(mechanism, "gc", "pw").exchange()
    impostor = scram.make_server(lambda user: scram.make_auth_info("other", iteration_count=4096))
    impostor.set_client_first(other.first().decode())
    assert other.answer(impostor.get_server_first().encode()) is not None
    with pytest.raises(LoginFailed):
        other.answer(b"v=" + b"AAAA" * 10 + b"AAA=")


def test_scram_refuses_a_foreign_nonce() -> None:
    exchange = ClusterLogin("SCRAM-SHA-256", "gc", "pw").exchange()
    exchange.first()
    with pytest.raises(LoginFailed):
        exchange.answer(b"r=xyz123,s=c2FsdA==,i=4096")
