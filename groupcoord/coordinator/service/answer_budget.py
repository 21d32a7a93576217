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
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TypeVar

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


async def take_in_slices(items: Iterator[A]) -> list[A]:
    """Every item of a lazy listing, letting the event loop run every ``YIELD_EVERY_SECONDS``."""
    out: list[A] = []
    yielded_at = time.perf_counter()
    for count, item in enumerate(items, 1):
        out.append(item)
        if count % 256 == 0 and time.perf_counter() - yielded_at >= YIELD_EVERY_SECONDS:
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
