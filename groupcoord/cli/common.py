"""What every connecting command shares: connection options, client settings, errors and output.

- Connection settings like Kafka's tools: ``--bootstrap-servers``, ``--command-config FILE``
  (librdkafka properties, e.g. ``security.protocol``, ``ssl.*``, ``sasl.*``) and ``--timeout``.
- librdkafka's own log lines never reach the terminal: every client gets a Python ``logger``
  that keeps only the last line, which is used to say *why* a broker could not be reached.
- Errors are one line on stderr and a non-zero exit code; Kafka error codes become words.
- Results are printed by ``groupcoord.cli.output`` (``--format text|wide|json|yaml``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from rich.console import Console
from rich.markup import escape

from groupcoord.cli.wire import CLOSED_AT_ONCE, CLOSED_LATER, NOTHING_LISTENS, REFUSED, closed_words, probe
from groupcoord.coordinator.kafka_words import LastLine, describe_error
from groupcoord.properties import PropertiesError, parse_properties

err = Console(stderr=True, soft_wrap=True)

Bootstrap = Annotated[
    str, typer.Option("--bootstrap-servers", "-b", envvar="GROUPCOORD_CLI_BOOTSTRAP", help="The sidecar's HOST:PORT.")
]
CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        help="File of librdkafka properties (key=value lines: security.protocol, ssl.*, sasl.*).",
    ),
]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds to wait for the cluster.", min=0.1)]
DEFAULT_TIMEOUT = 10.0


class CliError(Exception):
    """A failure to report as one line (exit code 1)."""

    exit_code = 1


class CliUsageError(CliError):
    """A command line that cannot mean anything (exit code 2)."""

    exit_code = 2


def fail(message: str) -> NoReturn:
    raise CliError(message)


def usage(message: str) -> NoReturn:
    """Options that cannot go together, or a required choice missing: a bad command line, exit code
    2 as click's own usage errors (an unknown option, a bad value) have; checked before connecting."""
    raise CliUsageError(message)


def error_line(message: str) -> None:
    """``error: MESSAGE`` on stderr; the message is never read as rich markup."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


def report(exc: CliError) -> NoReturn:
    error_line(str(exc))
    raise typer.Exit(exc.exit_code)


_rdkafka_log = logging.getLogger("groupcoord.cli.librdkafka")
_rdkafka_log.propagate = False
_rdkafka_log.setLevel(logging.DEBUG)
_last_line = LastLine()
_rdkafka_log.addHandler(_last_line)
quiet_rdkafka_logger = _rdkafka_log  # for commands that build their own clients


def read_properties(path: Path) -> dict[str, str]:
    """A properties file as Kafka's tools read it (``groupcoord.properties``)."""
    try:
        text = path.read_text()
    except OSError as exc:
        fail(f"cannot read --command-config {path}: {exc.strerror or exc}")
    try:
        return parse_properties(text)
    except PropertiesError as exc:
        fail(f"{path}:{exc}")


@dataclass
class Conn:
    """How to reach one cluster (the sidecar, or a backing cluster)."""

    bootstrap: str
    command_config: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    _props: dict[str, str] | None = field(default=None, repr=False)

    def config(self, **extra: Any) -> dict[str, Any]:
        if self._props is None:
            self._props = read_properties(self.command_config) if self.command_config else {}
        timeout_ms = int(self.timeout * 1000)
        conf: dict[str, Any] = {
            "socket.timeout.ms": max(timeout_ms, 10),
            "socket.connection.setup.timeout.ms": max(timeout_ms, 1000),
            "log_level": 3,
            **self._props,
            "bootstrap.servers": self.bootstrap,
            "logger": _rdkafka_log,
            **extra,
        }
        return conf

    def admin(self) -> AdminClient:
        try:
            return AdminClient(self.config())
        except KafkaException as exc:
            fail(f"bad client settings: {describe_error(exc.args[0])}")

    def consumer(self, **extra: Any) -> Consumer:
        try:
            return Consumer(self.config(**{"group.id": "groupcoord-cli", "enable.auto.commit": False, **extra}))
        except KafkaException as exc:
            fail(f"bad client settings: {describe_error(exc.args[0])}")

    def check_reachable(self, admin: AdminClient) -> None:
        """Fail in one line, within the timeout, if no broker of ``bootstrap`` answers."""
        try:
            admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            admin.poll(0)  # librdkafka's queued log lines are handed over on poll
            reason = _last_line.reason()
            error = exc.args[0]
            if isinstance(error, KafkaError) and error.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                fate = self._probe()
                if fate is not None:
                    fail(fate)
            fail(f"cannot reach {self.bootstrap} within {self.timeout:g}s: {describe_error(error)}{reason}")

    def _probe(self) -> str | None:
        """Why no connection held, when a connection of our own tells: librdkafka says "no
        connection" alike for an address where nothing listens and for a sidecar that accepts and
        then closes (as it does while it cannot reach its cluster), which are opposite fixes."""
        props = {k: v for k, v in self.config().items() if isinstance(v, str)}
        addresses = [a.strip() for a in self.bootstrap.split(",") if a.strip()]
        # Quick: both fates show at once; the client has already waited out the timeout.
        fates = {a: probe(a, min(self.timeout, 2.0), props) for a in addresses[:3]}
        for fate in (CLOSED_LATER, CLOSED_AT_ONCE):
            closed = [a for a, found in fates.items() if found == fate]
            if closed:
                return closed_words(closed[0], answered=fate == CLOSED_LATER)
        if fates and all(fate == REFUSED for fate in fates.values()):
            return f"cannot reach {self.bootstrap} within {self.timeout:g}s: {NOTHING_LISTENS} (Connection refused)"
        return None

    def wait(self, future: Any, what: str) -> Any:
        return self.wait_for(lambda: future.result(timeout=self.timeout), what)

    def wait_for(self, answer: Callable[[], Any], what: str) -> Any:
        """``answer()``, its Kafka error or its running out of time said in one line."""
        try:
            return answer()
        except KafkaException as exc:
            fail(f"{what}: {describe_error(exc.args[0])}")
        except TimeoutError:
            fail(f"{what}: no answer from {self.bootstrap} within {self.timeout:g}s")


