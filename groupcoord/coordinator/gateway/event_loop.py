"""Which asyncio event loop the sidecar runs on.

Forwarding and heartbeats are mostly event-loop turns (a socket read, a task wake-up, a write),
which uvloop (libuv) does in C. Forwarding throughput did not change beyond the noise, but a steady
heartbeat costs about a quarter less serve CPU on it (docs/benchmarks.md, "Event loop"), so it is
a dependency and ``auto`` (the default) uses it. Where it is not installed (no wheel for the
platform) or does not import, ``auto`` runs on asyncio's loop; ``asyncio`` asks for that outright.
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
    except ImportError:  # no wheel for this platform, or its extension does not load
        if choice == "uvloop":
            raise
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
