"""Which processes Metadata offers clients: those that own shards, dead or not, and for a while
those that stopped owning any (``server.DEPARTED_LISTED_S``: librdkafka #5511)."""

from __future__ import annotations

from typing import Any, cast

from groupcoord.coordinator.runtime.placement import Incarnation, Node, Placement, PlacementConfig
from groupcoord.coordinator.server import DEPARTED_LISTED_S, PlacementLocator

ME, PEER = Node(1_000_001, "127.0.0.1", 1), Node(1_000_002, "127.0.0.1", 2)


class Owners:
    """What the locator asks placement for here: the processes that own shards, and the directory's
    entries (which of them withdrew)."""

    def __init__(self, *nodes: Node) -> None:
        self.nodes = list(nodes)
        self.incarnations: dict[int, Incarnation] = {}

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


def test_a_process_that_withdrew_is_left_out_at_once() -> None:
    """A graceful stop hands the shards over and writes its directory entry withdrawn: no client
    needs it listed, and an admin client asking every node listed (ListGroups) would wait on it."""
    owners, clock = Owners(ME, PEER), Clock()
    locator = PlacementLocator(cast(Any, None), cast(Any, owners), clock=clock)
    assert listed(locator) == [ME.node_id, PEER.node_id]
    owners.incarnations[PEER.node_id] = Incarnation("i", withdrawn=True)
    assert listed(locator) == [ME.node_id]  # still named by the owners last read: left out all the same
    owners.nodes = [ME]
    assert listed(locator) == [ME.node_id]  # and no grace for it once it no longer owns shards


def test_the_previous_owner_of_the_shards_this_process_holds_is_not_offered() -> None:
    """A restart: until this process's announcement of the shards it was assigned is read back,
    the owners last read still name the previous owner (for a poll or two of placement's loop).
    Placement no longer counts it among the processes that own shards; a killed one (it never
    withdrew) is still listed for the grace after, a withdrawn one is not."""
    config = PlacementConfig("log", "placement", "directory", None, 6000, 600, "roundrobin", 1000)
    me, gone, peer = ME, PEER, Node(1_000_003, "127.0.0.1", 3)
    placement = Placement({}, config, me, lambda shards: None, lambda shards, lost: None)
    placement.nodes = {n.node_id: n for n in (me, gone, peer)}
    placement.owners = {0: gone.node_id, 1: gone.node_id, 2: peer.node_id}
    assert [n.node_id for n in placement.live_nodes()] == [me.node_id, gone.node_id, peer.node_id]
    placement.assigned = frozenset({0, 1})
    assert [n.node_id for n in placement.live_nodes()] == [me.node_id, peer.node_id]
    # A shard taken over from a stopping process ahead of the rebalance is held too.
    placement.assigned, placement.taken = frozenset({0}), {1: gone.node_id}
    assert [n.node_id for n in placement.live_nodes()] == [me.node_id, peer.node_id]
    placement.taken = {}  # one shard still announced by the other process and not held here
    assert [n.node_id for n in placement.live_nodes()] == [me.node_id, gone.node_id, peer.node_id]
    clock = Clock()
    locator = PlacementLocator(cast(Any, None), placement, clock=clock)
    assert listed(locator) == [me.node_id, gone.node_id, peer.node_id]
    placement.assigned = frozenset({0, 1})  # killed: listed for the grace
    assert listed(locator) == [me.node_id, peer.node_id, gone.node_id]
    placement.incarnations[gone.node_id] = Incarnation("i", withdrawn=True)  # withdrew: not
    assert listed(locator) == [me.node_id, peer.node_id]
