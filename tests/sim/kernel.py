"""The simulation kernel: simulated time, a network, and a simulated log that hosts real shards.

``SimLoop`` is an asyncio event loop whose clock moves only from event to event, so the real
``runtime.Shard`` (futures, ``call_soon``/``call_later`` timers) runs on it unchanged and a whole
run is a pure function of its seed. ``SimLog`` is an in-memory log topic (offsets, compaction,
append faults); ``SimHost`` is one coordinator process's view of it and implements ``ShardHost``,
so the shard's write path, read-back release, batch abort and epoch fencing, its transition
table, and the production load (``ShardLoad``: bulk runs, skips, restores, load failures) are what
the scenarios exercise. Several hosts over one log model ownership moves and zombies.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError

from groupcoord.coordinator.runtime.api import ShardState
from groupcoord.coordinator.runtime.clock import ManualClock
from groupcoord.coordinator.runtime.load import LoadFailed, ShardLoad
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.coordinator.runtime.shard import (
    DeliveryReport,
    LogRecord,
    Shard,
    ShardHandlers,
    ShardObserver,
    ShardPhase,
)

LOG_TOPIC = "sim-log"


class InvariantViolation(AssertionError):
    pass


class SimHandle:
    __slots__ = ("at", "callback", "args", "cancelled")

    def __init__(self, at: int, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.at = at
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SimLoop(asyncio.AbstractEventLoop):
    """Just enough of an event loop for ``Shard`` and ``asyncio.Future``, on simulated time."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self._heap: list[tuple[int, int, SimHandle]] = []
        self._seq = 0

    # --- what Future and Shard use ---------------------------------------------------------
    def time(self) -> float:
        return self.clock.now_ms() / 1000

    def get_debug(self) -> bool:
        return False

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        pass  # an unretrieved exception of a dropped future: the simulations check outcomes

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def at(self, at_ms: int, callback: Callable[..., Any], *args: Any) -> SimHandle:
        handle = SimHandle(max(at_ms, self.clock.now_ms()), callback, args)
        self._seq += 1
        heapq.heappush(self._heap, (handle.at, self._seq, handle))
        return handle

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> SimHandle:  # type: ignore[override]
        return self.at(self.clock.now_ms(), callback, *args)

    call_soon_threadsafe = call_soon  # type: ignore[assignment]

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any, context: Any = None) -> SimHandle:  # type: ignore[override]
        return self.at(self.clock.now_ms() + math.ceil(delay * 1000), callback, *args)

    # --- driving -----------------------------------------------------------------------------
    def next_at(self) -> int | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def step(self) -> bool:
        """Run the next event (advancing the clock to it); False when nothing is left."""
        at = self.next_at()
        if at is None:
            return False
        _, _, handle = heapq.heappop(self._heap)
        if at > self.clock.now_ms():
            self.clock.advance(at - self.clock.now_ms())
        handle.callback(*handle.args)
        return True


def sim_loop(clock: ManualClock | None = None) -> SimLoop:
    """A new ``SimLoop``: construct it here, not by its class (see the ignore's reason)."""
    # typeshed marks every AbstractEventLoop method abstract, yet asyncio's class is no ABC (its methods
    # raise NotImplementedError); SimLoop implements what Shard and Future call and no more, on purpose.
    return SimLoop(clock)  # type: ignore[abstract]


class Network:
    """Responses that are lost, duplicated or delayed; requests of one client stay in order."""

    def __init__(self, loop: SimLoop, rng: random.Random, fault_rate: float) -> None:
        self.loop = loop
        self.rng = rng
        self.fault_rate = fault_rate
        self._last_arrival: dict[Any, int] = {}

    def latency(self) -> int:
        if self.rng.random() < self.fault_rate:
            return self.rng.randint(200, 2000)  # a delayed packet
        return self.rng.randint(1, 15)

    def lost(self) -> bool:
        return self.rng.random() < self.fault_rate / 2

    def request(self, client: Any, deliver: Callable[[], None]) -> bool:
        """Send a request over the client's connection (TCP order); False if it was lost."""
        if self.rng.random() < self.fault_rate / 2:
            return False
        now = self.loop.clock.now_ms()
        at = max(now + self.latency(), self._last_arrival.get(client, 0) + 1)
        self._last_arrival[client] = at
        self.loop.at(at, deliver)
        return True

    def respond(self, deliver: Callable[[], None]) -> None:
        roll = self.rng.random()
        if roll < self.fault_rate / 2:
            return  # lost
        now = self.loop.clock.now_ms()
        self.loop.at(now + self.latency(), deliver)
        if roll > 1 - self.fault_rate / 4:
            self.loop.at(now + self.latency(), deliver)  # duplicated


@dataclass(slots=True)
class Entry:
    offset: int
    key: bytes
    value: bytes | None
    headers: list[tuple[str, bytes]]
    written_ms: int = 0


class SimMessage:
    __slots__ = ("_e",)

    def __init__(self, entry: Entry) -> None:
        self._e = entry

    def offset(self) -> int:
        return self._e.offset

    def key(self) -> bytes:
        return self._e.key

    def value(self) -> bytes | None:
        return self._e.value

    def headers(self) -> list[tuple[str, bytes]]:
        return self._e.headers


