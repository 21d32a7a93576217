"""``PeerWatch``: which peers are removed from the placement group, and which never are."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

from groupcoord.coordinator.runtime.peers import FRESH_S, REFUSALS, PeerWatch, await_takeover, refuses
from groupcoord.coordinator.runtime.placement import Incarnation, Node, Placement, PlacementConfig, _incarnation


def test_only_a_closed_port_refuses_a_listener_nobody_accepts_on_does_not() -> None:
    # A socket that listens but whose process never accepts (as a SIGSTOP'd serve): the kernel
    # completes the connection, so it is not a refusal.
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        assert not refuses("127.0.0.1", listening.getsockname()[1])
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert refuses("127.0.0.1", port)


ME = Node(1, "127.0.0.1", 9000)
PEER = Node(2, "127.0.0.1", 9001)


@dataclass
class FakePlacement:
    me: Node = ME
    me_now: Incarnation = Incarnation("mine", "m-1", None, "boot", "127.0.0.1:9000")
    incarnations: dict[int, Incarnation] = field(default_factory=dict)
    predecessors: list[Incarnation] = field(default_factory=list)
    owners: dict[int, int] = field(default_factory=dict)
    # what each refresh_owners() finds, in turn (the last one stays)
    owner_reads: list[dict[int, int]] = field(default_factory=list)

    def live_nodes(self) -> list[Node]:
        return [ME, PEER]

    def members_to_watch(self, fresh_s: float) -> list[Node]:
        return [PEER]

    def catch_up_directory(self, timeout_s: float) -> None:
        pass

    def refresh_owners(self) -> None:
        if self.owner_reads:
            self.owners = self.owner_reads.pop(0) if len(self.owner_reads) > 1 else self.owner_reads[0]


def watch(placement: FakePlacement, refused: set[int], answers: list[int | None]) -> tuple[PeerWatch, list[str]]:
    removed: list[str] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        removed.append(str(incarnation.member_id))
        return answers.pop(0) if answers else 0

    w = PeerWatch(placement, remove, probe=lambda host, port: port in refused)  # type: ignore[arg-type]
    return w, removed


def test_a_peer_is_removed_once_at_its_first_refusal_and_never_while_it_answers() -> None:
    # A refusal means nothing listens at the address, which a live (even a paused) process never
    # causes: the first one removes the peer, and only once.
    placement = FakePlacement(incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")})
    refused: set[int] = set()
    w, removed = watch(placement, refused, [])
    for _ in range(3):
        w.check()
    assert removed == []
    refused.add(9001)
    assert REFUSALS == 1
    w.check()
    assert removed == ["m-2"]
    for _ in range(3):
        w.check()
    assert removed == ["m-2"]


def _placement() -> Placement:
    config = PlacementConfig("log", "placement", "directory", None, 6000, 600, "roundrobin", 1000)
    placement = Placement({}, config, ME, lambda shards: None, lambda shards, lost: None)
    placement.nodes = {1: ME, 2: PEER, 3: Node(3, "127.0.0.1", 9003), 4: Node(4, "127.0.0.1", 9004)}
    return placement


def test_a_process_that_joined_is_watched_before_it_announces_any_shard() -> None:
    """A process assigned shards and killed before it committed its ownership holds them until it
    is removed: it is watched from the directory entry that names its member (while fresh)."""
    placement = _placement()
    now = time.time()
    placement.owners = {0: 2}
    placement.incarnations = {
        2: Incarnation("owner", "m-2", None, "boot", "127.0.0.1:9001", now - 3600),
        3: Incarnation("joined", "m-3", None, "boot", "127.0.0.1:9003", now - 1),
        4: Incarnation("stale", "m-4", None, "boot", "127.0.0.1:9004", now - 3600),
    }
    assert [n.node_id for n in placement.members_to_watch(FRESH_S)] == [2, 3]
    # Not yet in the group (no member id): nothing to remove.
    placement.incarnations[3] = Incarnation("starting", None, None, "boot", "127.0.0.1:9003", now)
    assert [n.node_id for n in placement.members_to_watch(FRESH_S)] == [2]


def test_static_members_and_unknown_members_are_left_to_the_session_timeout() -> None:
    static = FakePlacement(incarnations={2: Incarnation("theirs", "m-2", "instance-2", "boot", "127.0.0.1:9001")})
    w, removed = watch(static, {9001}, [])
    unknown = FakePlacement(incarnations={2: Incarnation("theirs", None, None, "boot", "127.0.0.1:9001")})
    w2, removed2 = watch(unknown, {9001}, [])
    for _ in range(5):
        w.check()
        w2.check()
    assert removed == [] and removed2 == []


def test_a_removal_the_cluster_could_not_take_is_tried_again() -> None:
    placement = FakePlacement(incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")})
    w, removed = watch(placement, {9001}, [None, 0])
    for _ in range(REFUSALS + 1):
        w.check()
    assert removed == ["m-2", "m-2"]


def test_only_a_predecessor_on_this_machine_and_address_is_removed() -> None:
    placement = FakePlacement(
        predecessors=[
            Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000"),
            Incarnation("elsewhere", "m-elsewhere", None, "other-boot", "127.0.0.1:9000"),
            Incarnation("other-port", "m-other-port", None, "boot", "127.0.0.1:9005"),
        ]
    )
    w, removed = watch(placement, set(), [])
    w.check()
    w.check()
    assert removed == ["m-old"]


def answers(host: str, port: int) -> bool:
    return False


def test_a_restarted_process_removes_its_predecessor_and_waits_for_the_others_to_take_over() -> None:
    placement = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
        # The predecessor (node 1) still announces shard 0; then node 2 has taken it over.
        owner_reads=[{0: 1, 1: 2}, {0: 1, 1: 2}, {0: 2, 1: 2}],
    )
    removed: list[str] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        removed.append(str(incarnation.member_id))
        return 0

    assert await_takeover(placement, remove, timeout_s=10, poll_s=0, probe=answers)  # type: ignore[arg-type]
    assert removed == ["m-old"]
    assert placement.owners == {0: 2, 1: 2}


def test_a_process_without_a_predecessor_or_peers_joins_at_once() -> None:
    assert not await_takeover(FakePlacement(), lambda i, w: 0, timeout_s=10, probe=answers)  # type: ignore[arg-type]
    # Alone: nobody else announces a shard, so there is nobody to wait for.
    alone = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")], owner_reads=[{0: 1, 1: 1}]
    )
    assert await_takeover(alone, lambda i, w: 0, timeout_s=10, poll_s=0, probe=answers)  # type: ignore[arg-type]


def test_no_process_joins_while_a_dead_process_still_announces_shards() -> None:
    """A join starts a rebalance; one started just as a peer removes a dead leader stalls the local
    broker's group for good: a process joins once the dead one's shards are announced by others."""
    placement = FakePlacement(owner_reads=[{0: 2, 1: 2}, {0: 2, 1: 2}, {0: 3, 1: 3}])
    probes: list[int] = []

    def refused_while_announced(host: str, port: int) -> bool:
        probes.append(port)
        return True  # node 2 is dead: its port refuses for good

    def live() -> list[Node]:
        return [ME, *([PEER] if 2 in placement.owners.values() else [])]

    placement.live_nodes = live  # type: ignore[method-assign]
    assert await_takeover(placement, lambda i, w: 0, timeout_s=10, poll_s=0, probe=refused_while_announced)  # type: ignore[arg-type]
    assert placement.owners == {0: 3, 1: 3}
    assert probes == [9001, 9001]


def test_nobody_waits_on_a_process_that_stopped_cleanly_and_withdrew() -> None:
    """A graceful stop ends with a withdrawn directory entry (``Placement.withdraw``): the owners
    still name it until the others' rebalance completes, but a process restarted in its place, or
    started beside it, joins at once: no removal, no wait for the others to announce its shards."""
    withdrawn = Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000", withdrawn=True)
    restarted = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000"), withdrawn],
        owner_reads=[{0: 1, 1: 2}],  # the predecessor (node 1) still announces shard 0
    )
    removed: list[str] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        removed.append(str(incarnation.member_id))
        return 0

    assert not await_takeover(restarted, remove, timeout_s=10, poll_s=0, probe=answers)  # type: ignore[arg-type]
    assert removed == []
    # A peer that still announces shards and refuses connections, but withdrew: neither waited
    # on nor removed. (Without its withdrawal both happen: the test above and the next one.)
    beside = FakePlacement(
        incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001", withdrawn=True)},
        owner_reads=[{0: 2, 1: 2}],
    )
    assert not await_takeover(beside, remove, timeout_s=10, poll_s=0, probe=lambda host, port: True)  # type: ignore[arg-type]
    w, removed_by_watch = watch(beside, {9001}, [])
    w.check()
    assert removed == [] and removed_by_watch == []


def test_only_a_withdrawn_true_in_a_directory_entry_is_a_withdrawal() -> None:
    entry = {"host": "127.0.0.1", "port": 9001, "incarnation": "i", "member": "m", "withdrawn": True}
    assert _incarnation(entry) == Incarnation("i", "m", withdrawn=True)
    assert _incarnation({**entry, "withdrawn": "yes"}) == Incarnation("i", "m")
    del entry["withdrawn"]
    assert _incarnation(entry) == Incarnation("i", "m")
