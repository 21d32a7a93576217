"""Kafka I/O of the runtime: the log topic, the idempotent writer and the tailing reader.

Both wrap confluent-kafka clients driven by one background thread each; results are handed
back through callbacks, which the runtime forwards onto its asyncio loop. Nothing here knows
about shard state.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from groupcoord.coordinator.logs import drain
from groupcoord.coordinator.runtime.collector import HOLDS
from groupcoord.coordinator.runtime.load import LoadFailed, LoadResult, ShardLoad
from groupcoord.coordinator.runtime.replayer import LogMessage

log = logging.getLogger(__name__)

# One append call's report: (error or None, offset of its last record or -1).
DeliveryCallback = Callable[[KafkaError | None, int], None]


def producer_failed(error: KafkaError | None) -> bool:
    """Whether ``error`` says the producer can never append again: a fatal error (an idempotent
    producer fenced, or out of sequence after its topic was created again: _GAPLESS_GUARANTEE),
    or a call refused because the producer is in that state (_FATAL, which is not itself marked
    fatal). Only a new producer, with a new producer id, appends again."""
    return error is not None and (error.fatal() or error.code() == KafkaError._FATAL)


def _kafka_error(exc: KafkaException) -> KafkaError:
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return error or KafkaError(KafkaError._FAIL, str(exc))


# A batch cut short by a crash, or a zombie's records, are the latest of their keys until the next
# owner's load re-states the valid values (restores, see ``LogReplayer``). Compaction acting in
# between would remove the valid values for good: an acknowledged commit lost. The next load comes
# within a session timeout; the lag leaves an hour for an outage of every coordinator process.
# (Kafka's own coordinator needs no such lag: it appends each batch atomically to its log.)
LOG_TOPIC_CONFIGS = {"cleanup.policy": "compact", "min.compaction.lag.ms": str(3_600_000)}


# With linger.ms 0 librdkafka wakes its broker thread for nearly every record handed over (the
# thread drains the queue at once, so the next record finds it empty and wakes it again): on a
# 2-core machine that made produce() cost 5.2 us a record instead of 1.8 (measured against the
# local broker), and sent a shard's batch of records as many small requests. Half a millisecond
# lets a whole batch (a 100-partition commit, or everything queued in one loop iteration) go out
# in one request. A lone record waits ~1.1 ms for it, not 0.5: librdkafka's broker thread waits
# in whole milliseconds (a remaining wait is rounded up), as its int_latency statistic shows
# (docs/benchmarks.md, branch sharep). Measured with bench/offsets_bench.py's 100-partition
# commits, same run: 0.18x -> 0.25x raw; linger 0 was tried again there (sharep) and still cost
# 100-partition commits 15-30% of their rate and 1-partition ones half again as much CPU.
WRITER_LINGER_MS = 0.5


@dataclass(frozen=True)
class LogTopicSpec:
    name: str = "__group_coordinator_log"
    partitions: int = 16
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=lambda: dict(LOG_TOPIC_CONFIGS))


class LogTopicError(RuntimeError):
    pass


def ensure_log_topic(client_config: dict[str, Any], spec: LogTopicSpec, wait_s: float = 30.0) -> int:
    """Create the log topic if absent; return its partition count (fixed at creation).

    An unreachable cluster is retried for ``wait_s`` seconds (serve's ``cluster_wait_ms``)."""
    retrying = Retrying(
        retry=retry_if_exception_type(KafkaException),
        wait=wait_exponential(multiplier=0.2, max=2),
        stop=stop_after_delay(wait_s),
        reraise=True,
    )
    for attempt in retrying:
        with attempt:
            admin = AdminClient(dict(client_config))
            try:
                return ensure_log_topic_on(admin, spec)
            finally:
                drain(admin)  # its queued librdkafka log lines
    raise AssertionError("unreachable: tenacity re-raises the last error")


def ensure_log_topic_on(admin: AdminClient, spec: LogTopicSpec) -> int:
    metadata = admin.list_topics(timeout=10)
    existing = metadata.topics.get(spec.name)
    if existing is None or existing.error is not None:
        futures = admin.create_topics(
            [NewTopic(spec.name, spec.partitions, spec.replication_factor, config=dict(spec.configs))]
        )
        try:
            futures[spec.name].result(timeout=30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        metadata = admin.list_topics(topic=spec.name, timeout=10)
        existing = metadata.topics.get(spec.name)
        if existing is None or existing.error is not None or not existing.partitions:
            raise LogTopicError(f"log topic {spec.name!r} is not visible after creation")
    return len(existing.partitions)


class LogWriter:
    """The idempotent producer every shard appends through."""

    def __init__(
        self,
        client_config: dict[str, Any],
        topic: str,
        on_written: Callable[[], None] | None = None,
        on_fatal: Callable[[LogWriter, KafkaError], None] | None = None,
    ) -> None:
        self.topic = topic
        # Told on the poll thread whenever an append's records are written (the reader relay
        # then lets the log reader's fetch, waiting for them, go to the broker).
        self.on_written = on_written
        # Told once, on whichever thread learns it, that the producer failed fatally (raised
        # from poll() on the poll thread, or produce() refused with _FATAL): the runtime then
        # appends through a new writer and closes this one. The poll thread goes on serving
        # the delivery reports of what was in flight (failed) until then.
        self.on_fatal = on_fatal
        self.failed: KafkaError | None = None
        self.settings: dict[str, Any] = {
            **client_config,
            "enable.idempotence": True,
            "acks": "all",
            # Records are batched by the shards themselves (what is queued together is handed
            # over together); see ``WRITER_LINGER_MS`` for why the producer still lingers briefly.
            "linger.ms": WRITER_LINGER_MS,
            "max.in.flight.requests.per.connection": 5,
            # A record that fails must fail every record after it: those were produced from a
            # state that included it, and must never land without it (the writer turns fatal
            # and is replaced; the shard reloads).
            "enable.gapless.guarantee": True,
            # Never let a metadata request create the log (a broker's defaults: not compacted,
            # any partition count); it is created on purpose, see ``ClusterWatch``.
            "allow.auto.create.topics": False,
        }
        self._producer = Producer(self.settings)
        # Reports of appends cut short by a refused record, made once the queue has drained
        # (``append``); appended on the caller's thread, taken on the poll thread or by ``close``.
        self._after_drain: deque[Callable[[], None]] = deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll_loop, name="log-writer", daemon=True)
        self._thread.start()

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None, list[tuple[str, bytes]]]],
        on_delivery: DeliveryCallback,
    ) -> None:
        """Append records in order; ``on_delivery(error, offset)`` is called once for all of
        them: no error and the offset of the last record when every record was written, or an
        error (and -1) when they cannot be counted on.

        One report per append, from the last record's delivery report alone: the producer is
        idempotent with the gapless guarantee, so the last record written means every record
        before it was, in order (one that failed fails every record after it), and the last
        one's offset says whether another writer's records came in between (the shard compares
        it with the offset it expects, and each record read back with what it wrote). A report
        per record cost the loop thread a callback object per produce() and the poll thread a
        message and a call per record (profiled on 100-partition commits); earlier, a wake-up
        of the loop per record had been the largest cost of such a commit.

        A record the producer refuses at once (MSG_SIZE_TOO_LARGE, a fatal producer state) fails
        the append and nothing after it is produced: with nothing before it queued, the report
        is made at once; otherwise once the producer's queue has drained, so the records queued
        before it are delivered or failed before the append is reported (see ``_poll_loop``).
        """
        total = len(records)
        if total == 0:
            on_delivery(None, -1)
            return

        on_written = self.on_written

        def last_report(err: KafkaError | None, msg: Message) -> None:
            offset = msg.offset() if err is None else None
            if on_written is not None and offset is not None:
                on_written()
            on_delivery(err, -1 if offset is None else offset)

        produce, topic, last = self._producer.produce, self.topic, total - 1
        for index, (key, value, headers) in enumerate(records):
            callback = last_report if index == last else None
            while True:
                try:
                    # Positional: topic, value, key, partition, on_delivery, callback (its alias),
                    # timestamp (0: now), headers. confluent-kafka parses keyword arguments
                    # by name on every call: 1.9 us a record with them, 1.25 without (measured).
                    produce(topic, value, key, partition, callback, None, 0, headers)  # type: ignore[arg-type]  # the stub is invariant in the tuple type
                    break
                except BufferError:
                    # Local queue full: wait for the poll thread to drain delivery reports.
                    time.sleep(0.005)
                except KafkaException as exc:
                    error = _kafka_error(exc)
                    if producer_failed(error):
                        self._fail(error)
                    if index == 0:
                        on_delivery(error, -1)
                    else:
                        self._after_drain.append(partial(on_delivery, error, -1))
                    return

    def _poll_loop(self) -> None:
        # Learn the log topic's metadata now: a producer that first hears of a topic at its first
        # record takes about 0.7 s to deliver it (measured on the local broker), and a shard's
        # first record is the ShardEpoch that ends its load, so every failover waited that long.
        with contextlib.suppress(KafkaException):
            # Briefly: close() joins this thread, and without an answer the first record asks anyway.
            self._producer.list_topics(self.topic, timeout=2)
        while not self._stop.is_set():
            try:
                self._producer.poll(0.05)
            except KafkaException as exc:
                # librdkafka raises a fatal error (no error_cb is set) from poll(): the thread
                # must live on, to serve the failed delivery reports of what was in flight.
                self._fail(_kafka_error(exc))
                self._stop.wait(0.05)
            except Exception:  # a delivery report's callback raised: the others still need serving
                log.exception("log writer: handling a delivery report failed")
            if self._after_drain:
                # Counted before the queue is looked at: a report added later may have records
                # queued after the look.
                waiting = len(self._after_drain)
                if len(self._producer) == 0:
                    self._report_after_drain(waiting)

    def _fail(self, error: KafkaError) -> None:
        """The producer failed fatally: said once (to ``on_fatal``, or logged without one)."""
        if self.failed is not None:
            return
        self.failed = error
        if self.on_fatal is not None:
            self.on_fatal(self, error)
        else:
            log.error("log writer's producer failed fatally (%s); its appends fail from now on", error)

    def _report_after_drain(self, count: int) -> None:
        for _ in range(count):
            self._after_drain.popleft()()

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what can be within ``timeout``, then report the rest failed (purged): every
        append gets its report, so no shard waits for one that never comes. The poll thread is
        stopped first, so only this thread touches the producer from then on. A producer that
        failed fatally may raise its error from flush() or poll(): that is known already."""
        with contextlib.suppress(KafkaException):
            self._producer.flush(timeout)
        self._stop.set()
        self._thread.join()  # it polls in 50 ms steps; the metadata probe takes up to 2 s
        self._producer.purge()
        deadline = time.monotonic() + 1.0
        while True:
            with contextlib.suppress(KafkaException):
                self._producer.flush(0)  # serves the purged records' delivery reports
            if len(self._producer) == 0 or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        self._report_after_drain(len(self._after_drain))  # nothing more of theirs is queued


# Callbacks receive (partition, generation, ...).
RecordsCallback = Callable[[int, int, list[Message]], None]
ErrorCallback = Callable[[int, int, KafkaError], None]
LoadedCallback = Callable[[int, int, LoadResult | LoadFailed], None]


TAILER_SETTINGS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "isolation.level": "read_uncommitted",
    "auto.offset.reset": "earliest",
    # Responses wait on this reader: a long broker-side fetch wait is added latency (Tansu does not
    # answer a waiting fetch when records arrive, only at the end of the wait). What a short wait
    # costs an idle process is kept down by pausing idle partitions (see ``_Pacing``).
    "fetch.wait.max.ms": 5,
    "fetch.error.backoff.ms": 20,
    # Once more than queued.min.messages wait in librdkafka's queue, it stops fetching for this
    # long (default 1 s). A load replays slower than librdkafka fetches, so with the default
    # every ~100k records of a load cost up to a second of idle waiting (200k records loaded in
    # 1.8 s; 0.6-1.1 s with 10 ms).
    "fetch.queue.backoff.ms": 10,
}


class CollectorPause:
    """Holds CPython's cyclic garbage collector off while a load is read.

    A load makes a few objects per record (the message, its header list) that reference
    counting frees; none can form a cycle, yet they set off collections, and each of the full
    ones walks every object of the process. Measured on the runtime bench: one or two full
    collections per 100k records, 16-35 ms each with this bench's small heap, a fifth of the
    load; a coordinator holding many groups walks more. Cycles made meanwhile by the rest of
    the process are collected once the collector is back on. Only the reader's thread pauses
    and resumes; its pause is one of the process's counted holds (``collector.HOLDS``), so it
    never turns on a collector that was off before, nor one another pause still holds off.
    """

    def __init__(self) -> None:
        self._paused = False

    def pause(self) -> None:
        if not self._paused:
            HOLDS.hold()
            self._paused = True

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            HOLDS.release()


# How long the reader blocks waiting for a record: also how long a command (a shard to load)
# may wait while the reader tails idle partitions, as nothing can wake a blocked poll. 10 ms
# rather than 50 costs an idle process with 16 shards 2.5% of a core instead of 2.1% (measured).
_IDLE_POLL_S = 0.01

# An idle partition's pacing (``_Pacing``). A partition is read continuously while this process
# writes to it or records come from it, and for ``TAILER_HOT_S`` after; then it is paused, and
# resumed for ``TAILER_PEEK_S`` every ``TAILER_PEEK_EVERY_S`` (a peek). With the 5 ms fetch wait,
# an idle process sent ~100-200 empty Fetch requests a second through the reader relay to the
# broker: 40% of its idle CPU and most of the broker's (docs/benchmarks.md, "Idle CPU"). A peek
# spans several fetch waits, so a record another process wrote (a new owner's shard epoch, a
# ``groupcoord log`` write, a partition error) is read within about a peek's period and length
# (0.25 s) of an idle time; one of this process's own appends resumes its partition as soon as
# the append is delivered (``expect``), before any answer waits on its read-back, and it is not
# paused again until that append's last record is read back: with a round trip to the broker
# longer than ``TAILER_HOT_S`` (130 ms one-way, with a fetch already on its way, in a chaos probe)
# it was, the pause dropped the fetch answer bringing the record (librdkafka's version barrier),
# and no 25 ms peek could be answered again, so the write waited until the shard was reloaded.
TAILER_HOT_S = 1.0
TAILER_PEEK_EVERY_S = 0.2
TAILER_PEEK_S = 0.025
# A peek lasts at least twice the recent read-backs (``_Pacing.step``), which count for at most this.
_READ_BACK_CAP_S = 2.5


class LogTailer:
    """One consumer that reads every owned partition of the log from offset 0 and then tails it.

    It runs each partition's load (a ``ShardLoad``) on its own thread, reports the load's one
    result (``on_loaded``), then the records read after it (``on_records``) and partition errors. ``stall()`` makes it stop
    reading without dropping anything, so tests can show that responses wait for the log.
    """

    def __init__(
        self,
        client_config: dict[str, Any],
        topic: str,
        on_records: RecordsCallback,
        on_loaded: LoadedCallback,
        on_error: ErrorCallback,
        group_id: str = "groupcoord-tailer",
        on_behind: Callable[[], None] | None = None,
    ) -> None:
        self.topic = topic
        # Told (on this thread) when a poll found nothing although the broker's last answer
        # told of records past where a partition is read: the reader relay then sends the next
        # fetch with time to find them (``ReaderRelay.behind``; see ``_behind``).
        self._on_behind = on_behind
        self._on_records = on_records
        self._on_loaded = on_loaded
        self._on_error = on_error
        self._consumer = Consumer({**client_config, "group.id": group_id, **TAILER_SETTINGS})
        self._commands: queue.SimpleQueue[tuple[str, int, int, ShardLoad | None]] = queue.SimpleQueue()
        # partition -> generation of the assignment being read
        self._assigned: dict[int, int] = {}
        # partition -> its load, run on this thread until the end of the partition
        self._loading: dict[int, ShardLoad] = {}
        # Set with every command: an idle reader waits on it rather than sleeping, so a shard's
        # load starts as soon as it is asked for.
        self._wake = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._collector = CollectorPause()
        self._stalled = threading.Event()
        self._stop = threading.Event()
        self._pacing = _Pacing(self._consumer, topic, self._wake)
        self._thread = threading.Thread(target=self._loop, name="log-tailer", daemon=True)
        self._thread.start()

    def load(self, partition: int, generation: int, load: ShardLoad) -> None:
        """Read ``partition`` from offset 0 into ``load``, then tail it; callbacks carry
        ``generation`` so stale ones can be told apart.

        The load's records, up to the end of the partition, are fed to it on this thread, where
        they are read, and the load ended here too: handing every batch of a load over to the
        loop thread cost a quarter of the load's time (the records made on one thread, taken
        apart on another). ``on_loaded`` reports its result (or ``LoadFailed``); this thread
        does not touch the load after that, nor after a new command for the partition. The
        records after the end go to ``on_records``."""
        self._commands.put(("assign", partition, generation, load))
        self._wake.set()

    def unassign(self, partition: int) -> None:
        self._commands.put(("unassign", partition, -1, None))
        self._wake.set()

    def expect(self, partition: int, offset: int | None = None) -> None:
        """This process has appended to ``partition`` (called from any thread, once the append
        is delivered), its last record at ``offset`` if known: read it continuously from now,
        resuming it at once if it was paused, and not paused again before that record is read."""
        self._pacing.expect(partition, offset)

    @property
    def paused(self) -> frozenset[int]:
        """The partitions paused as idle (between peeks)."""
        return self._pacing.paused

    def stall(self, timeout: float = 5.0) -> None:
        """Stop reading; returns once the reader thread has stopped (nothing more is delivered)."""
        self._stalled.clear()
        self._running.clear()
        self._stalled.wait(timeout)

    def resume(self) -> None:
        self._running.set()

    def _apply_commands(self) -> None:
        while True:
            try:
                op, partition, generation, load = self._commands.get_nowait()
            except queue.Empty:
                return
            self._loading.pop(partition, None)
            if partition in self._assigned:
                # Resumed first: a pause outlives the assignment in librdkafka, and a later
                # load of the partition must not start paused.
                self._pacing.forget(partition)
                self._consumer.incremental_unassign([TopicPartition(self.topic, partition)])
                del self._assigned[partition]
            if op == "assign":
                # Assigning always restarts from offset 0: that is what a (re)load is. Offset 0
                # rather than OFFSET_BEGINNING: the latter first asks the broker for the log's start,
                # which cost half of the loads measured here half a second before the first record;
                # a log that no longer starts at 0 is out of range and auto.offset.reset takes the
                # reader to its earliest record.
                self._consumer.incremental_assign([TopicPartition(self.topic, partition, 0)])
                self._assigned[partition] = generation
                self._pacing.touch(partition)
                if load is not None:
                    self._loading[partition] = load

    def _loop(self) -> None:
        try:
            self._read_until_stopped()
        finally:  # whatever ends this thread must not leave the process without its collector
            self._collector.resume()

    def _read_until_stopped(self) -> None:
        while not self._stop.is_set():
            # Held off only while a load's records keep coming: while waiting on the broker,
            # stalled, or tailing, the collector runs as usual.
            if self._read_once():
                self._collector.pause()
            else:
                self._collector.resume()

    def _read_once(self) -> bool:
        """Apply the commands, read what there is and deliver it; whether a load was fed."""
        self._apply_commands()
        if not self._running.is_set():
            self._stalled.set()
            time.sleep(0.01)
            return False
        if not self._assigned:
            self._wake.wait(0.05)
            self._wake.clear()  # the commands are in the queue, applied first thing
            return False
        idle_for = self._pacing.idle_for(self._assigned, self._loading)
        if idle_for > 0:
            # Every partition paused: nothing to poll for until the next peek, a command or an
            # append's resume (each sets the event). Polling every 10 ms meanwhile had become
            # most of an idle process's reader CPU (9-11 ms/s of 20, measured).
            self._wake.wait(idle_for)
            self._wake.clear()
            self._pacing.step(self._assigned, self._loading)
            return False
        try:
            # consume() with a timeout waits for a full batch; take what is there and
            # block only on the first record, so a lone record is delivered at once.
            messages = self._consumer.consume(num_messages=2000, timeout=0)
            if not messages:
                first = self._consumer.poll(_IDLE_POLL_S)
                if first is not None:
                    messages = [first, *self._consumer.consume(num_messages=1999, timeout=0)]
        except KafkaException as exc:
            log.warning("log tailer consume failed: %s", exc)
            time.sleep(0.1)
            return False
        if not messages and self._on_behind is not None and self._behind():
            self._on_behind()
        if not self._deliver_plain(messages):
            self._deliver_mixed(messages)
        self._pacing.step(self._assigned, self._loading)
        return bool(messages) and bool(self._loading)

    def _deliver_mixed(self, messages: list[Message]) -> None:
        """Deliver records of several partitions, or with errors (the end of a partition among them)."""
        by_partition: dict[int, list[Message]] = {}
        for msg in messages:
            err = msg.error()
            partition = msg.partition()
            if partition is None:
                if err is not None:
                    log.warning("log tailer error: %s", err)
                continue
            generation = self._assigned.get(partition)
            if generation is None:
                continue
            if err is None:
                by_partition.setdefault(partition, []).append(msg)
                continue
            pending = by_partition.pop(partition, None)
            if pending:
                self._deliver(partition, generation, pending)
            if err.code() == KafkaError._PARTITION_EOF:
                # The load is read (the end of a partition being tailed, or of a load ended at
                # its high watermark, says nothing new).
                self._end_load(partition, generation, msg.offset() or 0)
            else:
                self._on_error(partition, generation, err)
        for partition, batch in by_partition.items():
            self._deliver(partition, self._assigned[partition], batch)

    def _deliver_plain(self, messages: list[Message]) -> bool:
        """Deliver the common batch, records of one assigned partition and no error, as a whole
        (a load reads many thousands of them: checked with C-level calls, not record by record)."""
        if not messages:
            return True
        partition = messages[0].partition()
        if partition is None or partition not in self._assigned:
            return False
        generation = self._assigned[partition]
        # any(), not a count of None: KafkaError's == leaves an exception set when compared with None.
        if any(map(Message.error, messages)):
            return False
        if list(map(Message.partition, messages)).count(partition) != len(messages):
            return False
        # Every one is a Message (the checks above called Message's own methods on each).
        self._deliver(partition, generation, messages, Message)
        return True

    def _deliver(
        self, partition: int, generation: int, messages: list[Message], of_class: type[LogMessage] | None = None
    ) -> None:
        self._pacing.consumed(partition, messages[-1])
        load = self._loading.get(partition)
        if load is None:
            self._pacing.touch(partition)  # records keep coming: it stays read continuously
            self._on_records(partition, generation, messages)
            return
        try:
            load.feed(messages, of_class)
        except LoadFailed as exc:
            del self._loading[partition]
            self._on_loaded(partition, generation, exc)
            return
        # The fetch that brought these records also told where the partition ends (its high
        # watermark, kept by librdkafka): a load that has read up to it is read. librdkafka says
        # so itself (the end-of-partition event) only after one more fetch, a round trip to the
        # broker that every load waited for: 5 ms on a quiet machine (the broker holds an empty
        # fetch for fetch.wait.max.ms), 0.1-0.2 s measured in drills at load average 6-8, when
        # each of a load's round trips (this one, the first fetch, the claim's append and its
        # read-back) took that long. Where records the reader never sees end the partition (a
        # transaction's marker), the load ends at the event as before.
        end = self._high_watermark(partition)
        last = messages[-1].offset()
        if last is not None and end > 0 and last + 1 >= end:
            # Where reading goes on: the record after the last one read (the high watermark,
            # unless the cached one were older than these records).
            self._end_load(partition, generation, last + 1)

    def _behind(self) -> bool:
        """Whether a partition being read (loaded or tailed, not paused) has records past the
        one to read next, by the high watermark of the broker's last answer. A broker that cuts
        its work short at the fetch's wait answers such a fetch with nothing (Tansu's memory
        store, see ``reader_relay``), a load's as much as a tail's: asking again the same way,
        the reader would never get them."""
        paused = self._pacing.paused
        for partition in self._assigned:
            if partition in paused:
                continue
            position = self._pacing.next_offset(partition)
            if position is None and partition in self._loading:
                position = 0  # nothing delivered yet: a load reads from offset 0 (``_apply_commands``)
            if position is not None and self._high_watermark(partition) > position:
                return True
        return False

    def _high_watermark(self, partition: int) -> int:
        """The end of ``partition`` as of the last fetch (no request: librdkafka's cached value), or -1."""
        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, partition), cached=True)
        except KafkaException:
            return -1
        return int(high)

    def _end_load(self, partition: int, generation: int, end_offset: int) -> None:
        """The reader is at ``end_offset``, the end of ``partition``: its load, if any, ends."""
        load = self._loading.pop(partition, None)
        if load is not None:
            # The end places the load's groups (its offsets table): long-lived state, frozen once
            # placed. Held off meanwhile, whatever the last poll found: after an empty one the
            # collector is on, and young collections walked the groups as they were placed (a
            # 224 ms one, 100k groups).
            self._collector.pause()
            self._on_loaded(partition, generation, load.end(end_offset))

    def close(self) -> None:
        self._stop.set()
        self._running.set()
        self._wake.set()
        self._thread.join(5)
        self._pacing.close()  # no resume from another thread after this
        self._consumer.close()