@dataclass
class LogFaults:
    """Append faults: a failed append writes nothing from that record on; an ambiguous one is
    written but reported failed (a timed-out produce that did land). As the idempotent producer
    with ``enable.gapless.guarantee``, the writer then fails every later record of the partition
    until the shard reloads (the runtime replaces the fatally failed writer). ``writer_limit`` is
    the largest record the writer takes (bigger ones are refused at once, MSG_SIZE_TOO_LARGE)."""

    fail_rate: float = 0.0
    ambiguous_rate: float = 0.0
    writer_limit: int = 1_000_000


@dataclass
class SimLog:
    """One log topic: per partition an ordered list of entries with offsets, and its end."""

    partitions: int = 1
    entries: dict[int, list[Entry]] = field(default_factory=dict)
    end: dict[int, int] = field(default_factory=dict)
    listeners: list[Callable[[int], None]] = field(default_factory=list)
    clock: ManualClock | None = None  # stamps entries, for the compaction lag

    def write(self, partition: int, key: bytes, value: bytes | None, headers: list[tuple[str, bytes]]) -> int:
        offset = self.end.get(partition, 0)
        written = self.clock.now_ms() if self.clock is not None else 0
        self.entries.setdefault(partition, []).append(Entry(offset, key, value, list(headers), written))
        self.end[partition] = offset + 1
        for listener in self.listeners:
            listener(partition)
        return offset

    def read(self, partition: int, start: int, limit: int) -> list[Entry]:
        entries = self.entries.get(partition, [])
        lo, hi = 0, len(entries)
        while lo < hi:  # first entry at or after start (offsets have gaps after compaction)
            mid = (lo + hi) // 2
            if entries[mid].offset < start:
                lo = mid + 1
            else:
                hi = mid
        return entries[lo : lo + limit]

    def compact(self, partition: int, keep_head: int, min_lag_ms: int = 0) -> int:
        """Kafka's log cleaner: outside the last ``keep_head`` records (the active segment) and
        the records younger than ``min_lag_ms`` (``min.compaction.lag.ms``), keep only the latest
        record per key and drop tombstones. As Kafka's cleaner, it never looks past what it may
        clean: a record there is not superseded by one in the head. Returns how many were removed."""
        entries = self.entries.get(partition, [])
        cut = max(0, len(entries) - keep_head)
        if min_lag_ms and self.clock is not None:
            oldest_kept = self.clock.now_ms() - min_lag_ms
            while cut > 0 and entries[cut - 1].written_ms > oldest_kept:
                cut -= 1
        latest: dict[bytes, int] = {}
        for e in entries[:cut]:
            latest[e.key] = e.offset
        kept = [e for e in entries[:cut] if latest[e.key] == e.offset and e.value is not None]
        removed = cut - len(kept)
        self.entries[partition] = kept + entries[cut:]
        return removed

    def replay(self, partition: int, state: ShardState) -> LogReplayer:
        """A fresh replay of the whole partition, as a new owner would load it."""
        replayer = LogReplayer(LOG_TOPIC, partition, [state])
        for e in self.entries.get(partition, []):
            replayer.feed(e.offset, e.key, e.value, e.headers)
        return replayer


class TransitionLog(ShardObserver):
    """Every phase change of a host's shards, in order, for ``invariants.invariant_shard_life``."""

    def __init__(self) -> None:
        # (the shard, kept so that its id stays its own, phase before, phase after)
        self.seen: list[tuple[Shard[Any], ShardPhase, ShardPhase]] = []
        self.checked = 0  # how many of ``seen`` the invariant has checked
        self.phase_of: dict[int, ShardPhase] = {}  # id of the shard -> its phase, as checked so far

    def transitioned(self, shard: Shard[Any], before: ShardPhase, after: ShardPhase) -> None:
        self.seen.append((shard, before, after))


