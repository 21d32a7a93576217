"""Which processes Metadata offers clients: the peers that own shards, less those found dead."""

from __future__ import annotations

import socket
from typing import Any, cast

from groupcoord.coordinator.runtime.placement import Node
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
