"""A stop gives up the placement owners query at once, even with the cluster unreachable:
``serve`` stopping then leaves in about a second instead of waiting the query's 10 s out."""

from __future__ import annotations

import threading
import time

import pytest

from groupcoord.coordinator.runtime.group_offsets import GroupOffsetsQuery
from groupcoord.local_broker import free_port


def test_a_set_stop_ends_the_wait_for_an_unreachable_cluster() -> None:
    query = GroupOffsetsQuery({"bootstrap.servers": f"127.0.0.1:{free_port()}", "log_level": 0}, "g", "t")
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        query.ask(timeout=120, stop=stop)
    # Far below the 120 s asked for: the stop, not the timeout, ended the wait.
    assert time.monotonic() - began < 60


def test_without_a_stop_the_timeout_still_ends_the_wait() -> None:
    query = GroupOffsetsQuery({"bootstrap.servers": f"127.0.0.1:{free_port()}", "log_level": 0}, "g", "t")
    with pytest.raises(TimeoutError):
        query.ask(timeout=0.5)
