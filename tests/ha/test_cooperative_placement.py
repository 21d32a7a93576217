"""Placement on a cluster whose group coordinator speaks KIP-848: cooperative and static by default.

The local broker cannot complete a cooperative rebalance, so the cluster the processes under test
place themselves on is a groupcoord sidecar in front of it: a conformant classic coordinator with
KIP-429 and KIP-345, and a KIP-848 one, which is what ``auto`` looks for. Everything here is real
processes and real librdkafka clients.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ha.sidecars import Committer, Sidecar, stop_all, wait_for
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

PARTITIONS = 6
_LOADED = re.compile(r"shard (\d+) loaded in")


def loads(sidecar: Sidecar) -> list[int]:
    return [int(m.group(1)) for line in sidecar.lines() if (m := _LOADED.search(line))]


@pytest.fixture
def front(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[Sidecar]:
    """A sidecar on the local broker, standing in for a cluster with a modern group coordinator."""
    sidecar = Sidecar(bootstrap, f"{unique_name}-front", tmp_path / "front.log").start()
    try:
        yield sidecar
    finally:
        sidecar.stop()


def test_auto_placement_is_cooperative_and_static_on_a_modern_coordinator(
    front: Sidecar, bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    ensure_topic(bootstrap, "t")
    # On the local broker itself, the eager assignor with dynamic members.
    assert any("placement: roundrobin, dynamic membership" in line for line in front.lines())
    # The restart below must land within the session timeout even when a loaded machine takes
    # several seconds to start a process (the default 6 s of these tests made it flaky there).
    env = {"GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": "20000"}
    first = Sidecar(front.address, unique_name, tmp_path / "b0.log", partitions=PARTITIONS, env=env)
    second = Sidecar(front.address, unique_name, tmp_path / "b1.log", partitions=PARTITIONS, env=env)
    committer: Committer | None = None
    try:
        first.start()
        assert any("placement: cooperative-sticky, static membership" in line for line in first.lines())
        wait_for(lambda: first.owned() == set(range(PARTITIONS)), 60, "the first process to own every shard")
        committer = Committer(first.address, f"{unique_name}-g")
        acked = committer.commit_until_acked(60)

        # A second process takes some shards; the first keeps the rest without reloading them.
        second.start()
        wait_for(lambda: bool(second.owned()) and not first.owned() & second.owned(), 60, "a cooperative hand-off")
        wait_for(lambda: first.owned() | second.owned() == set(range(PARTITIONS)), 60, "every shard owned")
        kept = first.owned()
        assert kept and len(kept) < PARTITIONS
        assert sorted(loads(first)) == list(range(PARTITIONS)), "a shard the first process kept was reloaded"

        # kill -9 and a restart within the session timeout: the same shards come back to the same
        # static member, and the other process is not disturbed at all.
        moved = second.owned()
        before = len(first.lines())
        second.kill9()
        second.start()
        wait_for(lambda: second.owned() == moved, 60, "the restarted process to get its shards back")
        assert first.owned() == kept
        assert not [line for line in first.lines()[before:] if "revoked" in line or "loaded in" in line]

        assert committer.committed() == acked, "an acknowledged commit was lost"
        assert committer.commit_until_acked(60) > acked
    finally:
        if committer is not None:
            committer.close()
        stop_all([second, first])
