"""OAUTHBEARER on the sidecar's own connections (``security/oauthbearer.py``): the token taken from
the ``client`` settings as librdkafka takes it (its unsecured JWT; the client-credentials grant
against a local token endpoint), RFC 7628's client response, and logins through the SASL front
(test fixture before the real local broker), which verifies the token as Kafka's unsecured
validator does; librdkafka logs in with the same settings through it."""

from __future__ import annotations

import asyncio
import json

import pytest
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.gateway.broker_connection import BrokerConnection, BrokerUnreachable
from groupcoord.coordinator.messages import metadata as md
from groupcoord.coordinator.security.cluster_login import ClusterLogin, LoginFailed, UnsupportedLogin
from groupcoord.coordinator.security.oauthbearer import (
    BearerToken,
    BearerTokens,
    ClientCredentials,
    TokenConfigError,
    TokenUnavailable,
    UnsecuredJwt,
    client_response,
    jwt_claims,
    token_source,
)
from tests.security.conftest import SaslCluster
from tests.security.token_endpoint import TokenEndpoint, token_endpoint

OAUTH = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}
UNSECURED = {**OAUTH, "enable.sasl.oauthbearer.unsecure.jwt": "true"}
METADATA = 3


def test_the_unsecured_jwt_is_librdkafkas() -> None:
    config = UnsecuredJwt.parse("principal=gc  scope=read,write,,read lifeSeconds=60 extension_traceId=abc")
    token = config.token(1_700_000_000.1234)
    header, claims, signature = token.value.split(".")
    # librdkafka's fixed header, {"alg":"none"}, and no signature.
    assert (header, jwt_claims(f"x.{header}"), signature) == ("eyJhbGciOiJub25lIn0", {"alg": "none"}, "")
    assert jwt_claims(token.value) == {
        "sub": "gc",
        "iat": 1_700_000_000.123,
        "exp": 1_700_000_060.123,
        "scope": ["read", "write"],
    }
    assert (token.principal, token.expires_at, token.extensions) == ("gc", 1_700_000_060.123, (("traceId", "abc"),))
    named = UnsecuredJwt.parse("principal=gc principalClaimName=azp scopeClaimName=scp").token(10)
    assert jwt_claims(named.value) == {"azp": "gc", "iat": 10, "exp": 3610}  # no scope: no claim; 3600 s life

    for bad, why in (
        ("scope=x", "no principal"),
        ("principal=a principal=b", "multiple"),
        ("principal=a lifeSeconds=0", "lifeSeconds"),
        ("principal=a lifeSeconds=1.5", "lifeSeconds"),
        ("principal=a colour=blue", "unrecognized"),
        ("principal=a extension_auth=x", "auth"),
        ("principal=a extension_trace1=x", "letters"),
        ("principal= ", "empty"),
    ):
        with pytest.raises(TokenConfigError, match=why):
            UnsecuredJwt.parse(bad)


def test_the_client_response_is_rfc_7628s() -> None:
    token = BearerToken("h.c.", 0, "gc", (("traceId", "abc"), ("tenant", "t1")))
    assert client_response(token) == b"n,,\x01auth=Bearer h.c.\x01traceId=abc\x01tenant=t1\x01\x01"
    assert client_response(BearerToken("h.c.", 0, "gc")) == b"n,,\x01auth=Bearer h.c.\x01\x01"


def test_the_login_is_built_from_librdkafkas_settings() -> None:
    login = ClusterLogin.from_client_config({**UNSECURED, "sasl.oauthbearer.config": "principal=gc"})
    assert login is not None and login.mechanism == "OAUTHBEARER"
    exchange = login.exchange()
    first = exchange.first()
    assert first.startswith(b"n,,\x01auth=Bearer ") and first.endswith(b"\x01\x01")
    assert exchange.answer(b"") is None  # RFC 7628: an empty server message is success
    oidc = {
        **OAUTH,
        "sasl.oauthbearer.method": "OIDC",
        "sasl.oauthbearer.token.endpoint.url": "http://idp/token",
        "sasl.oauthbearer.client.id": "gc",
        "sasl.oauthbearer.client.secret": "pw",
        "sasl.oauthbearer.extensions": "traceId=abc, tenant=t1",
    }
    source = token_source(oidc)
    assert isinstance(source, ClientCredentials)
    assert source.extensions == (("traceId", "abc"), ("tenant", "t1"))
    assert "pw" not in repr(source) and "pw" not in repr(ClusterLogin.from_client_config(oidc))
    for missing in (
        {**OAUTH},  # a token callback cannot be named in settings
        {**UNSECURED},  # no principal
        {**OAUTH, "sasl.oauthbearer.method": "oidc"},
        {**oidc, "sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer"},
        {**oidc, "sasl.oauthbearer.extensions": "novalue"},
        {**OAUTH, "sasl.oauthbearer.method": "aws"},
    ):
        with pytest.raises(UnsupportedLogin):
            ClusterLogin.from_client_config(missing)


