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
    earlier: dict[int, list[Incarnation]] = field(default_factory=dict)
    owners: dict[int, int] = field(default_factory=dict)
    # what each refresh_owners() finds, in turn (the last one stays)
    owner_reads: list[dict[int, int]] = field(default_factory=list)

    def live_nodes(self) -> list[Node]:
        return [ME, PEER]

    def members_to_watch(self, fresh_s: float) -> list[Node]:
        return [PEER]

    def catch_up_directory(self, timeout_s: float) -> None:
        pass

    def read_directory(self) -> None:
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


UNKNOWN_MEMBER = 25  # the cluster's answer to a removal of a member not in the group


def test_after_every_process_was_killed_a_restarted_one_does_not_wait_for_a_takeover_nobody_can_make() -> None:
    """Every process killed with -9, this one restarted first: the other owner (node 2) refuses
    connections and the cluster says its member is out of the group (its session timed out, or the
    rebalance this process's removal of its predecessor started dropped it). Nobody is left to take
    the predecessor's shards over, and no removal is due: join at once, not at the session timeout."""
    placement = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
        incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")},
        owner_reads=[{0: 1, 1: 2}],
    )
    asked: list[str] = []
    probes: list[int] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        asked.append(str(incarnation.member_id))
        return UNKNOWN_MEMBER

    def refused(host: str, port: int) -> bool:
        probes.append(port)
        return True

    assert await_takeover(placement, remove, timeout_s=30, poll_s=0, probe=refused)  # type: ignore[arg-type]
    assert asked == ["m-old", "m-2"]
    assert probes == [9001]  # one round


