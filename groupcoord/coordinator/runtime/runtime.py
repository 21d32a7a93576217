"""The coordinator runtime: the shards a process owns, one writer, one reader, one asyncio loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from confluent_kafka import KafkaError, Message

from groupcoord.coordinator.runtime import collector
from groupcoord.coordinator.runtime.api import ShardState
from groupcoord.coordinator.runtime.clock import Clock, SystemClock
from groupcoord.coordinator.runtime.load import LoadFailed, LoadResult, ShardLoad
from groupcoord.coordinator.runtime.log import LogTailer, LogTopicSpec, LogWriter, ensure_log_topic, producer_failed
from groupcoord.coordinator.runtime.shard import (
    DeliveryReport,
    LoadReport,
    LogRecord,
    Shard,
    ShardHandlers,
    ShardNotAvailable,
    ShardObserver,
    ShardPhase,
    ShardStatus,
)

log = logging.getLogger(__name__)

S = TypeVar("S", bound=ShardState)
_ReaderReport = list[Message] | LoadResult | LoadFailed | KafkaError


# The stuck-shard watchdog (``Shard.check_stuck``): a write whose records are not read back within
# the first marks its shard stuck (a WARNING, readiness and /metrics show it); within the second,
# the shard reloads from the log. Reads back normally take milliseconds.
STUCK_WARNING_MS = 10_000
STUCK_RELOAD_MS = 60_000
WATCHDOG_INTERVAL_S = 1.0


def default_owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def max_record_bytes(client_config: dict[str, Any], topic_spec: LogTopicSpec) -> int:
    """The largest record both the writer (``message.max.bytes``) and the log topic
    (``max.message.bytes``, Kafka's default when the spec does not set it) accept."""
    producer = int(client_config.get("message.max.bytes", 1_000_000))
    topic = int(topic_spec.configs.get("max.message.bytes", 1_048_588))
    return min(producer, topic)


class CoordinatorRuntime(Generic[S]):
    """Owns shards of the log topic. Create it inside a running asyncio loop and ``await start()``.

    It is the ``ShardHost`` of its shards: their loop, clock and log partition."""

    def __init__(
        self,
        client_config: dict[str, Any],
        topic_spec: LogTopicSpec,
        handlers: ShardHandlers[S],
        clock: Clock | None = None,
        owner_id: str | None = None,
        reader_config: dict[str, Any] | None = None,
        on_written: Callable[[], None] | None = None,
        on_behind: Callable[[], None] | None = None,
    ) -> None:
        self.client_config = dict(client_config)
        # Told (on the writer's thread) whenever records are written: the reader relay's ``kick``.
        self.on_written = on_written
        # Told (on the reader's thread) when the reader is behind: the reader relay's ``behind``.
        self.on_behind = on_behind
        # The log reader's (a consumer's) config: serve points it at a relay that keeps
        # librdkafka off the Fetch versions it crashes on (groupcoord/coordinator/gateway/reader_relay.py).
        self.reader_config = dict(reader_config if reader_config is not None else client_config)
        self.topic_spec = topic_spec
        self.topic = topic_spec.name
        self.handlers = handlers
        self.clock: Clock = clock or SystemClock()
        self.owner_id = owner_id or default_owner_id()
        self.max_record_bytes = max_record_bytes(self.client_config, topic_spec)
        self.loop = asyncio.get_running_loop()
        self.partitions = 0
        self.shards: dict[int, Shard[S]] = {}
        self.writer: LogWriter
        self.tailer: LogTailer
        # Asked before a shard reloads on its own (after a failed or misplaced append), since a
        # reload claims a new shard epoch; None allows it. See ``may_reload``.
        self.reload_guard: Callable[[int, str], bool] | None = None
        # Told what every shard does (metrics); set before shards load.
        self.observer = ShardObserver()
        self.stuck_warning_ms = STUCK_WARNING_MS
        self.stuck_reload_ms = STUCK_RELOAD_MS
        # How long ``start`` retries an unreachable cluster before giving up (serve's cluster_wait_ms).
        self.cluster_wait_s = 30.0
        self._watchdog: asyncio.TimerHandle | None = None
        self._collector_installed = False
        # The reader's reports not yet handed to their shard (``drain_reads``); appended on the
        # reader's thread, taken on the loop's (deque's append and popleft are thread-safe).
        self._inbox: deque[tuple[int, str, int, _ReaderReport]] = deque()

    async def start(self, partitions: Iterable[int] | None = None) -> None:
        """Create the log topic if needed, then begin loading the given shards (all by default)."""
        self.partitions = await asyncio.to_thread(
            ensure_log_topic, self.client_config, self.topic_spec, self.cluster_wait_s
        )
        if self.partitions != self.topic_spec.partitions:
            # The shard count is the log topic's, fixed at its creation (a group's shard is a hash
            # of its id over it): a different setting is not applied, which an operator who set it
            # should hear (found by an operator probe: ``--partitions 8`` on a 16-partition log).
            log.warning(
                "log topic %s has %d partitions: the setting partitions=%d applies only when the topic is "
                "created; serving %d shards",
                self.topic,
                self.partitions,
                self.topic_spec.partitions,
                self.partitions,
            )
        # The shards' state is long-lived: kept out of the cyclic collector's full walks.
        collector.SHARED.install()
        self._collector_installed = True
        self.writer = self._new_writer()
        self.tailer = LogTailer(
            self.reader_config,
            self.topic,
            on_records=self._from_reader("on_records"),
            on_loaded=self._from_reader("on_loaded"),
            on_error=self._from_reader("on_error"),
            group_id=f"groupcoord-tailer-{self.owner_id}",
            on_behind=self.on_behind,
        )
        wanted = range(self.partitions) if partitions is None else partitions
        for p in wanted:
            self.load_shard(p)
        self._watchdog = self.loop.call_later(WATCHDOG_INTERVAL_S, self._watch)

    def _watch(self) -> None:
        now = self.clock.now_ms()
        for shard in list(self.shards.values()):
            shard.check_stuck(now, self.stuck_warning_ms, self.stuck_reload_ms)
        self._watchdog = self.loop.call_later(WATCHDOG_INTERVAL_S, self._watch)

    def _from_reader(self, method: str) -> Callable[[int, int, _ReaderReport], None]:
        """A reader callback (on the reader's thread): the report joins the inbox, in the order
        reported, and the loop is asked to hand it over (``drain_reads``)."""
        inbox, loop, drain = self._inbox, self.loop, self.drain_reads

        def report(partition: int, generation: int, arg: _ReaderReport) -> None:
            inbox.append((partition, method, generation, arg))
            loop.call_soon_threadsafe(drain)

        return report

    def drain_reads(self) -> None:
        """Hand what the reader reported over to the shards, in the order reported (``ShardHost``).

        Run by the loop callback each report schedules, and by a shard before its flush: with a
        mass join the loop's queue holds a flush of thousands of handlers (0.3-0.75 s measured)
        between a batch's read-back and its callback, and every answer of that batch waited for
        it. One inbox for every partition keeps each partition's reports (its load's end, its
        records, its errors) in the reader's order whoever drains it."""
        inbox, shards = self._inbox, self.shards
        while inbox:
            partition, method, generation, arg = inbox.popleft()
            shard = shards.get(partition)
            if shard is not None:
                getattr(shard, method)(generation, arg)

    # --- ShardHost ---------------------------------------------------------------------------

    def append(self, partition: int, records: list[LogRecord], on_delivered: DeliveryReport) -> None:
        writer = self.writer
        loop = self.loop
        count = len(records)
        expect = self.tailer.expect

        def delivered(error: KafkaError | None, offset: int) -> None:
            # The reader is told here, on the writer's thread, and not at the append: a paused
            # partition resumed once its record is in the log is answered by the first fetch,
            # where one resumed earlier waits out a whole fetch wait at the broker.
            expect(partition, offset if error is None else None)
            # One hand-over to the loop per append (see ``LogWriter.append``).
            loop.call_soon_threadsafe(self._delivered, writer, on_delivered, count, error, offset)

        writer.append(partition, records, delivered)

    def _delivered(
        self, writer: LogWriter, on_delivered: DeliveryReport, count: int, error: KafkaError | None, offset: int
    ) -> None:
        if error is not None and producer_failed(error):
            self.replace_writer(writer, error)
        on_delivered(0, count, error, offset)

    def load(self, partition: int, generation: int, load: ShardLoad) -> None:
        self.tailer.load(partition, generation, load)

    def unassign(self, partition: int) -> None:
        self.tailer.unassign(partition)

    def _new_writer(self) -> LogWriter:
        return LogWriter(self.client_config, self.topic, self.on_written, on_fatal=self._writer_failed)

    def _writer_failed(self, writer: LogWriter, error: KafkaError) -> None:
        """A writer's producer failed fatally (on the writer's thread, or the loop's)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: so is the runtime
            self.loop.call_soon_threadsafe(self.replace_writer, writer, error)

    def replace_writer(self, failed: LogWriter, error: KafkaError) -> None:
        """An idempotent producer that hit a fatal error (fenced, out of sequence) cannot be
        used again; shards reload from the log and append through a new one."""
        if failed is not self.writer:
            return  # already replaced
        log.error(
            "log writer's producer failed fatally (%s); replacing it with a new idempotent producer "
            "(a new producer id); its appends in flight fail and their shards reload",
            error,
        )
        self.renew_writer()

    def renew_writer(self) -> None:
        """Append through a new producer from now on (a new producer id). The old one is closed
        on another thread; what it still held is reported failed to its shards."""
        old = self.writer
        self.writer = self._new_writer()
        self.loop.run_in_executor(None, old.close, 0.0)

    def log_recreated(self) -> None:
        """The log topic was created again: the cluster lost it, and with it the producer ids
        it knew. A producer keeps its id; a broker that forgot it refuses every append, and
        librdkafka only bumps the epoch of the same id (seen with Tansu: retried for ever).
        Every shard still held reloads: its state came from the lost log, and serving it would
        answer with offsets the new log does not have (a deletion on the cluster leaves the
        shards owned, where a broker restart would have had placement take them away)."""
        log.warning("log topic %s was created again; appending through a new producer, shards reload", self.topic)
        self.renew_writer()
        for shard in list(self.shards.values()):
            if shard.phase is not ShardPhase.CLOSED:
                shard.reload("the log topic was created again")

    def may_reload(self, partition: int, reason: str) -> bool:
        """Whether a shard may reload itself; when several processes share the log, a process
        that was paused may not know yet that its shard moved, and must not fence the new owner."""
        return self.reload_guard is None or self.reload_guard(partition, reason)

    def load_shard(self, partition: int) -> Shard[S]:
        if not 0 <= partition < self.partitions:
            raise ValueError(f"no partition {partition} in {self.topic} ({self.partitions} partitions)")
        shard = self.shards.get(partition)
        if shard is None:
            shard = Shard(self, partition, self.handlers)
            shard.observer = self.observer
            self.shards[partition] = shard
        shard.load()
        return shard

    def unload_shard(self, partition: int) -> None:
        shard = self.shards.pop(partition, None)
        if shard is not None:
            shard.close()
            # Its state let go: whatever of it is in a cycle is freed by the next full
            # collection, not kept frozen (see ``collector``).
            collector.SHARED.thaw()

    def shard(self, partition: int) -> Shard[S]:
        shard = self.shards.get(partition)
        if shard is None:
            raise ShardNotAvailable(partition, ShardStatus.CLOSED, "not owned by this process")
        return shard

    async def wait_loaded(self, timeout: float | None = None) -> list[LoadReport]:
        """Wait until every shard is active or has failed; return the reports of the active ones."""
        await asyncio.wait_for(asyncio.gather(*(s.wait_loaded() for s in self.shards.values())), timeout)
        return [s.load_report for s in self.shards.values() if s.load_report is not None]

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._collector_installed:
            self._collector_installed = False
            collector.SHARED.uninstall()
        for partition in list(self.shards):
            self.unload_shard(partition)
        await asyncio.to_thread(self.writer.close)
        await asyncio.to_thread(self.tailer.close)