def test_a_refused_token_is_a_failed_login() -> None:
    login = ClusterLogin.from_client_config({**UNSECURED, "sasl.oauthbearer.config": "principal=gc"})
    assert login is not None
    exchange = login.exchange()
    exchange.first()
    # Kafka answers a refused token with a JSON error and error 0; the client sends its kvsep.
    assert exchange.answer(b'{"status":"invalid_token"}') == b"\x01"
    with pytest.raises(LoginFailed, match="invalid_token"):
        exchange.answer(b"")


class _Counting:
    def __init__(self) -> None:
        self.made: list[float] = []

    def token(self, now: float) -> BearerToken:
        self.made.append(now)
        return BearerToken(f"t{len(self.made)}", now + 100, "gc", (), now)


def test_a_token_is_kept_until_most_of_its_life_has_passed() -> None:
    clock = [1000.0]
    source = _Counting()
    tokens = BearerTokens(source, lambda: clock[0])
    assert tokens.current().value == "t1"
    clock[0] = 1079.0
    assert tokens.current().value == "t1"
    clock[0] = 1080.0  # 80% of its 100 s
    assert tokens.current().value == "t2" and source.made == [1000.0, 1080.0]


def _oidc(endpoint: TokenEndpoint, secret: str = "gc-secret", **extra: str) -> dict[str, str]:
    return {
        **OAUTH,
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": endpoint.url,
        "sasl.oauthbearer.client.id": "gcadmin",
        "sasl.oauthbearer.client.secret": secret,
        "sasl.oauthbearer.scope": "kafka groups",
        **extra,
    }


def test_the_client_credentials_grant() -> None:
    with token_endpoint({"gcadmin": "gc-secret"}, expires_in=120, failures=[503]) as endpoint:
        source = token_source(_oidc(endpoint, **{"sasl.oauthbearer.extensions": "traceId=abc"}))
        token = source.token(5000.0)  # the 503 is retried
        assert endpoint.granted == [("gcadmin", {"grant_type": "client_credentials", "scope": "kafka groups"})]
        assert (token.principal, token.extensions) == ("gcadmin", (("traceId", "abc"),))
        assert token.expires_at == 5120.0 and token.refresh_at == 5096.0  # expires_in sooner than exp
        assert jwt_claims(token.value)["sub"] == "gcadmin"  # type: ignore[index]

        # Wrong credentials are refused at once (no retry), readably.
        endpoint.granted.clear()
        with pytest.raises(TokenUnavailable, match="HTTP 401"):
            token_source(_oidc(endpoint, "wrong")).token(0)
        endpoint.failures.extend([500, 500, 500])
        with pytest.raises(TokenUnavailable, match="HTTP 500"):
            source.token(0)
        assert endpoint.granted == [] and endpoint.failures == []
    with pytest.raises(TokenUnavailable, match="token endpoint"):
        source.token(0)  # nothing listens there any more


@pytest.mark.integration
def test_the_sidecars_connections_log_in_with_an_oauthbearer_token(sasl_cluster: SaslCluster) -> None:
    """Through the SASL front: the unsecured JWT and the client-credentials token log in as their
    subject, the session lifetime the cluster gives (KIP-368) is kept, a refused token is a failed
    login with the cluster's reason, and librdkafka logs in with the very same settings."""
    front = sasl_cluster.front
    address = tuple(sasl_cluster.bootstrap.split(":"))
    at = (address[0], int(address[1]))

    async def login(config: dict[str, str]) -> BrokerConnection:
        cluster_login = ClusterLogin.from_client_config(config)
        conn = await BrokerConnection.open(at, None, 15, cluster_login, "oauth-test")
        await conn.call(md.MetadataRequest(topics=[]), md.MetadataResponse, 4, 15)
        return conn

    unsecured = {**UNSECURED, "sasl.oauthbearer.config": "principal=oauth-jwt extension_traceId=abc"}
    with token_endpoint({"oauth-oidc": "oidc-secret"}) as endpoint:
        oidc = _oidc(endpoint, "oidc-secret", **{"sasl.oauthbearer.client.id": "oauth-oidc"})
        front.lifetimes["oauth-oidc"] = 60_000
        try:
            conns = [asyncio.run(login(config)) for config in (unsecured, oidc)]
            assert conns[0].reauthenticate_at is None and conns[1].reauthenticate_at is not None
            for conn in conns:
                conn.close()
            assert {("oauth-jwt", METADATA), ("oauth-oidc", METADATA)} <= set(front.seen)

            front.refused_subjects.add("oauth-jwt")
            with pytest.raises(BrokerUnreachable, match=r"SASL OAUTHBEARER login: .*invalid_token"):
                asyncio.run(login(unsecured))

            # librdkafka (the sidecar's own clients) with the same settings, through the same front.
            for config, who in (
                (oidc, "oauth-oidc"),
                ({**unsecured, "sasl.oauthbearer.config": "principal=rdk"}, "rdk"),
            ):
                before = len(front.seen)
                admin = AdminClient({"bootstrap.servers": sasl_cluster.bootstrap, **config})
                assert admin.list_topics(timeout=15).brokers
                assert (who, METADATA) in front.seen[before:]
            assert len(endpoint.granted) >= 2  # the sidecar's fetch and librdkafka's
        finally:
            front.refused_subjects.discard("oauth-jwt")
            front.lifetimes.pop("oauth-oidc", None)
    assert json.loads(front.failures[-1]) == {"status": "invalid_token"}
