"""ShareFetches waiting in their MaxWaitMs for records to acquire, woken when some may be had.

A ShareFetch that could acquire nothing (the in-flight window full, every record acquired by
other members) waits until a share-partition of its session has records to acquire again:
released, a lock expired, the window's oldest records acknowledged, a member gone. The shard's
operations report those (``ShareDataState.listener``, called by every operation on the
share-partitions it left acquirable); the waiting fetch then tries again at once rather than on
a poll interval. New records in the log are waited for by the broker's own fetch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from groupcoord.coordinator.share.shard_ops import ShareDataState
from groupcoord.coordinator.share.state import SharePartitionKey


class ShareWaiters:
    def __init__(self) -> None:
        self._waiting: dict[SharePartitionKey, set[asyncio.Future[None]]] = {}

    def register(self, keys: Iterable[SharePartitionKey]) -> asyncio.Future[None]:
        """A future done once one of ``keys`` is reported acquirable (``unregister`` it after)."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for key in keys:
            self._waiting.setdefault(key, set()).add(woken)
        return woken

    def unregister(self, keys: Iterable[SharePartitionKey], woken: asyncio.Future[None]) -> None:
        for key in keys:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(woken)
                if not waiting:
                    del self._waiting[key]

    def notify(self, key: SharePartitionKey) -> None:
        for woken in self._waiting.pop(key, ()):
            if not woken.done():
                woken.set_result(None)

    def listen(self, state: ShareDataState) -> None:
        """Hear of ``state``'s share-partitions (a shard's live state, new after each load)."""
        state.listener = self.notify
