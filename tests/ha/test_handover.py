"""Who takes a stopping process's shards (``runtime/handover.py``), without a cluster."""

from __future__ import annotations

from groupcoord.coordinator.runtime.handover import Handover, Successor, choose_successors, decode, encode


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
