"""Whether placement has settled, as ``/readyz`` reports it.

A process whose listener is bound and whose own shards are loaded can still be unable to serve:
when the placement group never completes a rebalance (seen on the local broker after graceful
restarts: the placement consumer's session wedged and no process was ever assigned anything), no
shard has an owner, every FindCoordinator is answered COORDINATOR_NOT_AVAILABLE, and yet each
process owns nothing and so had every owned shard "active". Readiness now also asks that:

- the placement group's coordinator answered within the session (``Placement.in_contact``): out
  of contact, this process has stopped its own shards and knows nothing current of the others';
- no shard has been without a known owner for longer than ``settle_s``. Shards are ownerless for
  a while in every rebalance (a peer killed with -9: its session, then the rebalance), so only an
  ownerless spell longer than a start-up's own bound (three sessions and ten seconds, the time
  ``serve`` waits for its first assignment) counts.
"""

from __future__ import annotations

from collections.abc import Sequence


def settle_bound_s(session_timeout_s: float) -> float:
    """How long placement may take to give every shard an owner: also how long ``serve`` waits
    for its first assignment before it reports readiness at all."""
    return 3 * session_timeout_s + 10


class PlacementHealth:
    """Folds successive looks at placement into a readiness problem (None: settled). Pure: the
    caller passes the clock."""

    def __init__(self, settle_s: float, started: float | None = None) -> None:
        """``started``: when the process began waiting for placement; shards found ownerless at
        the first look count as ownerless since then."""
        self.settle_s = settle_s
        self._unowned_since: float | None = started
        # Whether the last look found shards ownerless past ``settle_s`` (whatever the contact).
        self.unsettled = False

    def look(self, unowned: Sequence[int], silent_s: float, session_s: float, now: float) -> str | None:
        """``unowned``: the shards no process is known to own; ``silent_s``: seconds since the
        placement group's coordinator last answered; ``now``: a monotonic clock."""
        if not unowned:
            self._unowned_since = None
        elif self._unowned_since is None:
            self._unowned_since = now
        self.unsettled = self._unowned_since is not None and now - self._unowned_since > self.settle_s
        if silent_s > session_s:
            return (
                f"no answer from the placement group's coordinator for {silent_s:.0f}s "
                f"(session {session_s:g}s): this process serves no shard until it has one"
            )
        if self.unsettled:
            assert self._unowned_since is not None
            shards = ", ".join(str(p) for p in unowned[:16]) + (", ..." if len(unowned) > 16 else "")
            return (
                f"{len(unowned)} shard(s) without an owner for {now - self._unowned_since:.0f}s "
                f"(placement has not settled): {shards}"
            )
        return None