class _Pacing:
    """Which of the tailer's partitions are paused as idle, and their peeks (``TAILER_HOT_S``).

    ``step``, ``touch`` and ``forget`` run on the tailer's thread; ``expect`` on whichever
    thread reports an append. The lock makes an append's resume and an idle pause of the same
    partition exclusive, so a partition an append was just reported for is never left paused."""

    def __init__(self, consumer: Consumer, topic: str, wake: threading.Event) -> None:
        self._consumer = consumer
        self._topic = topic
        self._wake = wake  # the tailer's, which waits on it while every partition is paused
        self._lock = threading.Lock()
        self._last_active: dict[int, float] = {}  # partition -> when last written or read (monotonic)
        self._paused: set[int] = set()
        # partition -> (offset after the last record delivered, that record's leader epoch)
        self._positions: dict[int, tuple[int, int]] = {}
        # partition -> (the last offset this process appended to it and has not read back yet,
        # when the first of those appends was reported): never paused meanwhile (``step``).
        self._owed: dict[int, tuple[int, float]] = {}
        # How long the latest read-backs took from their append's report to the record (a
        # round trip to the broker or two): a peek lasts at least twice that (``step``).
        self._read_back_s = 0.0
        self._next_step = 0.0
        self._next_peek = 0.0
        self._peek_ends = 0.0
        self._closed = False

    @property
    def paused(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._paused)

    def expect(self, partition: int, offset: int | None = None) -> None:
        with self._lock:
            now = time.monotonic()
            self._last_active[partition] = now
            if offset is not None and offset >= 0:
                owed = self._owed.get(partition)
                self._owed[partition] = (offset, now) if owed is None else (max(owed[0], offset), owed[1])
            if partition in self._paused and not self._closed:
                self._paused.discard(partition)
                self._resume([partition])
                self._wake.set()

    def touch(self, partition: int) -> None:
        # A plain store: ``step`` reads it under the lock on this same thread.
        self._last_active[partition] = time.monotonic()

    def forget(self, partition: int) -> None:
        with self._lock:
            self._last_active.pop(partition, None)
            self._positions.pop(partition, None)
            self._owed.pop(partition, None)
            if partition in self._paused:
                self._paused.discard(partition)
                self._consumer.resume([TopicPartition(self._topic, partition)])

    def idle_for(self, assigned: dict[int, int], loading: dict[int, ShardLoad]) -> float:
        """How long the tailer may wait without polling: until the next peek when every
        assigned partition is paused (only assigned ones are), else 0."""
        if loading or len(self._paused) < len(assigned):
            return 0.0
        return max(0.0, self._next_peek - time.monotonic())

    def step(self, assigned: dict[int, int], loading: dict[int, ShardLoad]) -> None:
        """Pause what went idle, and run the peeks; acts at most once per poll wait."""
        now = time.monotonic()
        if now < self._next_step:
            return
        self._next_step = now + _IDLE_POLL_S
        with self._lock:
            if self._paused and now >= self._next_peek:
                self._resume(sorted(self._paused))
                self._paused.clear()
                # A peek reads only if a fetch of the partition is answered before it ends: a
                # pause drops the answer of a fetch still on its way (librdkafka's version
                # barrier), so a peek shorter than the round trip to the broker reads nothing.
                self._peek_ends = now + max(TAILER_PEEK_S, 2 * self._read_back_s)
            if now < self._peek_ends:
                return
            cold = now - TAILER_HOT_S
            # Only a partition with a known position and leader epoch is paused: its resume can
            # wake librdkafka at once (``_resume``). Without one (a cluster whose record batches
            # carry no leader epoch) a resume would wait out librdkafka's own wait, longer than a
            # peek, so such a partition is read continuously, as before pacing.
            idle = [
                p
                for p in assigned
                if p not in self._paused
                and p not in loading
                and p in self._positions
                and p not in self._owed
                and self._last_active.get(p, now) <= cold
            ]
            if idle:
                self._consumer.pause([TopicPartition(self._topic, p) for p in idle])
                self._paused.update(idle)
            if self._paused and now >= self._next_peek:
                self._next_peek = now + TAILER_PEEK_EVERY_S

    def _resume(self, partitions: list[int]) -> None:
        """Resume, and seek one of them to where it was, to wake librdkafka's broker thread.

        Resume alone does not wake it: it looked at the partitions again only after its own
        wait (0.65-0.73 s measured, local broker). A seek to an offset with its leader epoch
        has librdkafka check the position with the leader (an OffsetForLeaderEpoch request),
        which wakes the thread; the first record came 0.6-1.0 ms after the resume (measured),
        and the thread then fetches every resumed partition at once, so one seek is enough.
        Paused, nothing of a partition is delivered, so where it was (the record after the last
        one delivered, ``consumed``) is where reading goes on. A partition with no record read
        since it was assigned has no epoch to seek with and is left to the thread's own wait;
        every shard's partition has its ShardEpoch record read once loaded."""
        self._consumer.resume([TopicPartition(self._topic, p) for p in partitions])
        for p in partitions:
            position = self._positions.get(p)
            if position is not None:
                offset, epoch = position
                self._consumer.seek(TopicPartition(self._topic, p, offset, leader_epoch=epoch))
                return

    def next_offset(self, partition: int) -> int | None:
        """The offset after the last record delivered of ``partition``, if one was."""
        position = self._positions.get(partition)
        return None if position is None else position[0]

    def consumed(self, partition: int, last: Message) -> None:
        """The last record delivered of ``partition`` (on the tailer's thread)."""
        epoch = last.leader_epoch()
        offset = last.offset()
        if epoch is not None and epoch >= 0 and offset is not None:
            self._positions[partition] = (offset + 1, epoch)
        if partition in self._owed and offset is not None:
            with self._lock:
                owed = self._owed.get(partition)
                if owed is not None and offset >= owed[0]:
                    del self._owed[partition]
                    # Capped: a read-back that waited out a broker outage says nothing of the
                    # round trip, and peeks that long would read an idle process continuously.
                    took = min(time.monotonic() - owed[1], _READ_BACK_CAP_S)
                    # A slower link is believed at once, a faster one over a few read-backs.
                    self._read_back_s = took if took > self._read_back_s else (self._read_back_s + took) / 2

    def close(self) -> None:
        with self._lock:
            self._closed = True
