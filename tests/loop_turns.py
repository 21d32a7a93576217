"""How many turns another task gets on the event loop while a piece of async work runs: what
tests of long answers (listings, sorts, encodings, ACL filters) check to show that they yield."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


def turns_while(work: Callable[[], Awaitable[Any]]) -> tuple[Any, int]:
    """``work``'s result, and how many turns another task had while it ran (on a fresh loop)."""
    turns = 0
    done = False

    async def other_client() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    async def run() -> tuple[Any, int]:
        nonlocal done
        ticking = asyncio.create_task(other_client())
        await asyncio.sleep(0)
        before = turns
        try:
            result = await work()
        finally:
            done = True
        during = turns - before
        await ticking
        return result, during

    return asyncio.run(run())
