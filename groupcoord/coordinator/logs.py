"""Logging: one JSON object per line on stderr, librdkafka's own lines included, rate-limited.

- Unless ``log_format`` is set, ``serve`` logs plain text when stderr is a terminal and JSON
  otherwise (:func:`default_format`).

- The formatter is python-json-logger's (the maintained JSON formatter for stdlib ``logging``):
  every line has ``ts`` (ISO 8601, UTC), ``level``, ``logger`` and ``msg``, plus any ``extra``
  fields of the call. ``log_format = "text"`` gives plain lines for a human at a terminal.
- librdkafka logs through the ``librdkafka`` logger when a client is built with
  :func:`client_config` (the ``logger`` key of confluent-kafka). confluent-kafka then queues the
  lines and hands them over only when the client is polled (``poll``/``flush``/consumer
  ``poll``); a client that is never polled keeps its lines in memory, so clients that are not
  otherwise polled are given :func:`drain` calls.
- The ``librdkafka`` logger has a ``NullHandler`` of its own: in a process that configured no
  logging (a CLI command, a Spark worker of the pipeline) its lines are dropped instead of reaching
  stderr through Python's last-resort handler; where logging is configured they propagate to it.
  The CLI (:func:`configure_cli`) keeps them off the terminal, as its failures are one ``error:`` line.
- When the cluster cannot be reached librdkafka repeats the same complaint for every broker every
  few hundred milliseconds. :class:`RateLimit` lets at most ``burst`` lines of one kind (its
  facility, e.g. ``FAIL``) through per ``interval`` and then one line saying how many were held back.
  The lines a client can cause per connection (a refused frame, a failed accept) are limited the
  same way (``CLIENT_DRIVEN_LOGGERS``).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from pythonjsonlogger.json import JsonFormatter

from groupcoord.coordinator.kafka_words import LastLine

RDKAFKA_LOGGER = "librdkafka"
_RDKAFKA_TEMPLATE = "%s [%s] %s"  # how confluent-kafka hands a line to its logger

# The fields every line starts with, by the name they have on a LogRecord.
_FIELDS = {"asctime": "ts", "levelname": "level", "name": "logger", "message": "msg"}


class _Formatter(JsonFormatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (stdlib name)
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_formatter() -> logging.Formatter:
    return _Formatter(
        " ".join(f"%({name})s" for name in _FIELDS),
        rename_fields=dict(_FIELDS),
        json_ensure_ascii=False,
    )


class RateLimit(logging.Filter):
    """At most ``burst`` records per key per ``interval`` seconds; then a count of those dropped.

    The key is librdkafka's facility (``FAIL``, ``ERROR``, ...) for its lines, else the message
    template. The summary ("suppressed K similar lines") goes out with the first record of the key
    after its interval has passed. Records are also reshaped: librdkafka's ``fac``, ``client`` and
    message become fields of their own instead of one formatted string.
    """

    def __init__(self, burst: int = 5, interval: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        # key -> [window start, passed in window, dropped in window]
        self._windows: dict[str, list[float]] = {}

    def reset(self) -> None:
        with self._lock:
            self._windows.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        _reshape_rdkafka(record)
        if _is_deliberate_confwarn(record):
            # A property set on purpose (enable.gapless.guarantee) is no warning to an operator.
            record.levelno, record.levelname = logging.INFO, "INFO"
            if not logging.getLogger(RDKAFKA_LOGGER).isEnabledFor(logging.INFO):
                return False
        key = str(getattr(record, "fac", None) or record.msg)
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.interval:
                dropped = int(window[2]) if window is not None else 0
                self._windows[key] = [now, 1, 0]
                if dropped:
                    record.msg = (
                        f"{record.getMessage()} (suppressed {dropped} similar lines in the last {self.interval:g}s)"
                    )
                    record.args = ()
                    record.suppressed = dropped
                return True
            if window[1] < self.burst:
                window[1] += 1
                return True
            window[2] += 1
            return False


def _reshape_rdkafka(record: logging.LogRecord) -> None:
    # confluent-kafka logs ("%s [%s] %s", fac, client name, text).
    if record.msg == _RDKAFKA_TEMPLATE and isinstance(record.args, tuple) and len(record.args) == 3:
        fac, client, text = record.args
        record.fac = fac
        record.client = client
        record.msg = str(text)
        record.args = ()


def _is_deliberate_confwarn(record: logging.LogRecord) -> bool:
    return getattr(record, "fac", None) == "CONFWARN" and "is experimental" in str(record.msg)


rate_limit = RateLimit()
# Loggers whose lines any client can cause, one per connection it opens: a refused frame (gateway
# connections) or an accept that failed (asyncio, EMFILE). Unbounded, one attacker's loop wrote
# about 465 lines a second (one per malformed connection), and a full descriptor table tens of
# megabytes a minute of accept tracebacks. A few lines of a kind per interval, then a count.
# A request relayed to the process that owns its group fails with a line each while that owner is
# dead and not yet replaced; share consumers retry ShareFetch at once, so a rolling restart wrote
# ~600 such lines a second and buried the lines an operator needs then.
CLIENT_DRIVEN_LOGGERS = (
    "groupcoord.coordinator.gateway.connection",
    "asyncio",
    "groupcoord.coordinator.service.share_data",
    "groupcoord.coordinator.service.handover_relay",
    "groupcoord.coordinator.gateway.group_configs",
)
client_rate_limit = RateLimit(burst=20, interval=10.0)
_null = logging.NullHandler()
# librdkafka's last line, kept to say why the cluster could not be reached (as the CLI does).
last_line = LastLine()


def rdkafka_logger() -> logging.Logger:
    logger = logging.getLogger(RDKAFKA_LOGGER)
    if rate_limit not in logger.filters:
        logger.addFilter(rate_limit)
    if _null not in logger.handlers:
        logger.addHandler(_null)
    if last_line not in logger.handlers:
        logger.addHandler(last_line)
    return logger


def client_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's log routed to the ``librdkafka`` logger (never raw stderr)."""
    return {**config, "logger": rdkafka_logger()}


class _Pollable(Protocol):
    def poll(self, timeout: float = ...) -> Any: ...


def drain(client: _Pollable) -> None:
    """Hand over the log lines a client has queued (its only way out; see the module docstring)."""
    client.poll(0)


class _Stream(Protocol):
    def isatty(self) -> bool: ...


def default_format(stream: _Stream) -> str:
    """The log format when none is configured: plain text for a person at a terminal, JSON (one
    object a line, for a log collector) everywhere else (a pipe, a file, systemd, a container)."""
    try:
        return "text" if stream.isatty() else "json"
    except ValueError:  # a closed stream
        return "json"


def configure(level: str, fmt: str = "json") -> None:
    """Send every log record to stderr, one line each: JSON by default, ``text`` for humans."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(json_formatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level))
    rdkafka_logger().propagate = True


def limit_client_driven_lines() -> None:
    """serve's listeners: rate-limit the lines clients cause (``CLIENT_DRIVEN_LOGGERS``)."""
    for name in CLIENT_DRIVEN_LOGGERS:
        logger = logging.getLogger(name)
        if client_rate_limit not in logger.filters:
            logger.addFilter(client_rate_limit)


def configure_cli() -> None:
    """The CLI's commands: any log line is JSON on stderr (WARNING and above); librdkafka's lines
    are kept off the terminal (a command that cannot reach the cluster says so in one line)."""
    configure("WARNING")
    rdkafka_logger().propagate = False
