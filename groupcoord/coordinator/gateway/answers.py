"""The pieces a connection's answers are made of, shared by the connection and the request paths
it hands work to (``gateway/group_configs.py``): a queued answer (``Slot``), the tasks that
produce them, and the exception that closes the connection instead."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any


class CloseConnection(Exception):
    """Stop serving this client; the message says why (logged once)."""


class IdleConnection(CloseConnection):
    """Closed for idleness: routine, logged at debug level."""


# A queued answer: either a whole frame ready to write, or an upstream payload still needing its
# length prefix (kept apart so large Fetch responses are never copied).
Slot = tuple[bool, Awaitable[bytes]]


def retrieve(task: asyncio.Future[Any]) -> None:
    # Answers still queued when a connection closes are never awaited; reading their outcome
    # keeps asyncio from reporting them as lost exceptions.
    if not task.cancelled():
        task.exception()


def spawn(coro: Coroutine[object, object, bytes]) -> asyncio.Task[bytes]:
    task = asyncio.create_task(coro)
    task.add_done_callback(retrieve)
    return task


def ready(data: bytes) -> Awaitable[bytes]:
    fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    fut.set_result(data)
    return fut
