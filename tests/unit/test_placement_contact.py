"""Placement's own clock of its session (``Placement._check_session``) counts the answers the
placement group's coordinator gives the consumer itself (its heartbeats, read from librdkafka's
statistics), not only those to the owners query.

A few TCP resets made librdkafka leave the owners query waiting on a decommissioned coordinator
(librdkafka #5511) for 30 s, while the consumer's heartbeats were answered all along: the process
stopped serving its shards three times, each ~6 s after it had been given them again. A process
the coordinator really does not answer must still stop once a session has passed.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from groupcoord.coordinator.runtime import group_offsets
from groupcoord.coordinator.runtime.placement import Node, Placement, PlacementConfig

SESSION_S = 6.0


def placement(moves: list[tuple[str, list[int]]]) -> Placement:
    """A placement holding shards 1 and 4, last answered (owners query, assignment) at 100.0 s."""
    config = PlacementConfig("log", "placement", "directory", None, int(SESSION_S * 1000), 1000, "roundrobin", 1000)
    held = Placement(
        {"bootstrap.servers": "127.0.0.1:1"},
        config,
        Node(1_000_001, "127.0.0.1", 1),
        lambda shards: moves.append(("assigned", shards)),
        lambda shards, lost: moves.append(("lost" if lost else "revoked", shards)),
    )
    held.assigned = frozenset({1, 4})
    held._contact = 100.0
    return held


def stats(taken_s: float, rxidle_s: float, up_s: float, rtt_s: float | None = 0.002, state: str = "UP") -> str:
    """librdkafka's statistics of the consumer as taken at ``taken_s``: its coordinator connection,
    up for ``up_s``, last received ``rxidle_s`` before (round trips: ``rtt_s``, None for none)."""
    rtt = {"max": 0, "cnt": 0} if rtt_s is None else {"max": int(rtt_s * 1e6), "cnt": 3}
    coordinator = {
        "nodeid": -1,
        "state": state,
        "stateage": int(up_s * 1e6),
        "rxidle": int(rxidle_s * 1e6),
        "rtt": rtt,
    }
    return json.dumps({"ts": int(taken_s * 1e6), "brokers": {"GroupCoordinator": coordinator}, "cgrp": {"state": "up"}})


def test_heartbeats_answered_keep_the_shards_while_the_owners_query_gets_no_answer() -> None:
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    for second in range(1, 30):  # the owners query stays unanswered; the heartbeats do not
        now = 100.0 + second
        held._consumer_stats(stats(now - 0.05, 0.4, 20.0), now=now)
        held._check_session(now)
    assert moves == []
    assert held.assigned == {1, 4}


def test_a_rebalance_held_by_the_coordinator_a_while_ago_does_not_hold_the_heartbeats_back() -> None:
    """A JoinGroup answered after 3 s (the coordinator waits for the group) says nothing of the
    heartbeats answered in milliseconds afterwards."""
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    held._consumer_stats(stats(100.5, 0.1, 20.0, rtt_s=3.0), now=100.5)
    for second in range(1, 12):
        now = 100.5 + second
        held._consumer_stats(stats(now, 0.4, 20.0), now=now)
        held._check_session(now)
    assert moves == []


def test_a_coordinator_that_answers_nothing_stops_the_shards_after_the_session() -> None:
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    for second in range(1, 10):  # partitioned at 100.0: the connection receives nothing more
        now = 100.0 + second
        held._consumer_stats(stats(now, now - 100.0, 20.0, rtt_s=None), now=now)
        held._check_session(now)
    assert moves == [("lost", [1, 4])]
    assert not held.assigned


def test_statistics_taken_before_a_pause_do_not_count_after_it() -> None:
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    # Paused from 100.5 to 110: the statistics queued before the pause are delivered after it.
    held._consumer_stats(stats(100.4, 0.3, 20.0), now=110.0)
    held._check_session(110.0)
    assert moves == [("lost", [1, 4])]


def test_an_answer_held_back_as_long_as_the_session_does_not_count() -> None:
    """An answer that took 7 s to come (the connection stalled) is to a request sent 7 s ago: the
    coordinator may have expired the member meanwhile."""
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    held._consumer_stats(stats(107.0, 0.1, 20.0, rtt_s=7.0), now=107.0)
    held._check_session(107.0)
    assert moves == [("lost", [1, 4])]


def test_the_handshake_of_a_new_connection_does_not_count() -> None:
    """A reconnection answers ApiVersion before any request of the group is sent on it."""
    moves: list[tuple[str, list[int]]] = []
    held = placement(moves)
    held._consumer_stats(stats(107.0, 0.2, 0.1), now=107.0)
    held._consumer_stats(stats(107.0, 0.2, 1.0, state="CONNECT"), now=107.0)
    held._check_session(107.0)
    assert moves == [("lost", [1, 4])]


def test_the_owners_query_never_re_bootstraps_and_asks_again_on_a_new_client_after_a_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka's re-bootstrap decommissions the coordinator's broker while its coordinator
    cache still names it, and the query then waits on it: a stuck query is asked again on a new
    client once it has waited a session, not after ``RENEW_AFTER_S``."""
    clients: list[StuckConsumer] = []
    release = threading.Event()

    class StuckConsumer:
        def __init__(self, config: dict[str, Any]) -> None:
            self.config = config
            self.asked = threading.Event()
            clients.append(self)

        def list_topics(self, topic: str, timeout: float) -> Any:
            self.asked.set()
            release.wait(30)  # never answered while the test runs
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))

        def close(self) -> None:
            pass

    monkeypatch.setattr(group_offsets, "Consumer", StuckConsumer)
    try:
        query = placement([])._new_owners_query()
        assert clients[0].config["metadata.recovery.strategy"] == "none"
        assert query.answer(0.0) is None
        assert clients[0].asked.wait(10)
        sent = query._sent_at
        assert query.answer(sent + SESSION_S / 2) is None
        assert len(clients) == 1  # slow, maybe: kept
        assert query.answer(sent + SESSION_S + 0.1) is None
        assert len(clients) == 2 and clients[1].asked.wait(10)  # stuck: asked again on a new client
    finally:
        release.set()
