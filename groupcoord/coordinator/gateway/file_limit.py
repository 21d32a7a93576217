"""The open-file limit and the client connections it can carry.

Every client connection holds two descriptors (its socket and its own upstream socket to a broker,
see upstream.py). A shell's usual soft limit of 1024 then runs out near 500 connections, well below
the default ``max_connections`` of 1000: ``accept`` fails with EMFILE, asyncio logs a traceback per
attempt (tens of megabytes a minute), clients hang in the listen backlog, and the cluster clients
and log appends of the process can no longer open sockets. So, as the JVM does for a Kafka broker
(``-XX:+MaxFDLimit``, on by default), serve raises its soft limit to the hard one, and when even
that cannot carry ``max_connections`` it admits only as many as it can (the others are refused and
closed, like any connection beyond ``max_connections``) and says so once at start.
"""

from __future__ import annotations

import logging
import os

try:
    import resource
except ImportError:  # not on POSIX: nothing to raise or read
    resource = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

DESCRIPTORS_PER_CONNECTION = 2
# Kept free for what else opens files while serving: one burst of accepts (server.LISTEN_BACKLOG,
# each accepted before it can be refused), the cluster clients' sockets (more brokers,
# reconnections), broker listeners opened later, the log reader's relay, share reads, metrics
# requests, TLS files.
HEADROOM = 128
# Where the hard limit is "unlimited": Linux's default fs.nr_open.
_UNLIMITED_TARGET = 1 << 20


def raise_soft_limit() -> int | None:
    """Raise the soft RLIMIT_NOFILE to the hard one; the soft limit now, or None where unknown."""
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.debug("cannot raise the open-file limit to %s: %s", target, exc)
    return None if soft == resource.RLIM_INFINITY else soft


def open_descriptors() -> int:
    """Descriptors this process holds now (0 where /proc is not there to count them)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def connection_ceiling(soft_limit: int | None, in_use: int) -> int | None:
    """Client connections that fit in ``soft_limit`` beside ``in_use`` descriptors; None: no bound."""
    if soft_limit is None:
        return None
    return max(1, (soft_limit - in_use - HEADROOM) // DESCRIPTORS_PER_CONNECTION)


def admissible_connections(max_connections: int, clients_open: int = 0, warn: bool = True) -> int:
    """``max_connections``, lowered to what the open-file limit (raised first) can carry beside the
    descriptors the process holds now, less those of its ``clients_open`` client connections."""
    soft = raise_soft_limit()
    in_use = max(0, open_descriptors() - DESCRIPTORS_PER_CONNECTION * clients_open)
    ceiling = connection_ceiling(soft, in_use)
    if ceiling is None or ceiling >= max_connections:
        return max_connections
    if warn:
        log.warning(
            "the open-file limit (%s) carries about %d client connections, not max_connections=%d: "
            "connections beyond %d are refused; raise the limit (ulimit -n, LimitNOFILE=) to admit more",
            soft,
            ceiling,
            max_connections,
            ceiling,
        )
    return ceiling
