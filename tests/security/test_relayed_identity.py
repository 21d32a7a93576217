"""Whom a request is answered for when its client id names a relayed caller (gateway/relay.py)."""

from __future__ import annotations

from groupcoord.coordinator.gateway.relay import RelayedFor, answered_for

SIDECAR = "gcadmin"  # what relays log in as, where they log in


def _named(principal: str | None, closed: bool = False) -> str:
    return RelayedFor("victims-connection", principal, "10.0.0.7", closed).client_id()


def test_only_the_sidecars_login_names_a_caller_where_relays_log_in() -> None:
    # The sidecar's own relay: the caller it names, all three.
    assert answered_for(SIDECAR, "10.0.0.1", "relay-conn", _named("alice"), SIDECAR) == (
        "alice",
        "10.0.0.7",
        "victims-connection",
    )
    # Any other login writing such a client id keeps its principal, its address and its own
    # connection: it cannot tie share sessions to (or end the sessions of) another connection.
    for client_id in (_named("bob"), _named(None), _named("alice", closed=True)):
        assert answered_for("mallory", "10.0.0.9", "own-conn", client_id, SIDECAR) == (
            "mallory",
            "10.0.0.9",
            "own-conn",
        )
    # An unauthenticated connection where relays log in: nothing of the named caller either.
    assert answered_for(None, "10.0.0.9", "own-conn", _named("alice"), SIDECAR) == (None, "10.0.0.9", "own-conn")


def test_anonymous_relays_name_the_connection_only() -> None:
    """Plain listeners: relays carry no principal to be told by, so the connection is taken as
    named (only share sessions hang on it) and the principal and address never."""
    assert answered_for(None, "10.0.0.1", "relay-conn", _named("alice"), None) == (
        None,
        "10.0.0.1",
        "victims-connection",
    )


def test_a_request_naming_no_caller_is_its_connections_own() -> None:
    for client_id in (None, "rdkafka", "groupcoord-relay", "groupcoord-relay;{not json"):
        assert answered_for("alice", "10.0.0.9", "own-conn", client_id, SIDECAR) == ("alice", "10.0.0.9", "own-conn")
