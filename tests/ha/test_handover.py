"""Who takes a stopping process's shards (``runtime/handover.py``), without a cluster."""

from __future__ import annotations

import threading
from typing import Any

from groupcoord.coordinator.runtime.handover import Handover, Successor, choose_successors, decode, encode
from groupcoord.coordinator.runtime.placement import Incarnation, Node, Placement, PlacementConfig


def test_successors_are_the_ones_an_eager_roundrobin_rebalance_picks() -> None:
    # librdkafka's roundrobin: members sorted by member id, partition k to the (k mod n)-th.
    a, b = Successor(7, "inc-a", "m-b"), Successor(3, "inc-b", "m-a")
    chosen = choose_successors([5, 2, 8], [a, b])
    assert chosen == {2: b, 5: a, 8: b}


def test_by_node_id_when_a_member_id_is_unknown_and_nobody_when_alone() -> None:
    a, b = Successor(7, "inc-a", None), Successor(3, "inc-b", "m-a")
    assert choose_successors([0, 1], [a, b]) == {0: b, 1: a}
    assert choose_successors([0, 1], []) == {}


def test_the_directory_field_reads_back_and_junk_in_it_is_left_out() -> None:
    field = encode({4: Successor(7, "inc-a", "m-a")})
    assert decode(9, "inc-9", field) == {4: Handover(9, "inc-9", 7, "inc-a")}
    field["x"] = {"node": 1, "incarnation": "i"}
    field["5"] = {"node": "not a number", "incarnation": "i"}
    field["6"] = "no successor"
    assert decode(9, "inc-9", field) == {4: Handover(9, "inc-9", 7, "inc-a")}
    assert decode(9, "inc-9", ["not", "a", "mapping"]) == {}


class _Member:
    """The placement group membership this process leaves."""

    def close(self) -> None:
        pass


class _Recorded(Placement):
    """A placement whose cluster reads and writes are recorded instead of made (the order is the test)."""

    def __init__(self, events: list[str], peers: dict[int, Incarnation]) -> None:
        config = PlacementConfig("log", "placement", "directory", None, 6000, 600, "roundrobin", 1000)
        super().__init__({}, config, Node(1, "127.0.0.1", 9001), lambda p: None, lambda p, lost: None)
        self.events = events
        self.nodes = {1: self.me, **{n: Node(n, "127.0.0.1", 9000 + n) for n in peers}}
        self.incarnations = dict(peers)
        self.owners = {0: 1, 1: 1, **{n + 10: n for n in peers}}
        self._producer = self  # type: ignore[assignment]
        self._consumer = _Member()  # type: ignore[assignment]

    def _refresh_owners(self, stop: threading.Event | None = None, timeout: float = 10) -> None:
        self.events.append("owners read")

    def _read_directory(self, timeout: float = 0) -> int:
        return 0

    def _register(self, handed_over: dict[str, Any] | None = None, withdrawn: bool = False) -> None:
        to = sorted({v["node"] for v in (handed_over or {}).values()})
        self.events.append(f"withdrawn, handover to {to}" if withdrawn else f"handover announced to {to}")

    def flush(self, timeout: float) -> int:
        return 0


def test_shards_stop_serving_after_the_successors_are_chosen_and_before_they_are_named() -> None:
    events: list[str] = []
    placement = _Recorded(events, {2: Incarnation("inc-2", "m-2")})
    handed = placement.close([0, 1], stop_serving=lambda: events.append("stopped serving"))
    assert events == ["owners read", "stopped serving", "handover announced to [2]"]
    assert sorted(handed) == [0, 1] and placement.successor_address(0) == ("127.0.0.1", 9002)


def test_shards_stop_serving_even_with_nobody_to_hand_them_to() -> None:
    events: list[str] = []
    alone = _Recorded(events, {})
    assert alone.close([0, 1], stop_serving=lambda: events.append("stopped serving")) == {}
    assert events == ["owners read", "stopped serving"]
    assert alone.successor_address(0) is None


def test_a_clean_stop_ends_withdrawn_and_a_withdrawn_peer_is_nobody_s_successor() -> None:
    """After the leave its entry says it withdrew (``Placement.withdraw``), its handover kept for
    routing; a peer the owners still name after its own clean stop takes nothing."""
    events: list[str] = []
    gone = Incarnation("inc-3", "m-0", withdrawn=True)  # its member id would sort first
    placement = _Recorded(events, {2: Incarnation("inc-2", "m-2"), 3: gone})
    handed = placement.close([0, 1])
    placement.withdraw()
    assert {h.successor for h in handed.values()} == {2}
    assert events == ["owners read", "handover announced to [2]", "withdrawn, handover to [2]"]
