"""TargetIndex: counts over a group's target assignment, kept in step with it by replay.

The incremental uniform path (``uniform_incremental``) needs, without walking every partition:
how many partitions each member's target holds, which members hold a given number, and whether
every target partition is held once and only once. Replay updates the index record by record
(cost: the partitions of the one member whose target changed), so it always describes exactly
the target the log holds, on every process that loads the log.
"""

from __future__ import annotations

from collections.abc import Mapping

# A target partition at or above this number (or below 0) is not indexed: the index gives up for
# the group (the full assignor still runs) rather than grow a per-topic array without bound.
MAX_INDEXED_PARTITION = 1 << 17
_MAX_HOLDERS = 255


class TargetIndex:
    __slots__ = ("count", "by_count", "held", "distinct", "holdings", "distinct_total", "usable")

    def __init__(self) -> None:
        # member id -> partitions in its target; partitions -> members holding that many.
        self.count: dict[str, int] = {}
        self.by_count: dict[int, set[str]] = {}
        # topic id -> holders per partition (index = partition); distinct partitions held.
        self.held: dict[str, bytearray] = {}
        self.distinct: dict[str, int] = {}
        self.holdings = 0
        self.distinct_total = 0
        self.usable = True

    def replace(
        self,
        member_id: str,
        old: Mapping[str, frozenset[int]] | None,
        new: Mapping[str, frozenset[int]] | None,
    ) -> None:
        """The member's target went from ``old`` to ``new`` (None: no target)."""
        if not self.usable:
            return
        if old is not None:
            self._remove(member_id, old)
        if new is not None:
            self._add(member_id, new)

    def _add(self, member_id: str, parts: Mapping[str, frozenset[int]]) -> None:
        c = 0
        for t, ps in parts.items():
            h = self.held.get(t)
            if h is None:
                h = self.held[t] = bytearray()
                self.distinct[t] = 0
            if ps and (min(ps) < 0 or max(ps) >= MAX_INDEXED_PARTITION):
                self._give_up()
                return
            top = max(ps, default=-1)
            if top >= len(h):
                h.extend(bytes(top + 1 - len(h)))
            fresh = 0
            for p in ps:
                v = h[p]
                if v == _MAX_HOLDERS:
                    self._give_up()
                    return
                if v == 0:
                    fresh += 1
                h[p] = v + 1
            self.distinct[t] += fresh
            self.distinct_total += fresh
            c += len(ps)
        self.holdings += c
        self.count[member_id] = c
        self.by_count.setdefault(c, set()).add(member_id)

    def _remove(self, member_id: str, parts: Mapping[str, frozenset[int]]) -> None:
        c = self.count.pop(member_id)
        bucket = self.by_count[c]
        bucket.discard(member_id)
        if not bucket:
            del self.by_count[c]
        self.holdings -= c
        for t, ps in parts.items():
            h = self.held[t]
            gone = 0
            for p in ps:
                v = h[p] - 1
                h[p] = v
                if v == 0:
                    gone += 1
            left = self.distinct[t] - gone
            self.distinct_total -= gone
            if left:
                self.distinct[t] = left
            else:
                del self.held[t], self.distinct[t]

    def _give_up(self) -> None:
        self.usable = False
        self.count.clear()
        self.by_count.clear()
        self.held.clear()
        self.distinct.clear()
