"""Which processes Metadata offers clients: the peers that own shards, less those found dead."""

from __future__ import annotations

import socket
from typing import Any, cast

from groupcoord.coordinator.runtime.placement import Node, Placement, PlacementConfig
from groupcoord.coordinator.server import PlacementLocator


class Owners:
    """The one thing the locator asks placement for here: the processes that own shards."""

    def __init__(self, *nodes: Node) -> None:
        self.nodes = list(nodes)

    def live_nodes(self) -> list[Node]:
        return self.nodes


def test_a_peer_whose_listener_refuses_is_left_out_until_it_listens_again() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        me, peer = Node(1_000_001, "127.0.0.1", 1), Node(1_000_002, "127.0.0.1", port)
        locator = PlacementLocator(cast(Any, None), cast(Any, Owners(me, peer)))
        assert not locator.probe(peer.host, peer.port)
        assert [p.node_id for p in locator.peers()] == [me.node_id, peer.node_id]
    # Nobody listens on the port any more (the process was killed): refused at the next probe.
    assert locator.probe(peer.host, peer.port)
    assert [p.node_id for p in locator.peers()] == [me.node_id]
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
        again.listen()
        assert not locator.probe(peer.host, peer.port)
        assert [p.node_id for p in locator.peers()] == [me.node_id, peer.node_id]


def test_the_previous_owner_of_the_shards_this_process_holds_is_not_offered() -> None:
    """A restart after a graceful stop: until this process's announcement of the shards it was
    assigned is read back, the owners last read still name the process that stopped (for a poll
    or two of placement's loop: the commit's outcome comes at one, the owners read back at the
    next). Metadata offers it no longer: an admin client that asks every node listed (ListGroups)
    waited its whole timeout on it."""
    config = PlacementConfig("log", "placement", "directory", None, 6000, 600, "roundrobin", 1000)
    me, gone, peer = Node(1_000_001, "127.0.0.1", 1), Node(1_000_002, "127.0.0.1", 2), Node(1_000_003, "127.0.0.1", 3)
    placement = Placement({}, config, me, lambda shards: None, lambda shards, lost: None)
    placement.nodes = {n.node_id: n for n in (me, gone, peer)}
    placement.owners = {0: gone.node_id, 1: gone.node_id, 2: peer.node_id}
    locator = PlacementLocator(cast(Any, None), placement)
    # Before the assignment, the owners read are all there is to go on.
    assert [p.node_id for p in locator.peers()] == [me.node_id, gone.node_id, peer.node_id]
    placement.assigned = frozenset({0, 1})
    assert [p.node_id for p in locator.peers()] == [me.node_id, peer.node_id]
    # A shard taken over from a stopping process ahead of the rebalance is held too.
    placement.assigned, placement.taken = frozenset({0}), {1: gone.node_id}
    assert [p.node_id for p in locator.peers()] == [me.node_id, peer.node_id]
    # One shard still announced by the other process and not held here: it is offered.
    placement.taken = {}
    assert [p.node_id for p in locator.peers()] == [me.node_id, gone.node_id, peer.node_id]
