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
  because the predecessor no longer listens there.

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

# A refusal is the kernel saying nobody listens at the peer's address, which a live process (even
# a paused one) never causes: one is enough, and probes a quarter second apart notice a kill within
# about that. (A probe is a TCP connect that the peer's gateway accepts and sees closed at once.)
PROBE_INTERVAL_S = 0.25
PROBE_TIMEOUT_S = 0.5
REFUSALS = 1  # in a row, PROBE_INTERVAL_S apart
# How long a directory entry naming a member makes its process watched before it announces shards.
FRESH_S = 60.0


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
      that moment.

    Neither waits on a process that withdrew (``Placement.withdraw``): it stopped cleanly, handed its
    shards over and left the group, so it holds nothing though the owners name it until the others'
    rebalance completes (as a Kafka broker shut down cleanly resigns its partitions at once, and only
    a crashed one's partitions wait for its session to time out)."""
    placement.catch_up_directory(5.0)
    gone = replaced_predecessors(placement)
    restarted = bool(gone)
    me = placement.me.node_id
    deadline = time.monotonic() + timeout_s
    while gone and time.monotonic() < deadline:
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
    while time.monotonic() < deadline:
        placement.refresh_owners()
        owners = placement.owners
        # A restarted process's shards are taken over once none is still announced by this node
        # id (the predecessor), or when no other process announces any (nobody else to take them).
        taken = not restarted or not any(n == me for n in owners.values()) or all(n == me for n in owners.values())
        dying = [n for n in placement.live_nodes()[1:] if not withdrew(placement, n) and probe(n.host, n.port)]
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
