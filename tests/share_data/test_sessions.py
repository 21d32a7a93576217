"""Share sessions (Kafka's ShareSessionCache rules): opening, epochs, closing, the errors."""

from __future__ import annotations

import uuid

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.sessions import FINAL_EPOCH, ShareSessionCache, next_epoch


def test_epoch_zero_opens_and_each_request_moves_the_epoch_on() -> None:
    cache = ShareSessionCache()
    opened = cache.fetch("g", "m", 0, False, [("t", 0), ("t", 1)], [])
    assert opened.error == ErrorCode.NONE and opened.session is not None and opened.session.epoch == 1
    assert cache.fetch("g", "m", 1, True, [("u", 0)], [("t", 0)]).error == ErrorCode.NONE
    session = cache.get("g", "m")
    assert session is not None and session.epoch == 2 and list(session.partitions) == [("t", 1), ("u", 0)]
    assert cache.acknowledge("g", "m", 2).error == ErrorCode.NONE
    assert session.epoch == 3


def test_session_errors_as_kafka_answers_them() -> None:
    cache = ShareSessionCache()
    assert cache.fetch("g", "m", 1, False, [], []).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert cache.fetch("g", "m", FINAL_EPOCH, False, [], []).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert cache.acknowledge("g", "m", 1).error == ErrorCode.SHARE_SESSION_NOT_FOUND
    # Acknowledgements cannot be due in a new session.
    assert cache.fetch("g", "m", 0, True, [("t", 0)], []).error == ErrorCode.INVALID_REQUEST
    assert cache.get("g", "m") is None
    cache.fetch("g", "m", 0, False, [("t", 0)], [])
    assert cache.fetch("g", "m", 5, False, [], []).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert cache.acknowledge("g", "m", 5).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # ShareAcknowledge never opens a session.
    assert cache.acknowledge("g", "m", 0).error == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    session = cache.get("g", "m")
    assert session is not None and session.epoch == 1  # refused requests moved nothing
    # Another member's session is its own.
    assert cache.fetch("g", "other", 1, False, [], []).error == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_epoch_zero_replaces_a_session_and_final_epoch_closes_it() -> None:
    cache = ShareSessionCache()
    cache.fetch("g", "m", 0, False, [("t", 0)], [])
    cache.fetch("g", "m", 1, False, [], [])
    reopened = cache.fetch("g", "m", 0, False, [("t", 1)], [])
    assert reopened.session is not None and reopened.session.epoch == 1
    assert list(reopened.session.partitions) == [("t", 1)]
    closed = cache.fetch("g", "m", FINAL_EPOCH, False, [], [])
    assert closed.closing and closed.session is not None and list(closed.session.partitions) == [("t", 1)]
    assert cache.get("g", "m") is None
    cache.fetch("g", "m", 0, False, [], [])
    assert cache.acknowledge("g", "m", FINAL_EPOCH).closing and cache.get("g", "m") is None


def test_the_limit_on_sessions_and_the_epoch_wrap() -> None:
    cache = ShareSessionCache(max_sessions=1)
    cache.fetch("g", "a", 0, False, [], [])
    assert cache.fetch("g", "b", 0, False, [], []).error == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert cache.fetch("g", "a", 0, False, [], []).error == ErrorCode.NONE  # its own is replaced
    assert next_epoch(2**31 - 1) == 1 and next_epoch(0) == 1


def test_a_closed_connection_takes_only_the_sessions_it_opened() -> None:
    cache = ShareSessionCache()
    cache.fetch("g", "a", 0, False, [("t", 0)], [], "conn-1")
    cache.fetch("g", "b", 0, False, [("t", 0)], [], "conn-1")
    cache.fetch("g", "c", 0, False, [("t", 0)], [], "conn-2")
    # b reopened its session on another connection: the first one's close no longer takes it.
    cache.fetch("g", "b", 0, False, [("t", 0)], [], "conn-3")
    cache.fetch("g", "a", 1, False, [], [], "conn-2")  # later requests do not move a session
    assert [s.member for s in cache.drop_connection("conn-1")] == ["a"]
    assert cache.get("g", "a") is None and cache.get("g", "b") is not None
    assert cache.drop_connection("conn-1") == []
    assert cache.acknowledge("g", "c", -1).closing  # its final epoch closed it
    assert cache.drop_connection("conn-2") == []
    assert [s.member for s in cache.drop_connection("conn-3")] == ["b"]
    assert cache.sessions == {} and cache._by_connection == {}


def test_a_session_keeps_the_topic_id_each_partition_was_added_by() -> None:
    """Kafka keys a session's partitions by topic id: the id a partition was added with is kept
    (a re-created topic's new id replaces it when the client adds the partition again), and a
    forgotten partition of a topic no longer known by name is dropped by that id."""
    old, new, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    cache = ShareSessionCache()
    opened = cache.fetch("g", "m", 0, False, [("t", 0), ("t", 1), ("u", 0)], [], topic_ids={"t": old, "u": other})
    assert opened.session is not None
    assert opened.session.partitions == {("t", 0): old, ("t", 1): old, ("u", 0): other}
    cache.fetch("g", "m", 1, False, [("t", 0)], [], topic_ids={"t": new})
    cache.fetch("g", "m", 2, False, [], [], forgotten_ids=[(old, 1), (other, 1)])
    session = cache.get("g", "m")
    assert session is not None and session.partitions == {("t", 0): new, ("u", 0): other}


def test_checking_a_share_acknowledge_moves_nothing() -> None:
    """The data path checks the session before the member (Kafka keys sessions by member id: a
    wrong member id is SHARE_SESSION_NOT_FOUND), then advances it: the check changes nothing."""
    cache = ShareSessionCache()
    cache.fetch("g", "m", 0, False, [("t", 0)], [])
    assert cache.check_acknowledge("g", "stranger", 1) == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert cache.check_acknowledge("g", "m", 0) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert cache.check_acknowledge("g", "m", 2) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert cache.check_acknowledge("g", "m", 1) == ErrorCode.NONE
    assert cache.check_acknowledge("g", "m", FINAL_EPOCH) == ErrorCode.NONE
    session = cache.get("g", "m")
    assert session is not None and session.epoch == 1
    assert cache.acknowledge("g", "m", 1).error == ErrorCode.NONE and session.epoch == 2