def test_after_every_process_was_killed_and_restarted_at_once_none_waits_for_the_others() -> None:
    """Every process killed and restarted at once: node 2's new process listens but has not joined
    (its entry names no member), on the address of its predecessor, whose member the cluster says is
    out. Nobody in the group can take this node's shards over: join at once."""
    placement = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
        incarnations={2: Incarnation("theirs-now", None, None, "boot", "127.0.0.1:9001")},
        earlier={2: [Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")]},
        owner_reads=[{0: 1, 1: 2}],
    )
    answers_: list[int | None] = [0, None, UNKNOWN_MEMBER]  # predecessor; then rebalancing; then out
    asked: list[str] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        asked.append(str(incarnation.member_id))
        return answers_.pop(0)

    assert await_takeover(placement, remove, timeout_s=30, poll_s=0, probe=answers)  # type: ignore[arg-type]
    assert asked == ["m-old", "m-2", "m-2"]


def test_a_restarted_process_still_waits_for_a_peer_that_is_in_the_group_or_may_be() -> None:
    """What the takeover wait is for: a peer that joined (its entry names a member), a peer on
    another machine or address, or one the cluster cannot say is out, takes the shards over first."""
    cases = [
        ({2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")}, {}, 0),  # joined, answers
        (
            {2: Incarnation("theirs-now", None, None, "boot", "127.0.0.1:9001")},
            {2: [Incarnation("theirs", "m-2", None, "other-boot", "127.0.0.1:9001")]},  # elsewhere
            UNKNOWN_MEMBER,
        ),
        (
            {2: Incarnation("theirs-now", None, None, "boot", "127.0.0.1:9001")},
            {2: [Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")]},
            None,  # the group rebalances: not known to be out
        ),
    ]
    for incarnations, earlier, code in cases:
        placement = FakePlacement(
            predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
            incarnations=incarnations,
            earlier=earlier,
            owner_reads=[{0: 1, 1: 2}],
        )
        started = time.monotonic()
        assert await_takeover(placement, lambda i, w, c=code: 0 if i.member_id == "m-old" else c, 0.3, 0.01, answers)  # type: ignore[arg-type,misc]
        assert time.monotonic() - started >= 0.3


def test_a_dead_process_the_cluster_says_is_out_of_the_group_is_no_removal_due() -> None:
    """The "no join while a removal is due" rule waits on a process that refuses connections only
    until the cluster says its member is out of the group (UNKNOWN_MEMBER_ID, or removed here): not
    until the owners stop naming it, which nobody changes when every process is down. While the
    cluster cannot say (the group rebalances), or its entry names no member, it still waits."""
    placement = FakePlacement(
        incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")}, owner_reads=[{0: 2, 1: 2}]
    )
    codes: list[int | None] = [None, None, UNKNOWN_MEMBER]
    assert await_takeover(placement, lambda i, w: codes.pop(0), timeout_s=30, poll_s=0, probe=lambda h, p: True)  # type: ignore[arg-type]
    assert codes == []
    for code, incarnation in [
        (None, Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")),
        (0, Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")),  # removed here: a rebalance is due
        (UNKNOWN_MEMBER, Incarnation("theirs", None, None, "boot", "127.0.0.1:9001")),
    ]:
        waiting = FakePlacement(incarnations={2: incarnation}, owner_reads=[{0: 2, 1: 2}])
        started = time.monotonic()
        assert await_takeover(waiting, lambda i, w, c=code: c, 0.3, 0.01, lambda h, p: True)  # type: ignore[arg-type,misc]
        assert time.monotonic() - started >= 0.3


def test_after_every_process_was_killed_the_dead_members_are_removed_in_one_leave_group() -> None:
    """One at a time, the broker waits in the first removal's rebalance for the other dead members
    until its timeout: a restarted process that finds every other owner gone removes their members
    with its predecessor's, once."""
    placement = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
        incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")},
        owner_reads=[{0: 1, 1: 2}],
    )
    single: list[str] = []
    batches: list[list[str]] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        single.append(str(incarnation.member_id))
        return UNKNOWN_MEMBER

    def remove_many(incarnations: list[Incarnation], why: str) -> dict[str, int] | None:
        batches.append([str(i.member_id) for i in incarnations])
        return {str(i.member_id): 0 for i in incarnations}

    assert await_takeover(placement, remove, 30, 0, lambda h, p: True, remove_many)  # type: ignore[arg-type]
    assert batches == [["m-old", "m-2"]]
    assert single == []  # node 2's member is known to be out: not asked again


def test_a_restarted_process_beside_a_live_one_removes_its_predecessor_alone_after_a_short_grace() -> None:
    placement = FakePlacement(
        predecessors=[Incarnation("older", "m-old", None, "boot", "127.0.0.1:9000")],
        incarnations={2: Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")},
        owner_reads=[{0: 1, 1: 2}, {0: 1, 1: 2}, {0: 2, 1: 2}],
    )
    single: list[str] = []
    batches: list[list[str]] = []

    def remove(incarnation: Incarnation, why: str) -> int | None:
        single.append(str(incarnation.member_id))
        return 0

    def remove_many(incarnations: list[Incarnation], why: str) -> dict[str, int] | None:
        batches.append([str(i.member_id) for i in incarnations])
        return {}

    started = time.monotonic()
    assert await_takeover(placement, remove, 0.4, 0.01, answers, remove_many)  # type: ignore[arg-type]
    assert single == ["m-old"] and batches == []
    assert time.monotonic() - started >= 0.1  # the grace: a quarter of the session timeout at most


def test_a_peer_removes_the_member_a_process_restarted_on_its_address_left() -> None:
    """A process restarted on the address of one that was killed, before it joins: the killed
    one's member goes at once (its address answers again, so no refusal would ever remove it)."""
    placement = FakePlacement(
        incarnations={2: Incarnation("theirs-now", None, None, "boot", "127.0.0.1:9001")},
        earlier={2: [Incarnation("theirs", "m-2", None, "boot", "127.0.0.1:9001")]},
    )
    w, removed = watch(placement, set(), [])
    w.check()
    w.check()
    assert removed == ["m-2"]
    elsewhere = FakePlacement(
        incarnations={2: Incarnation("theirs-now", None, None, "boot", "127.0.0.1:9001")},
        earlier={2: [Incarnation("theirs", "m-2", None, "other-boot", "127.0.0.1:9001")]},
    )
    w, removed = watch(elsewhere, set(), [])
    w.check()
    assert removed == []