class SimHost:
    """One coordinator process over a ``SimLog``: the ``ShardHost`` of its shards."""

    topic = LOG_TOPIC

    def __init__(
        self,
        log: SimLog,
        loop: SimLoop,
        owner_id: str,
        rng: random.Random,
        faults: LogFaults | None = None,
        max_record_bytes: int = 1_000_000,
    ) -> None:
        self.log = log
        self.loop: SimLoop = loop
        self.clock = loop.clock
        self.owner_id = owner_id
        self.rng = rng
        self.faults = faults or LogFaults()
        self.max_record_bytes = max_record_bytes
        self.shards: dict[int, Shard[Any]] = {}
        self.stalled = False
        self._readers: dict[int, list[int]] = {}  # partition -> [generation, next offset, scheduled]
        self._loads: dict[int, ShardLoad] = {}  # partition -> the load its reader runs, until the end
        self.transitions = TransitionLog()
        self._wedged: dict[int, int] = {}  # partition -> the reader generation that delivers nothing
        self._write_at = 0  # one producer: appends land in the order they were made
        self._poisoned: set[int] = set()  # partitions whose writer failed (gapless guarantee)
        log.listeners.append(self._wake)
        self.appended = 0
        self.failed_appends = 0

    def shard(self, partition: int, handlers: ShardHandlers[Any]) -> Shard[Any]:
        shard = self.shards.get(partition)
        if shard is None:
            shard = self.shards[partition] = Shard(self, partition, handlers)
            shard.observer = self.transitions
        return shard

    # --- ShardHost -----------------------------------------------------------------------------
    def append(self, partition: int, records: list[LogRecord], on_delivered: DeliveryReport) -> None:
        faults = self.faults
        now = self.clock.now_ms()
        for index, (key, value, headers) in enumerate(records):
            size = len(key) + len(value or b"") + sum(len(n) + len(v) for n, v in headers)
            if size > faults.writer_limit:
                # Refused by the writer at once: this record and the rest are reported failed.
                for rest in range(index, len(records)):
                    self.loop.call_soon(on_delivered, rest, 1, KafkaError(KafkaError.MSG_SIZE_TOO_LARGE), -1)
                self.failed_appends += 1
                return
            roll = self.rng.random()
            self._write_at = max(self._write_at, now + self.rng.randint(0, 4))
            if roll < faults.fail_rate or partition in self._poisoned:
                self._poisoned.add(partition)
                self.failed_appends += 1
                for rest in range(index, len(records)):
                    self.loop.at(self._write_at, on_delivered, rest, 1, KafkaError(KafkaError._MSG_TIMED_OUT), -1)
                return
            ambiguous = roll < faults.fail_rate + faults.ambiguous_rate
            if ambiguous:
                self._poisoned.add(partition)
            self.loop.at(self._write_at, self._land, partition, index, key, value, headers, on_delivered, ambiguous)

    def _land(
        self,
        partition: int,
        index: int,
        key: bytes,
        value: bytes | None,
        headers: list[tuple[str, bytes]],
        on_delivered: DeliveryReport,
        ambiguous: bool,
    ) -> None:
        offset = self.log.write(partition, key, value, headers)
        self.appended += 1
        if ambiguous:
            self.failed_appends += 1
            self.loop.call_later(0.001, on_delivered, index, 1, KafkaError(KafkaError._MSG_TIMED_OUT), -1)
        else:
            self.loop.call_later(0.001, on_delivered, index, 1, None, offset)

    def load(self, partition: int, generation: int, load: ShardLoad) -> None:
        # The simulated reader runs the load as the production reader does (``LogTailer``),
        # on the simulated loop: the same ``ShardLoad``, fed in batches of random sizes.
        self._poisoned.discard(partition)  # a reload appends through a new writer
        self._readers[partition] = [generation, 0, 0]
        self._loads[partition] = load
        self._schedule_read(partition)

    def unassign(self, partition: int) -> None:
        self._readers.pop(partition, None)
        self._loads.pop(partition, None)

    def drain_reads(self) -> None:
        """Nothing to hand over: the simulated reader runs its callbacks as its events fire."""

    def may_reload(self, partition: int, reason: str) -> bool:
        return True  # one simulated process per shard decides for itself

    # --- the reader ----------------------------------------------------------------------------
    def stall(self) -> None:
        self.stalled = True

    def wedge(self, partition: int) -> None:
        """The reader of ``partition`` stops delivering for its current assignment only (as a
        client's fetch state can wedge); assigning the partition anew (a reload) reads again."""
        reader = self._readers.get(partition)
        if reader is not None:
            self._wedged[partition] = reader[0]

    def resume(self) -> None:
        self.stalled = False
        for partition in self._readers:
            self._schedule_read(partition)

    def _wake(self, partition: int) -> None:
        if partition in self._readers:
            self._schedule_read(partition)

    def _schedule_read(self, partition: int) -> None:
        reader = self._readers.get(partition)
        if reader is not None and not reader[2] and not self.stalled:
            reader[2] = 1
            self.loop.call_later(self.rng.randint(1, 5) / 1000, self._read, partition, reader[0])

    def _read(self, partition: int, generation: int) -> None:
        reader = self._readers.get(partition)
        if reader is None or reader[0] != generation:
            return
        reader[2] = 0
        if self.stalled or self._wedged.get(partition) == generation:
            return
        shard = self.shards.get(partition)
        if shard is None:
            return
        batch = self.log.read(partition, reader[1], self.rng.randint(1, 64))
        load = self._loads.get(partition)
        if batch:
            reader[1] = batch[-1].offset + 1
            messages = [SimMessage(e) for e in batch]
            self._schedule_read(partition)
            if load is None:
                shard.on_records(generation, messages)  # type: ignore[arg-type]
                return
            try:
                load.feed(messages)
            except LoadFailed as exc:
                del self._loads[partition]
                shard.on_loaded(generation, exc)
        elif load is not None:
            del self._loads[partition]
            shard.on_loaded(generation, load.end(self.log.end.get(partition, 0)))


class OneShardRuntime:
    """The part of ``CoordinatorRuntime`` a ``GroupCoordinatorService`` uses, over one simulated shard."""

    partitions = 1

    def __init__(self, shard: Shard[Any]) -> None:
        self._shard = shard

    def shard(self, partition: int) -> Shard[Any]:
        return self._shard
