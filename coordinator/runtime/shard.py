"""One shard: a log partition as a replicated state machine (DESIGN.md, "Write path and read path").

All methods run on the runtime's asyncio loop thread, so state is touched by one thread only.

- ``live`` is the state including writes not yet committed; write handlers see it, so the next
  event sees the previous one's effect.
- ``committed`` is the replay of what the tailing reader has read back from the log, i.e. the
  committed prefix; reads are served from it, and once the reader has caught up the two are equal
  (invariant 3, checked by ``replay_matches``).
- Writes queued in the same loop iteration are appended together (adaptive batching); each
  handler's records form one atomic batch in the log.
- A response is released only when the reader has read past the handler's last record (or, for a
  handler that wrote nothing, past everything written before it).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from confluent_kafka import KafkaError, Message

from coordinator.runtime.api import CancelTimer, Park, Result, ScheduleTimer, ShardState, TimerOp
from coordinator.runtime.headers import make_headers
from coordinator.runtime.log import LogWriter
from coordinator.runtime.replayer import LogReadError, LogReplayer
from records import CoordinatorRecord, RecordType, encode
from records.codec import record_type_of
from records.definitions import BatchAbortKey, BatchAbortValue, ShardEpochKey, ShardEpochValue

if TYPE_CHECKING:
    from coordinator.runtime.runtime import CoordinatorRuntime

log = logging.getLogger(__name__)

S = TypeVar("S", bound=ShardState)
T = TypeVar("T")


class ShardHandlers(Protocol[S]):
    """What the runtime needs from the state machine beyond request handlers."""

    def create_state(self) -> S: ...

    def on_loaded(self, state: S, now_ms: int) -> Result[None]: ...

    def on_timer(self, state: S, event: Any, now_ms: int) -> Result[None]: ...


class ShardStatus(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    FENCED = "fenced"
    CLOSED = "closed"


class ShardNotAvailable(Exception):
    """The shard cannot serve now; ``status`` says why (the service maps it to a Kafka error)."""

    def __init__(self, partition: int, status: ShardStatus, detail: str = "") -> None:
        super().__init__(f"shard {partition} is {status.value}{': ' + detail if detail else ''}")
        self.partition = partition
        self.status = status


@dataclass(slots=True)
class _Pending:
    last_offset: int
    future: asyncio.Future[Any] | None
    response: Any
    completions: list[tuple[Hashable, Any]] | None = None


@dataclass(slots=True)
class LoadReport:
    partition: int
    records: int
    seconds: float
    epoch: int


class Shard(Generic[S]):
    def __init__(self, runtime: CoordinatorRuntime, partition: int, handlers: ShardHandlers[S]) -> None:
        self.runtime = runtime
        self.partition = partition
        self.handlers = handlers
        self.status = ShardStatus.CLOSED
        self.error: str | None = None
        self.generation = 0
        self.epoch = 0
        self.live: S = handlers.create_state()
        self.committed: S = handlers.create_state()
        self.next_offset = 0  # offset the next appended record will get
        self.committed_offset = 0  # offset the reader will read next
        self.load_report: LoadReport | None = None
        self._replayer = LogReplayer(runtime.topic, partition, [])
        self._queue: list[tuple[Callable[[S, int], Result[Any]], asyncio.Future[Any]]] = []
        self._flush_scheduled = False
        self._pending: deque[_Pending] = deque()
        self._inflight: dict[int, CoordinatorRecord] = {}
        self._parked: dict[Hashable, asyncio.Future[Any]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._load_started = 0.0
        self._finishing = False
        self._loaded = asyncio.Event()

    # --- lifecycle -----------------------------------------------------------------------

    def load(self) -> None:
        self.generation += 1
        self.status = ShardStatus.LOADING
        self.error = None
        self.live = self.handlers.create_state()
        self.committed = self.handlers.create_state()
        self._replayer = LogReplayer(self.runtime.topic, self.partition, [self.committed, self.live], deferred=True)
        self._inflight.clear()
        self._cancel_timers()
        self._loaded.clear()
        self._finishing = False
        self._load_started = time.perf_counter()
        self.runtime.tailer.assign_from_start(self.partition, self.generation)

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    def close(self) -> None:
        self.generation += 1
        self._fail_all(ShardStatus.CLOSED)
        self.status = ShardStatus.CLOSED
        self._cancel_timers()
        self.runtime.tailer.unassign(self.partition)
        self._loaded.set()

    def _fail(self, reason: str) -> None:
        self.error = reason
        self.generation += 1
        self.status = ShardStatus.FAILED
        self._fail_all(ShardStatus.FAILED, reason)
        self._cancel_timers()
        self.runtime.tailer.unassign(self.partition)
        self._loaded.set()
        log.error("shard %d failed: %s", self.partition, reason)

    def reload(self, reason: str) -> None:
        log.warning("shard %d reloading from the log: %s", self.partition, reason)
        self._fail_all(ShardStatus.LOADING, reason)
        if not self.runtime.may_reload(self.partition, reason):
            # A reload claims a new epoch; with several processes only placement may decide that.
            self._fence(self.epoch)
            self.error = f"stopped after {reason}; placement decides whether it reloads"
            return
        self.load()

    def _fence(self, epoch: int) -> None:
        self.generation += 1
        self.status = ShardStatus.FENCED
        self.error = f"epoch {epoch} written by another owner (ours is {self.epoch})"
        self._fail_all(ShardStatus.FENCED, self.error)
        self._cancel_timers()
        self.runtime.tailer.unassign(self.partition)
        self._loaded.set()
        log.error("shard %d fenced: %s", self.partition, self.error)

    def _fail_all(self, status: ShardStatus, detail: str = "") -> None:
        queued, self._queue = self._queue, []
        pending, self._pending = self._pending, deque()
        parked, self._parked = self._parked, {}
        futures = [f for _, f in queued] + [p.future for p in pending if p.future is not None] + list(parked.values())
        for fut in futures:
            if not fut.done():
                fut.set_exception(ShardNotAvailable(self.partition, status, detail))

    # --- reader callbacks (on the loop thread) -------------------------------------------

    def on_records(self, generation: int, messages: list[Message]) -> None:
        if generation != self.generation:
            return
        replayer = self._replayer
        foreign: int | None = None
        try:
            for msg in messages:
                offset = msg.offset()
                if offset is None or offset < replayer.next_offset:
                    continue
                ours = self._inflight.pop(offset, None)
                replayer.feed(offset, msg.key(), msg.value(), msg.headers(), ours)
                if (
                    ours is None
                    and self._finishing
                    and replayer.max_epoch >= self.epoch
                    and record_type_of(msg.key()) == RecordType.SHARD_EPOCH
                ):
                    # Another process claimed this shard with an epoch no lower than ours (two
                    # loaders can pick the same one): whatever we wrote after it is ignored by
                    # every replay, so nothing more may be acknowledged.
                    foreign = replayer.max_epoch
        except LogReadError as exc:
            self._fail(str(exc))
            return
        except Exception as exc:  # a replay bug must not leave a half-applied state serving
            self._fail(f"replay failed at offset {replayer.next_offset - 1}: {exc!r}")
            return
        self.committed_offset = replayer.next_offset
        if foreign is not None:
            if self.runtime.reload_guard is None:
                self._fence(foreign)
            else:
                self.reload(f"epoch {foreign} written by another owner (ours is {self.epoch})")
            return
        if self.status is ShardStatus.ACTIVE and replayer.max_epoch > self.epoch:
            self._fence(replayer.max_epoch)
            return
        self._release()

    def on_end(self, generation: int, end_offset: int) -> None:
        if generation != self.generation or self.status is not ShardStatus.LOADING or self._finishing:
            return
        # The reader is at the high watermark: everything committed so far has been replayed
        # (offsets below end_offset that were never delivered were removed by compaction).
        self._replayer.next_offset = max(self._replayer.next_offset, end_offset)
        self._finish_load(self._replayer.next_offset)

    def on_error(self, generation: int, error: KafkaError) -> None:
        if generation != self.generation:
            return
        log.warning("shard %d reader error: %s", self.partition, error)
        if error.fatal() or error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
            self._fail(f"log partition unreadable: {error}")

    def on_delivery(
        self, generation: int, expected: int, error: KafkaError | None, offset: int, writer: LogWriter | None = None
    ) -> None:
        if error is not None and error.fatal() and writer is not None:
            self.runtime.replace_writer(writer, error)
        if generation != self.generation:
            return
        if error is not None:
            self.reload(f"append failed: {error}")
        elif offset != expected:
            # Someone else appended to our partition: our state no longer matches the log.
            self.reload(f"append landed at offset {offset}, expected {expected}")

    # --- loading -------------------------------------------------------------------------

    def _finish_load(self, end_offset: int) -> None:
        self._finishing = True
        try:
            # The load decoded nothing but the log's own records; replay the survivors now.
            self._replayer.finish()
        except LogReadError as exc:
            self._fail(str(exc))
            return
        except Exception as exc:  # a replay bug must not leave a half-applied state serving
            self._fail(f"replay failed while finishing the load: {exc!r}")
            return
        self.next_offset = end_offset
        self.committed_offset = end_offset
        records: list[CoordinatorRecord] = []
        open_batch = self._replayer.open_batch()
        self.epoch = self._replayer.max_epoch + 1
        if open_batch is not None:
            first, last = open_batch
            log.warning("shard %d: aborting batch cut short at offsets %d-%d", self.partition, first, last)
            records.append(
                CoordinatorRecord(
                    RecordType.BATCH_ABORT, BatchAbortKey(first), BatchAbortValue(first, last, self.epoch)
                )
            )
        records.append(
            CoordinatorRecord(
                RecordType.SHARD_EPOCH,
                ShardEpochKey(self.epoch),
                ShardEpochValue(self.epoch, self.runtime.owner_id, self.runtime.clock.now_ms()),
            )
        )
        # From here on, the reader replays into the committed state only.
        self._replayer.targets = [self.committed]
        fut: asyncio.Future[Any] = self.runtime.loop.create_future()
        fut.add_done_callback(self._activated)
        self._append(records, fut, None, atomic=False)

    def _activated(self, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        self.status = ShardStatus.ACTIVE
        self.load_report = LoadReport(
            self.partition, self._replayer.read, time.perf_counter() - self._load_started, self.epoch
        )
        self._loaded.set()
        self.submit(lambda state, now: self.handlers.on_loaded(state, now))

    # --- write path ----------------------------------------------------------------------

    def submit(self, op: Callable[[S, int], Result[T]]) -> asyncio.Future[T]:
        """Queue a write handler; the future resolves once its records are committed."""
        fut: asyncio.Future[T] = self.runtime.loop.create_future()
        if self.status is not ShardStatus.ACTIVE:
            fut.set_exception(ShardNotAvailable(self.partition, self.status, self.error or ""))
            return fut
        self._queue.append((op, fut))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.runtime.loop.call_soon(self._flush)
        return fut

    async def write(self, op: Callable[[S, int], Result[T]]) -> T:
        return await self.submit(op)

    def read(self, fn: Callable[[S], T]) -> T:
        """Run ``fn`` on the committed state."""
        if self.status is not ShardStatus.ACTIVE:
            raise ShardNotAvailable(self.partition, self.status, self.error or "")
        return fn(self.committed)

    def read_live(self, fn: Callable[[S], T]) -> T:
        """Run ``fn`` on the live state: only for transient protocol state that is never
        persisted (a classic group's rebalance in progress), which the committed state lacks."""
        if self.status is not ShardStatus.ACTIVE:
            raise ShardNotAvailable(self.partition, self.status, self.error or "")
        return fn(self.live)

    def _flush(self) -> None:
        self._flush_scheduled = False
        queued, self._queue = self._queue, []
        if self.status is not ShardStatus.ACTIVE:
            for _, fut in queued:
                if not fut.done():
                    fut.set_exception(ShardNotAvailable(self.partition, self.status, self.error or ""))
            return
        now = self.runtime.clock.now_ms()
        out: list[tuple[bytes, bytes | None, list[tuple[str, bytes]]]] = []
        first_offset = self.next_offset
        for op, fut in queued:
            if fut.done():
                continue
            try:
                result = op(self.live, now)
                encoded = [encode(r) for r in result.records]
            except Exception as exc:  # the handler wrote nothing: its caller gets the error
                fut.set_exception(exc)
                continue
            try:
                for r in result.records:
                    self.live.replay(r)
            except Exception as exc:
                fut.set_exception(exc)
                self.reload(f"replay of a new record failed: {exc!r}")
                return
            self._stage(result.records, encoded, out)
            self._apply_timers(result.timers, now)
            if isinstance(result.response, Park):
                previous = self._parked.pop(result.response.token, None)
                if previous is not None and not previous.done():
                    previous.cancel()
                self._parked[result.response.token] = fut
                if result.completions:
                    self._pending.append(_Pending(self.next_offset - 1, None, None, result.completions))
            else:
                self._pending.append(_Pending(self.next_offset - 1, fut, result.response, result.completions or None))
        if out:
            self._send(out, first_offset)
        self._release()

    def _append(
        self, records: list[CoordinatorRecord], fut: asyncio.Future[Any], response: Any, atomic: bool = True
    ) -> None:
        first_offset = self.next_offset
        out: list[tuple[bytes, bytes | None, list[tuple[str, bytes]]]] = []
        self._stage(records, [encode(r) for r in records], out, atomic)
        self._pending.append(_Pending(self.next_offset - 1, fut, response))
        self._send(out, first_offset)

    def _stage(
        self,
        records: list[CoordinatorRecord],
        encoded: list[tuple[bytes, bytes | None]],
        out: list[tuple[bytes, bytes | None, list[tuple[str, bytes]]]],
        atomic: bool = True,
    ) -> None:
        """Give the records their offsets (remembered, so reading them back skips decoding) and
        their headers: the shard epoch, and the batch position when they must apply together."""
        count = len(records) if atomic else 1
        for i, (record, (key, value)) in enumerate(zip(records, encoded, strict=True)):
            self._inflight[self.next_offset] = record
            out.append((key, value, make_headers(self.epoch, i if atomic else 0, count)))
            self.next_offset += 1

    def _send(self, out: list[tuple[bytes, bytes | None, list[tuple[str, bytes]]]], first_offset: int) -> None:
        generation = self.generation
        loop = self.runtime.loop
        writer = self.runtime.writer

        def delivered(index: int, err: KafkaError | None, offset: int) -> None:
            loop.call_soon_threadsafe(self.on_delivery, generation, first_offset + index, err, offset, writer)

        writer.append(self.partition, out, delivered)

    def _release(self) -> None:
        pending = self._pending
        while pending and pending[0].last_offset < self.committed_offset:
            p = pending.popleft()
            if p.future is not None and not p.future.done():
                p.future.set_result(p.response)
            for token, response in p.completions or ():
                parked = self._parked.pop(token, None)
                if parked is not None and not parked.done():
                    parked.set_result(response)

    # --- timers --------------------------------------------------------------------------

    def _apply_timers(self, ops: list[TimerOp], now: int) -> None:
        loop = self.runtime.loop
        for op in ops:
            handle = self._timers.pop(op.key, None)
            if handle is not None:
                handle.cancel()
            if isinstance(op, ScheduleTimer):
                delay = max(0, op.deadline_ms - now) / 1000.0
                self._timers[op.key] = loop.call_later(delay, self._fire, self.generation, op.key, op.event)
            elif not isinstance(op, CancelTimer):
                raise TypeError(f"unknown timer op {op!r}")

    def _fire(self, generation: int, key: str, event: Any) -> None:
        if generation != self.generation or self.status is not ShardStatus.ACTIVE:
            return
        self._timers.pop(key, None)
        fut = self.submit(lambda state, now: self.handlers.on_timer(state, event, now))
        fut.add_done_callback(_log_timer_failure)

    def _cancel_timers(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    # --- checks --------------------------------------------------------------------------

    def replay_matches(self) -> bool:
        """Invariant 3: once caught up, the live state equals the replay of the committed log."""
        return bool(self.live.snapshot() == self.committed.snapshot())

    @property
    def caught_up(self) -> bool:
        return self.committed_offset >= self.next_offset


def _log_timer_failure(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        exc = fut.exception()
        if not isinstance(exc, ShardNotAvailable):
            log.error("timer handler failed: %r", exc)
