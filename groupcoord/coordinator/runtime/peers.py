"""Noticing a dead peer before the placement group's session timeout does (issue #26, item 5).

A process killed with -9 stays a member of the placement group until its session times out, and
its shards are served by nobody meanwhile. The processes know each other (placement's owners and
the directory), so each one probes the listeners of the others and, once the kernel itself says a
listener is gone, asks the cluster to remove that process's member from the group (LeaveGroup on
its behalf, ``groupcoord/coordinator/gateway/member_removal.py``): the group rebalances at once, as it would
at the session timeout.

What counts as dead is deliberately narrow, because a paused process must never be taken for dead
while it can still write (docs/operations.md, "Fast failover"):

- the peer's advertised address **refuses** the connection (a TCP reset) on a probe.
  A stopped (SIGSTOP) or busy process still holds its listening socket, and the kernel completes
  connections to it (or drops them once its backlog is full: a timeout); a partitioned or unreachable
  host times out or is unreachable. None of these is a refusal, so none of them is acted on; the
  session timeout deals with them as before;
- a process started on the very address of an earlier one (same machine by the kernel's boot id,
  same bound listener address) removes its predecessor's member: it could bind that address only
  because the predecessor no longer listens there. Its peers do as well, from its directory entry,
  until it joins: its address answers again, so no refusal would remove that member.

Only dynamic members are removed. A static member (``group.instance.id``, used on clusters with a
modern group coordinator) that died keeps its shards until its session times out, so that a process
restarted at once gets them back without a rebalance (KIP-345); there a rebalance is quick, so the
session timeout is the whole wait.

Removing a member that is in fact alive costs a rebalance and nothing else: the shard epochs in
the log fence whatever it writes afterwards (DESIGN.md, "Many coordinator processes").
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from collections.abc import Callable

from groupcoord.coordinator.runtime.placement import Incarnation, Node, Placement

log = logging.getLogger(__name__)

# (the process's member to remove, why) -> the cluster's error code for it (0: removed), or None
# when the cluster could not be asked or the group was rebalancing (tried again at the next round).
RemoveCallback = Callable[[Incarnation, str], int | None]
# (the members to remove, why) -> member id -> the cluster's error code for it (0: removed), or None
# when nothing was removed (the group was rebalancing, or the cluster could not be asked).
RemoveManyCallback = Callable[[list[Incarnation], str], dict[str, int] | None]

# A refusal is the kernel saying nobody listens at the peer's address, which a live process (even
# a paused one) never causes: one is enough, and probes a quarter second apart notice a kill within
# about that. (A probe is a TCP connect that the peer's gateway accepts and sees closed at once.)
PROBE_INTERVAL_S = 0.25
PROBE_TIMEOUT_S = 0.5
REFUSALS = 1  # in a row, PROBE_INTERVAL_S apart
# How long a directory entry naming a member makes its process watched before it announces shards.
FRESH_S = 60.0
# How long a restarted process that finds another process gone too waits for the rest to show up
# gone (restarted at once, say) before it removes the members it knows to be dead.
RESTART_GRACE_S = 2.0


def refuses(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether ``host:port`` actively refuses a TCP connection (nobody listens there).
    A connection made, a timeout or any other failure (unreachable, no route, DNS) is not a refusal."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except ConnectionRefusedError:
        return True
    except OSError as exc:
        return exc.errno == errno.ECONNREFUSED


def replaced_predecessors(placement: Placement) -> list[Incarnation]:
    """Earlier processes of this node id whose address this process now holds (dynamic members).
    None once the latest of them withdrew: it stopped cleanly and left (any earlier one was its to
    remove, as this process's are now)."""
    me = placement.me_now
    if placement.predecessors and placement.predecessors[-1].withdrawn:
        return []
    return [
        p
        for p in placement.predecessors
        if p.member_id is not None
        and p.instance_id is None
        and p.boot_id
        and p.boot_id == me.boot_id
        and p.bound
        and p.bound == me.bound
    ]


def await_takeover(
    placement: Placement,
    remove: RemoveCallback,
    timeout_s: float,
    poll_s: float = 0.2,
    probe: Callable[[str, int], bool] = refuses,
    remove_many: RemoveManyCallback | None = None,
) -> bool:
    """Before this process joins placement (bounded by ``timeout_s``; returns whether it waited):

    - a restarted process removes its predecessor and lets the other processes take the
      predecessor's shards over first. A join while the others' rebalance is under way starts the
      broker's wait for members anew (on the local broker half the session timeout each time), and
      the shards would then go to this process, whose first loads are slow while it starts; the
      others, warm, serve them sooner. This process takes its share in the rebalance its own join
      starts afterwards;
    - any process waits while a process that announces shards refuses connections (it died, and a
      peer is removing it). A process's first JoinGroup starts a rebalance, and on the local broker
      (Tansu) a member removed in the moment between a peer's check that the group is ``Stable``
      and its LeaveGroup stays the leader of that rebalance if it was the leader: no rebalance of
      the placement group completes again (a drill of main saw it stall for 4.5 minutes, until the
      processes were stopped). Not joining while a removal is due keeps this process's join out of
      that moment. A process whose member the cluster says is out of the group (a removal answered
      UNKNOWN_MEMBER_ID, or removed here) is no removal due, though the owners still name it;
    - after a kill of every process (or of several at once) nobody may be left to take shards over:
      another process that announces shards and refuses connections, or whose address a restarted
      process holds that has not joined yet (``_dead_members``), is gone once the cluster says its
      members are out, and a restarted process does not wait for a takeover from processes that
      are all gone. It removes its predecessor together with the members every other process gone
      left, in one LeaveGroup: one at a time, the broker waits in the first one's rebalance for the
      rest, until its timeout (the session timeout), while nobody can be served. So that a process
      restarted an instant later is found gone too, it waits for that up to ``RESTART_GRACE_S``
      while another process is not known to be gone. Both removals only while the group is Stable,
      as any.

    Neither waits on a process that withdrew (``Placement.withdraw``): it stopped cleanly, handed its
    shards over and left the group, so it holds nothing though the owners name it until the others'
    rebalance completes (as a Kafka broker shut down cleanly resigns its partitions at once, and only
    a crashed one's partitions wait for its session to time out)."""
    placement.catch_up_directory(5.0)
    gone = replaced_predecessors(placement)
    restarted = bool(gone)
    me = placement.me.node_id
    deadline = time.monotonic() + timeout_s
    grace = time.monotonic() + min(RESTART_GRACE_S, timeout_s / 4)
    out: set[str] = set()  # members the cluster said are out of the group (or that were removed here)
    while gone and time.monotonic() < deadline:
        # Every process killed at once: the members the other dead processes left are removed in
        # the same LeaveGroup, so that the rebalance it starts waits for none of them.
        dead = list(gone)
        if remove_many is not None:
            placement.read_directory()  # (the others' entries: they may have been restarted at once too)
            placement.refresh_owners()
            mine = {g.member_id for g in gone}
            announcers = _announcers(placement)
            found = [_dead_members(placement, n, probe) for n in announcers]
            if any(f is None for f in found) and time.monotonic() < grace:
                # Another process is not known to be gone: it may have been restarted an instant
                # after this one and not be in the directory yet. (Removed one at a time, the
                # broker waits for the rest in the first one's rebalance, until its timeout.)
                time.sleep(poll_s)
                continue
            theirs = [i for f in found for i in f or []]
            dead += [i for i in theirs if i.member_id not in mine and i.instance_id is None]
        if remove_many is not None and len(dead) > 1:
            codes = remove_many(dead, "every process was gone: this one took over its predecessor's address")
            if codes is None:
                time.sleep(poll_s)  # not now (the group is rebalancing, or the cluster did not answer)
                continue
            out.update(codes)
            removed = [m for m, code in codes.items() if code == 0]
            if removed:
                log.warning("placement evicted the members of processes gone (%s) before joining", ", ".join(removed))
            break
        earlier = gone[0]
        code = remove(earlier, f"this process took over its address {earlier.bound}")
        if code is None:
            time.sleep(poll_s)  # not now (the group is rebalancing, or the cluster did not answer)
            continue
        gone.pop(0)
        if code == 0:
            log.warning("placement evicted this node's predecessor (member %s) before joining", earlier.member_id)
    waited = restarted
    said: set[int] = set()

    removed_here: set[str] = set()

    def left(incarnation: Incarnation, why: str) -> bool:
        """Whether the cluster says ``incarnation``'s (dynamic) member is out of the group: asked
        with a removal (only while the group is Stable). One this process removed just now is not
        taken for out: the others' rebalance its removal started is under way, and this process
        waits for its end, as for a peer's removal, by the owners (the rule above)."""
        member = incarnation.member_id
        if member is None or incarnation.instance_id is not None or member in removed_here:
            return False
        if member not in out:
            code = remove(incarnation, why)
            if code is None:
                return False  # not now (the group is rebalancing, or the cluster did not answer)
            if code == 0:
                removed_here.add(member)
                log.warning("placement evicted member %s before joining: %s", member, why)
                return False
            out.add(member)
        return True

    def out_now(node: Node, refused: bool) -> bool:
        """Whether no process behind ``node`` is in the group, so none can take shards over and no
        removal of one is due (``_dead_members``), as the cluster says."""
        dead = _dead_members(placement, node, lambda host, port: refused)
        why = f"node {node.node_id} at {node.host}:{node.port} is gone"
        return dead is not None and all([left(e, why) for e in dead])

    while time.monotonic() < deadline:
        placement.read_directory()
        placement.refresh_owners()
        owners = placement.owners
        others = _announcers(placement)
        refusing = {n.node_id for n in others if probe(n.host, n.port)}
        out_of_group = {n.node_id for n in others if out_now(n, n.node_id in refusing)}
        # A restarted process's shards are taken over once none is still announced by this node
        # id (the predecessor), or when no other process announces any, or none of those that do
        # is in the group (every process was killed: nobody else to take them).
        taken = (
            not restarted
            or not any(n == me for n in owners.values())
            or all(n == me for n in owners.values())
            or all(n.node_id in out_of_group for n in others)
        )
        # A process refusing connections whose member the cluster says is out is no removal due.
        dying = [n for n in others if n.node_id in refusing and n.node_id not in out_of_group]
        if taken and not dying:
            return waited
        for node in dying:
            if node.node_id not in said:
                said.add(node.node_id)
                log.info(
                    "placement: joining once node %d, whose listener %s:%d refuses connections, is out of the group",
                    node.node_id,
                    node.host,
                    node.port,
                )
        waited = True
        time.sleep(poll_s)
    return waited


def withdrew(placement: Placement, node: Node) -> bool:
    """Whether the process behind ``node``'s latest directory entry stopped cleanly and left."""
    incarnation = placement.incarnations.get(node.node_id)
    return incarnation is not None and incarnation.withdrawn


def _announcers(placement: Placement) -> list[Node]:
    """The other processes that announce shards, but for those that withdrew."""
    return [n for n in placement.live_nodes()[1:] if not withdrew(placement, n)]


def _dead_members(placement: Placement, node: Node, probe: Callable[[str, int], bool]) -> list[Incarnation] | None:
    """The members that processes behind ``node`` may have left in the placement group, when none of
    those processes can be alive in it; None when one may be. None is alive when ``node``'s
    address refuses connections (its members: its latest entry's and its earlier ones'), or when the
    latest process there has not joined (its entry names no member) and runs on the machine and
    address of every earlier one that did: it could bind the address only because they no longer
    listen there (as ``replaced_predecessors`` reasons for this process's own node id)."""
    latest = placement.incarnations.get(node.node_id)
    if latest is None:
        return None
    earlier = [e for e in placement.earlier.get(node.node_id, []) if e.member_id is not None and not e.withdrawn]
    if probe(node.host, node.port):
        return None if latest.member_id is None else [latest, *earlier]
    if latest.member_id is not None or not latest.boot_id or not latest.bound:
        return None  # a process there joined (or may have): it takes its part
    if not earlier or any(e.boot_id != latest.boot_id or e.bound != latest.bound for e in earlier):
        return None
    return earlier


class PeerWatch:
    def __init__(
        self,
        placement: Placement,
        remove: RemoveCallback,
        interval_s: float = PROBE_INTERVAL_S,
        probe: Callable[[str, int], bool] = refuses,
    ) -> None:
        self.placement = placement
        self._remove = remove
        self.interval_s = interval_s
        self._probe = probe
        self._refusals: dict[tuple[int, str], int] = {}  # (node id, incarnation) -> refusals in a row
        self._removed: set[str] = set()  # incarnations removed (or found gone) already
        self._deferred: set[str] = set()  # incarnations whose removal had to wait (said once)
        self.removals = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="peer-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check()
            except Exception as exc:  # the watch must outlive any one failed call
                log.warning("peer watch: %r", exc)

    def check(self) -> None:
        """One round: the predecessors of this process, then every peer that owns a shard."""
        placement = self.placement
        for earlier in replaced_predecessors(placement):
            self._removal(placement.me, earlier, f"this process took over its address {earlier.bound}")
        for node in placement.members_to_watch(FRESH_S):
            incarnation = placement.incarnations.get(node.node_id)
            if incarnation is not None and incarnation.member_id is None and not self._probe(node.host, node.port):
                # A process restarted on its address that has not joined yet: what its predecessors
                # left in the group goes now, not once that process has started (``_dead_members``).
                for earlier in _dead_members(placement, node, lambda host, port: False) or []:
                    self._removal(node, earlier, f"a process restarted on its address {earlier.bound} replaced it")
                continue
            if incarnation is None or incarnation.member_id is None or incarnation.incarnation in self._removed:
                continue
            if incarnation.withdrawn:
                continue  # it left the group itself: nothing to remove
            key = (node.node_id, incarnation.incarnation)
            if not self._probe(node.host, node.port):
                self._refusals.pop(key, None)
                continue
            self._refusals[key] = self._refusals.get(key, 0) + 1
            if self._refusals[key] >= REFUSALS:
                self._removal(node, incarnation, f"its listener {node.host}:{node.port} refuses connections")

    def _removal(self, node: Node, incarnation: Incarnation, why: str) -> None:
        if incarnation.member_id is None or incarnation.instance_id is not None:
            return  # not known yet, or static (see the module docstring)
        if incarnation.incarnation in self._removed:
            return
        self._removed.add(incarnation.incarnation)
        code = self._remove(incarnation, why)
        if code is None:
            self._removed.discard(incarnation.incarnation)  # tried again next round
            if incarnation.incarnation not in self._deferred:
                # (The drill's breakdown of a slow recovery reads this line.)
                self._deferred.add(incarnation.incarnation)
                log.info(
                    "placement removal of node %d (member %s) waits: the group is rebalancing or the cluster did "
                    "not answer (%s)",
                    node.node_id,
                    incarnation.member_id,
                    why,
                )
        elif code == 0:
            self.removals += 1
            log.warning(
                "placement evicted node %d (member %s): %s; its shards move now, not at the session timeout",
                node.node_id,
                incarnation.member_id,
                why,
            )
        else:  # not in the group any more (UNKNOWN_MEMBER_ID), or refused: the session timeout decides
            log.info(
                "placement did not evict member %s of node %d: error %d", incarnation.member_id, node.node_id, code
            )
