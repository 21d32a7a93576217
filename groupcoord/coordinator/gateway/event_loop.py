"""Which asyncio event loop the sidecar runs on.

Forwarding is mostly event-loop turns (a socket read, a task wake-up, a write), which uvloop (libuv)
does in C. On the 2-core benchmark machine it made no difference beyond the noise for forwarding
nor, since steady heartbeats are answered as they arrive, for their serve CPU; 5,000 members
joining together, or restarting, converged markedly slower on it (docs/benchmarks.md, Round 4).
So it is an optional extra, not a dependency: used when installed unless the ``event_loop``
setting says ``asyncio``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable

EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def loop_factory(choice: str, tls_listener: bool = False) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """A factory for ``asyncio.Runner``; None means asyncio's default loop.

    ``uvloop`` requires it to be installed (ImportError otherwise); ``auto`` uses it when it is,
    except with a TLS listener: uvloop reads the ClientHello before ``start_tls`` takes the
    connection over, so no handshake ever completes there (asked for explicitly, it is refused).
    """
    if choice not in EVENT_LOOPS:
        raise ValueError(f"event_loop must be one of {', '.join(EVENT_LOOPS)}, not {choice!r}")
    if choice == "uvloop" and tls_listener:
        raise ValueError("event_loop = uvloop cannot serve gateway.listener_tls (handshakes never complete); use auto")
    if choice == "asyncio" or tls_listener:
        return None
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        if choice == "uvloop":
            raise
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
