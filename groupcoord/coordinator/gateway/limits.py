"""Bounds on what clients can make the gateway hold: bytes buffered, elements per request, message sizes.

``ByteBudget`` is a counting semaphore in bytes. The gateway has one for all connections (partial
request frames and forwarded answers not yet written) and one per connection (forwarded answers);
a reader that cannot get budget simply stops reading, so TCP pushes back on the sender.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import fields, is_dataclass
from typing import Any

from groupcoord.coordinator.messages.offset_commit_columns import COLUMNAR_STRUCTS

# Error messages are truncated to this many characters before they are sent back: a refusal
# should never echo a megabyte regex or group id to the client.
MAX_ERROR_MESSAGE_CHARS = 512


class ByteBudget:
    """Up to ``capacity`` bytes held at once; waiters of one kind are served first come, first served.

    ``reserve`` bytes are kept for small requests (at most ``small`` bytes each): large ones can
    only fill ``capacity - reserve``, so clients holding large partial frames cannot make an
    ordinary small request wait for their read deadline. A request for more than a kind's limit
    is granted that limit, so one large frame still passes (alone) instead of waiting forever.
    """

    def __init__(self, capacity: int, reserve: int = 0, small: int = 1 << 20) -> None:
        self.capacity = capacity
        self.reserve = min(reserve, capacity // 2)
        self.small = small
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def _limit(self, n: int) -> int:
        return self.capacity if n <= self.small else self.capacity - self.reserve

    def grant_for(self, n: int) -> int:
        n = max(n, 0)
        return min(n, self._limit(n))

    def try_acquire(self, n: int) -> int | None:
        """Take ``grant_for(n)`` bytes if they are free now (and no one of that kind waits)."""
        n = self.grant_for(n)
        limit = self._limit(n)
        if self.used + n > limit or (self._waiters and any(self._limit(w) == limit for w, _ in self._waiters)):
            return None
        self.used += n
        return n

    async def acquire(self, n: int) -> int:
        """Wait until ``grant_for(n)`` bytes are free, take them, and return that amount."""
        taken = self.try_acquire(n)
        if taken is not None:
            return taken
        n = self.grant_for(n)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if entry in self._waiters:
                self._waiters.remove(entry)
            elif fut.done() and not fut.cancelled():
                # Granted just as we were cancelled: give it back.
                self.release(n)
            raise
        return n

    def release(self, n: int) -> None:
        self.used = max(0, self.used - n)
        blocked: set[int] = set()
        for entry in list(self._waiters):
            wanted, fut = entry
            limit = self._limit(wanted)
            if fut.done():
                self._waiters.remove(entry)
                continue
            if limit in blocked:
                continue  # an earlier waiter of this kind is still waiting: keep the order
            if self.used + wanted > limit:
                blocked.add(limit)
                continue
            self._waiters.remove(entry)
            self.used += wanted
            fut.set_result(None)


class ConnectionBudget:
    """One connection's share: bytes count against its own budget and the global one.

    Everything still held when the connection closes is returned to the global budget, so a
    client that disconnects with unread answers leaks nothing.
    """

    def __init__(self, own: ByteBudget, shared: ByteBudget) -> None:
        self.own = own
        self.shared = shared
        self.held_own = 0
        self.held_shared = 0

    async def acquire(self, n: int) -> tuple[int, int]:
        mine = await self.own.acquire(n)
        self.held_own += mine
        try:
            theirs = await self.shared.acquire(n)
        except BaseException:
            self.release((mine, 0))
            raise
        self.held_shared += theirs
        return mine, theirs

    def try_acquire(self, n: int) -> bool:
        """Take ``n`` bytes' grants from both budgets if both have them free now."""
        mine = self.own.try_acquire(n)
        if mine is None:
            return False
        theirs = self.shared.try_acquire(n)
        if theirs is None:
            self.own.release(mine)
            return False
        self.held_own += mine
        self.held_shared += theirs
        return True

    def release(self, grant: tuple[int, int]) -> None:
        mine, theirs = grant
        mine, theirs = min(mine, self.held_own), min(theirs, self.held_shared)
        self.held_own -= mine
        self.held_shared -= theirs
        self.own.release(mine)
        self.shared.release(theirs)

    def release_for(self, n: int) -> None:
        """Release what ``acquire(n)`` took (grants are a pure function of ``n``)."""
        self.release((self.own.grant_for(n), self.shared.grant_for(n)))

    def close(self) -> None:
        self.release((self.held_own, self.held_shared))


def count_elements(value: Any, limit: int) -> int:
    """Array elements in a decoded message, nested arrays included; stops counting past ``limit``."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            total += len(item)
            if total > limit:
                return total
            stack.extend(x for x in item if isinstance(x, list) or is_dataclass(x))
        elif type(item) in COLUMNAR_STRUCTS and item.columns is not None:
            # An array held as columns (``messages/offset_commit_columns``): its length, without
            # making the objects; the struct holds no other array.
            total += len(item.columns[0])
            if total > limit:
                return total
        else:
            for name in _nested_fields(type(item)):
                child = getattr(item, name)
                if child is not None:
                    stack.append(child)
    return total


_NESTED: dict[type, tuple[str, ...]] = {}


def _nested_fields(cls: type) -> tuple[str, ...]:
    """The fields of a message class that may hold arrays (arrays and structs), from its schema
    once: ``dataclasses.fields`` and ``is_dataclass`` on every field of every request were a
    twentieth of a steady heartbeat's serve CPU (profiled). A dataclass without a schema: all
    of its fields; anything else: none."""
    names = _NESTED.get(cls)
    if names is None:
        schema = getattr(cls, "SCHEMA", None)
        if schema is not None:
            names = tuple(f.name for f in schema if f.kind in ("array", "struct"))
        else:
            names = tuple(f.name for f in fields(cls)) if is_dataclass(cls) else ()
        _NESTED[cls] = names
    return names


def truncate_error_messages(value: Any, limit: int = MAX_ERROR_MESSAGE_CHARS) -> None:
    """Shorten every ``error_message`` string field of a response, in place. Only the fields that
    can lead to one are walked (``_message_paths``): a ListGroups answer of 100,000 groups has
    none below its top, a DescribeGroups answer none below its groups."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        for name, kind in _message_paths(type(item)):
            child = getattr(item, name)
            if kind == "message":
                if isinstance(child, str) and len(child) > limit:
                    setattr(item, name, child[:limit] + "...")
            elif child is not None:
                stack.append(child)


_PATHS: dict[type, tuple[tuple[str, str], ...]] = {}


def _message_paths(cls: type) -> tuple[tuple[str, str], ...]:
    """(field, "message" | "nested") for each field of a message class that is an error message
    or holds structs with one somewhere below; taken from the class's schema once."""
    paths = _PATHS.get(cls)
    if paths is not None:
        return paths
    schema = getattr(cls, "SCHEMA", None)
    if schema is None:  # not a generated message: every dataclass field may lead to one
        _PATHS[cls] = paths = (
            tuple((f.name, "message" if f.name == "error_message" else "nested") for f in fields(cls))
            if is_dataclass(cls)
            else ()
        )
        return paths
    _PATHS[cls] = ()  # a struct holding itself adds nothing more
    found = []
    for f in schema:
        if f.name == "error_message":
            found.append((f.name, "message"))
        elif f.struct is not None and _message_paths(f.struct):
            found.append((f.name, "nested"))
    _PATHS[cls] = paths = tuple(found)
    return paths
