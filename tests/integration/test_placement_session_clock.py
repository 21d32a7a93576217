"""Placement's own clock of its session (``Placement._watch_session``).

librdkafka says a session was lost only at a poll of the consumer; a placement thread stuck in a
call that never returns (one to a cluster gone silent) never polls, and its shards went on serving
here after the cluster had given them to another process.
"""

from __future__ import annotations

import threading

import pytest

from groupcoord.coordinator.runtime.placement import PlacementConfig
from tests.ha.sidecars import recording_placement, wait_for
from tests.topics import ensure_topic


@pytest.mark.integration
def test_a_stuck_placement_thread_stops_serving_after_the_session_then_joins_again(
    bootstrap: str, unique_name: str
) -> None:
    ensure_topic(bootstrap, unique_name, partitions=2)
    config = PlacementConfig(unique_name, f"{unique_name}-p", f"{unique_name}-d", None, 3000, 300, "roundrobin", 1000)
    moves: list[tuple[str, list[int]]] = []
    placement = recording_placement(bootstrap, config, moves)
    placement.start()
    stuck = threading.Event()
    try:
        wait_for(lambda: placement.assigned == {0, 1}, 30, "the first assignment")
        # A call on the placement thread that does not return: the consumer is polled no more.
        read_directory = placement._read_directory

        def never_returns(timeout: float = 0) -> int:
            stuck.wait()
            return read_directory(timeout)

        placement._read_directory = never_returns  # type: ignore[method-assign]
        wait_for(lambda: ("lost", [0, 1]) in moves, 3 + 3, f"the shards to stop on the session's clock: {moves}")
        assert not placement.assigned
        stuck.set()  # the call returns: the group assigns afresh, to this process again
        wait_for(lambda: moves[-1] == ("assigned", [0, 1]), 30, f"the shards to come back: {moves}")
    finally:
        stuck.set()
        placement.close()
