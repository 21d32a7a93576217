"""How much one group read request may make this process build and send.

Read APIs that name groups in a list (ConsumerGroupDescribe, DescribeGroups, OffsetFetch v8+,
DeleteGroups) answer every entry, as Kafka does, duplicates included: every occurrence of a group
gets the one answer computed for it. What is sent is still one copy per entry, so each group is
charged its size times its occurrences against the budget of the request before its answer is
built, from an upper bound computed from the group's state (members x their strings and
assignments, offsets x their metadata). A group whose copies would take the answer over the
budget is answered with UNKNOWN_SERVER_ERROR (with a message where the API has one) in every
occurrence: the rest of the request is answered, and a client that asked for one huge group
learns why it got nothing. All occurrences get the same answer, so that whoever maps the answers
back by group id (the authorizing handler does) sends exactly what was charged. Kafka has no
such bound (its answers are limited by what the group holds); a few hundred bytes of request
naming one large group a hundred times made this process build gigabytes (review S3).

Building yields to the event loop after every ``YIELD_EVERY_BYTES``, and after ``YIELD_EVERY_SECONDS``
of building, so that one large answer (a megabyte of one group, or thousands of small ones) does
not hold up every other connection, the placement consumer's heartbeats and the shards' timers.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)
E = TypeVar("E")
A = TypeVar("A")

# In line with what clients accept: librdkafka refuses an answer over receive.message.max.bytes
# (100,000,000 by default), and Kafka's own socket.request.max.bytes is 100 MiB.
DEFAULT_MAX_ANSWER_BYTES = 32 * 1024 * 1024
YIELD_EVERY_BYTES = 1024 * 1024
# A heartbeat waits at most about this long behind one request's answer being built.
YIELD_EVERY_SECONDS = 0.002


class AnswerBudget:
    """The bytes one request's answer may still take."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._since_yield = 0
        self._yielded_at = time.perf_counter()

    def admit(self, size: int) -> bool:
        """Charge an entry of (at most) ``size`` bytes; False, and nothing charged, if it does not fit."""
        if self.used + size > self.limit:
            return False
        self.used += size
        self._since_yield += size
        return True

    def refusal(self, group_id: str, size: int) -> str:
        return (
            f"The answer for group {group_id} (about {size} bytes, every time it is named) would take "
            f"this response over {self.limit} bytes (gateway.max_group_response_bytes); ask for fewer groups at once."
        )

    async def pause(self) -> None:
        """Let the event loop run if enough was built, or long enough, since it last did."""
        if self._since_yield >= YIELD_EVERY_BYTES or time.perf_counter() - self._yielded_at >= YIELD_EVERY_SECONDS:
            self._since_yield = 0
            await asyncio.sleep(0)
            self._yielded_at = time.perf_counter()


# Items taken between two looks at the clock.
_CHECK_EVERY = 256
# Lists up to this long are sorted in one go (a few milliseconds at most).
SORTED_AT_ONCE = 4096


async def take_in_slices(items: Iterator[A | None]) -> list[A]:
    """Every item of a lazy listing, letting the event loop run every ``YIELD_EVERY_SECONDS``.
    A None is an item the listing looked at and left out (a filter's miss): not taken, but
    counted, so that a filter that keeps few items still lets the loop run while it looks."""
    out: list[A] = []
    append = out.append
    yielded_at = time.perf_counter()
    for count, item in enumerate(items, 1):
        if item is not None:
            append(item)
        if count % _CHECK_EVERY == 0 and time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
            await asyncio.sleep(0)
            yielded_at = time.perf_counter()
    return out


async def kept_in_slices(items: Iterable[A], keep: Callable[[A], bool]) -> list[A]:
    """``[i for i in items if keep(i)]``, letting the event loop run every ``YIELD_EVERY_SECONDS``
    (an ACL check of each of 100,000 listed groups is far longer than that)."""
    return await take_in_slices(item if keep(item) else None for item in items)


async def sorted_in_slices(items: list[A], key: Callable[[A], Any]) -> list[A]:
    """``sorted(items, key=key)``, the same list, letting the event loop run every
    ``YIELD_EVERY_SECONDS``: one sort of 100,000 group ids held the loop 20-100 ms (more the less
    ordered they are). A sample sort: the keys are dealt into buckets bounded by keys sampled
    evenly from them, each bucket sorted on its own, the buckets taken in order. Equal keys land
    in one bucket in their order in ``items`` and each bucket's sort is stable, so the result is
    the stable sort's. Keys spread unevenly only make some buckets larger (one bucket at worst:
    the sort in one go)."""
    if len(items) <= SORTED_AT_ONCE:
        return sorted(items, key=key)
    keys: list[Any] = []
    yielded_at = time.perf_counter()
    for at in range(0, len(items), SORTED_AT_ONCE):
        keys.extend(map(key, items[at : at + SORTED_AT_ONCE]))
        if time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
            await asyncio.sleep(0)
            yielded_at = time.perf_counter()
    splitters = sorted(set(keys[:: SORTED_AT_ONCE // 4]))
    buckets: list[list[int]] = [[] for _ in range(len(splitters) + 1)]
    deal = [bucket.append for bucket in buckets]
    for index, at in enumerate(map(partial(bisect_right, splitters), keys)):
        deal[at](index)
        if index % _CHECK_EVERY == 0 and time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
            await asyncio.sleep(0)
            yielded_at = time.perf_counter()
    out: list[A] = []
    by_index = keys.__getitem__
    for bucket in buckets:
        bucket.sort(key=by_index)
        out.extend(map(items.__getitem__, bucket))
        if time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
            await asyncio.sleep(0)
            yielded_at = time.perf_counter()
    return out


def first_occurrences(keys: Iterable[K]) -> list[K]:
    """The keys in request order, each once."""
    return list(dict.fromkeys(keys))


async def answer_each(
    entries: list[E],
    key: Callable[[E], Hashable],
    build: Callable[[E], tuple[int, A]],
    refuse: Callable[[E, str], A],
    limit: int,
) -> list[A]:
    """One answer per entry: ``build(entry)`` gives (upper bound of its size, its answer) once per
    distinct ``key``, answered in every occurrence if all of them fit in the budget, else
    ``refuse(entry, message)`` in every occurrence. A group larger than ``limit`` should be
    answered by ``build`` with its size only (it is refused without being built)."""
    budget = AnswerBudget(limit)
    counts = Counter(map(key, entries))
    answers: dict[Hashable, A] = {}
    for entry in entries:
        k = key(entry)
        if k in answers:
            continue
        size, answer = build(entry)
        total = size * counts[k]
        answers[k] = answer if budget.admit(total) else refuse(entry, budget.refusal(str(k), total))
        await budget.pause()
    return [answers[key(entry)] for entry in entries]
