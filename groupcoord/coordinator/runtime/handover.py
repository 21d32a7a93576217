"""A graceful stop hands its shards to named successors before the placement rebalance (issue #26, item 5).

Without it a stopping process leaves the placement group and its shards wait for the cluster's
rebalance, which on the local broker (Tansu) ends half the rebalance timeout after it began
(3 s or more at a 6 s session timeout), whoever has rejoined. Instead the stopping process, once
its shards have stopped serving (pending writes failed, nothing more acknowledged), writes its
directory entry again with a ``handover``: for each shard it held, the process (node id and
incarnation) that takes it now. That process loads the shard at once, as it would on an assignment:
its load reads the log to its end, which holds every write the old owner acknowledged (a write is
acknowledged only once read back), and claims a new shard epoch, which fences anything the old
owner might still get into the log. Every process routes the shard to the successor meanwhile. The
placement rebalance that the stopping process's LeaveGroup starts then confirms the move: the
successor was chosen as the one that rebalance will pick (below), and whatever it picks otherwise
moves the shard once more, fenced by epochs as any move is. Once it has left the group, the stopping
process writes its entry a last time, ``withdrawn`` (the handover kept): nobody waits on it or
removes it from then on (``peers.await_takeover``, ``Placement.withdraw``).

What keeps a handover from acting twice or late:

- only the successor named by its *incarnation* takes a shard, so a stale entry read back from the
  directory (a process started later, or one restarted on the same address) never does;
- the successor takes a shard only while the placement owners still name the stopping process for
  it (read again just before): once the rebalance has given it to someone, that one announced it;
- routing follows a handover only while the owners still name the stopping process, and only until
  this process's next assignment (a completed rebalance: its owners are the truth again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Successor:
    node_id: int
    incarnation: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True)
class Handover:
    """One shard of a stopping process (``leaver``, its incarnation) and who takes it."""

    leaver: int
    leaver_incarnation: str
    successor: int
    successor_incarnation: str


def choose_successors(shards: list[int], candidates: list[Successor]) -> dict[int, Successor]:
    """Who takes each shard: the choice of an eager ``roundrobin`` rebalance among the remaining
    members (librdkafka's: members sorted by member id, partition k to the (k mod n)-th), so that the
    rebalance which follows leaves the shard where it is; by node id where a member id is unknown."""
    if not candidates:
        return {}
    if all(c.member_id is not None for c in candidates):
        ordered = sorted(candidates, key=lambda c: str(c.member_id))
    else:
        ordered = sorted(candidates, key=lambda c: c.node_id)
    return {p: ordered[p % len(ordered)] for p in sorted(shards)}


def encode(successors: dict[int, Successor]) -> dict[str, Any]:
    """The ``handover`` field of a directory entry."""
    return {str(p): {"node": s.node_id, "incarnation": s.incarnation} for p, s in successors.items()}


def decode(leaver: int, leaver_incarnation: str, field: Any) -> dict[int, Handover]:
    """A directory entry's ``handover`` field; anything malformed in it is left out."""
    out: dict[int, Handover] = {}
    if not isinstance(field, dict):
        return out
    for key, value in field.items():
        try:
            partition = int(key)
            out[partition] = Handover(leaver, leaver_incarnation, int(value["node"]), str(value["incarnation"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out