# --- partitions and watermarks -----------------------------------------------------------------


def parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    """``topic`` or ``topic:0,1,2`` (Kafka's --topic syntax for resets). A spec that means nothing
    is a bad command line (exit code 2): parse every --topic before connecting."""
    topic, sep, parts = spec.partition(":")
    if not topic:
        usage(f"--topic {spec!r}: empty topic name")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        usage(f"--topic {spec!r}: partitions must be comma-separated numbers")
    if not partitions or partitions[0] < 0:
        usage(f"--topic {spec!r}: partitions must be numbers >= 0")
    return topic, partitions


def topic_partitions(admin: AdminClient, c: Conn, topics: list[str], missing: str = "") -> dict[str, int]:
    """Partition count of each topic; a missing topic is an error (``missing`` added to its line)."""
    try:
        md = admin.list_topics(timeout=c.timeout)
    except KafkaException as exc:
        fail(f"cannot read topics from {c.bootstrap}: {describe_error(exc.args[0])}")
    counts: dict[str, int] = {}
    for topic in topics:
        t = md.topics.get(topic)
        if t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            fail(f"topic {topic!r} does not exist{missing}")
        counts[topic] = len(t.partitions)
    return counts


def check_partitions(counts: dict[str, int], wanted: dict[str, list[int] | None]) -> list[TopicPartition]:
    tps: list[TopicPartition] = []
    for topic, parts in wanted.items():
        n = counts[topic]
        for p in parts if parts is not None else range(n):
            if p >= n:
                fail(f"topic {topic!r} has no partition {p} (it has {n})")
            tps.append(TopicPartition(topic, p))
    return tps


def watermarks(c: Conn, tps: list[TopicPartition], strict: bool = True) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start, high watermark) per partition, as a Fetch reports them. Not ``strict``: a
    partition that cannot be read is left out instead of failing.

    The local broker's ListOffsets "latest" is wrong, so the consumer's cached watermarks are
    read after a fetch reached each partition (a first message or end-of-partition)."""
    result: dict[tuple[str, int], tuple[int, int]] = {}
    if not tps:
        return result
    consumer = c.consumer(**{"enable.partition.eof": True, "queued.max.messages.kbytes": 1024})
    try:
        consumer.assign([TopicPartition(tp.topic, tp.partition, -2) for tp in tps])  # -2: earliest
        pending = {(tp.topic, tp.partition) for tp in tps}
        deadline = time.monotonic() + c.timeout
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                key = (msg.topic(), msg.partition())
                error = msg.error()
                if msg.topic() is None:
                    continue  # a client-wide event (a lost connection): librdkafka retries, the deadline bounds it
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    if strict or key not in pending:
                        fail(f"cannot read {key[0]}-{key[1]}: {describe_error(error)}")
                    pending.discard(key)
                    continue
                if key in pending:
                    lo, hi = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
                    if hi >= 0:
                        result[key] = (max(lo, 0), hi)
                        pending.discard(key)
                        consumer.pause([TopicPartition(*key)])
        if pending and strict:
            names = ", ".join(f"{t}-{p}" for t, p in sorted(pending))
            fail(f"no fetch answer for {names} within {c.timeout:g}s")
    finally:
        consumer.close()
    return result
