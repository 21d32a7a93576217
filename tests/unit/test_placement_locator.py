"""Which processes Metadata offers clients: those that own shards, dead or not, and for a while
those that stopped owning any (``server.DEPARTED_LISTED_S``: librdkafka #5511)."""

from __future__ import annotations

from typing import Any, cast

from groupcoord.coordinator.runtime.placement import Node
from groupcoord.coordinator.server import DEPARTED_LISTED_S, PlacementLocator

ME, PEER = Node(1_000_001, "127.0.0.1", 1), Node(1_000_002, "127.0.0.1", 2)


class Owners:
    """The one thing the locator asks placement for here: the processes that own shards."""

    def __init__(self, *nodes: Node) -> None:
        self.nodes = list(nodes)

    def live_nodes(self) -> list[Node]:
        return self.nodes


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def listed(locator: PlacementLocator) -> list[int]:
    return [p.node_id for p in locator.peers()]


def test_a_process_that_stops_owning_shards_is_listed_a_while_longer_then_left_out() -> None:
    """Leaving a killed process out of Metadata at once made librdkafka decommission its broker
    while it was still the cached group coordinator of a transactional producer, whose next
    send_offsets_to_transaction then waited forever (tests/txn/test_eos_failover.py in CI)."""
    owners, clock = Owners(ME, PEER), Clock()
    locator = PlacementLocator(cast(Any, None), cast(Any, owners), clock=clock)
    assert listed(locator) == [ME.node_id, PEER.node_id]
    owners.nodes = [ME]  # the survivors took the peer's shards over
    assert listed(locator) == [ME.node_id, PEER.node_id]
    clock.now += DEPARTED_LISTED_S - 0.1
    assert listed(locator) == [ME.node_id, PEER.node_id]
    clock.now += 0.2
    assert listed(locator) == [ME.node_id]
    assert listed(locator) == [ME.node_id]


def test_a_process_that_owns_shards_again_is_listed_for_as_long_as_it_owns_them() -> None:
    owners, clock = Owners(ME, PEER), Clock()
    locator = PlacementLocator(cast(Any, None), cast(Any, owners), clock=clock)
    listed(locator)
    owners.nodes = [ME]
    listed(locator)
    owners.nodes = [ME, PEER]  # back before its grace ran out: no grace left pending
    clock.now += 2 * DEPARTED_LISTED_S
    assert listed(locator) == [ME.node_id, PEER.node_id]
    owners.nodes = [ME]  # a second departure gets a grace of its own
    assert listed(locator) == [ME.node_id, PEER.node_id]
    clock.now += DEPARTED_LISTED_S
    assert listed(locator) == [ME.node_id]
