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

The shard reaches the outside world only through a ``ShardHost`` (the runtime in production, a
simulated log in ``tests/sim``), so the whole write and read path runs without a broker.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import operator
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from confluent_kafka import KafkaError, Message

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.runtime.api import (
    CancelTimer,
    Park,
    Result,
    ScheduleTimer,
    ShardState,
    TimerOp,
    replay_noting,
)
from groupcoord.coordinator.runtime.clock import Clock
from groupcoord.coordinator.runtime.headers import Headers, batch_headers
from groupcoord.coordinator.runtime.load import LoadFailed, LoadResult, ShardLoad
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.records import CoordinatorRecord
from groupcoord.records.offset_commit_run import encode_columns

log = logging.getLogger(__name__)

S = TypeVar("S", bound=ShardState)
T = TypeVar("T")


class ShardHandlers(Protocol[S]):
    """What the runtime needs from the state machine beyond request handlers."""

    def create_state(self) -> S: ...

    def on_loaded(self, state: S, now_ms: int) -> Result[None]: ...

    def on_timer(self, state: S, event: Any, now_ms: int) -> Result[None]: ...


# The report of ``count`` records of an append call from the one at ``index`` on: (index, count,
# error or None, offset the last of them was written at or -1). A host reports record by record
# (count 1) or whole appends at once (the runtime: one report per append, see ``LogWriter``).
DeliveryReport = Callable[[int, int, KafkaError | None, int], None]
LogRecord = tuple[bytes, bytes | None, Headers]


class ShardHost(Protocol):
    """What a shard needs from its owner: a loop and a clock, and the log partition it writes
    and reads. ``CoordinatorRuntime`` implements it over Kafka; ``tests/sim`` over a simulated log."""

    # Read-only: a shard never replaces its host's loop or clock, so a host may hold narrower ones (tests/sim).
    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def clock(self) -> Clock: ...

    owner_id: str  # written into ShardEpoch records: who owns the shard since that epoch
    topic: str
    # The largest record (key + value + headers) the log accepts; larger ones are refused
    # before they touch any state.
    max_record_bytes: int

    def append(self, partition: int, records: list[LogRecord], on_delivered: DeliveryReport) -> None:
        """Append in order. Never raises: every record is in exactly one ``on_delivered`` report,
        on the loop thread, including records the writer refused synchronously; a report of
        several records without an error says that all of them were written, the last at its
        offset, and one with an error that none of them can be counted on. The host replaces a
        writer that failed fatally (a fenced idempotent producer) before reporting."""
        ...

    def load(self, partition: int, generation: int, load: ShardLoad) -> None:
        """Run ``load`` over the partition from offset 0 (``ShardLoad.feed``, on one thread of
        the host's choosing, then ``ShardLoad.end`` at the end of the partition) and report its
        result with ``on_loaded``; then tail the partition, calling back ``on_records`` and
        ``on_error``. Every callback carries ``generation`` and runs on the loop thread. One
        call rather than a load and a tail: the reader goes on from the end without seeking."""
        ...

    def unassign(self, partition: int) -> None: ...

    def drain_reads(self) -> None:
        """Run at once the ``load`` callbacks (records read back, a load's end, errors) of every
        partition that the reader has reported and the loop has not run yet, in their order. A
        shard calls it before its flush: answers whose records are read back are released before
        the flush's handlers run rather than after them."""
        ...

    def may_reload(self, partition: int, reason: str) -> bool:
        """Whether the shard may reload (and so claim a new epoch) on its own; with several
        processes, placement decides who loads a shard."""
        ...


class ShardStatus(enum.Enum):
    """What the shard's state means to its callers (errors, metrics, readiness)."""

    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    FENCED = "fenced"
    CLOSED = "closed"


class ShardPhase(enum.Enum):
    """The shard's life, as Kafka's ``CoordinatorState``; ``TRANSITIONS`` says which moves are legal
    and ``Shard._transition_to`` what entering each one entails."""

    CLOSED = "closed"  # not loaded, or given up (unloaded)
    LOADING = "loading"  # the partition is read into fresh states (a ``ShardLoad``)
    CLAIMING = "claiming"  # the load's claim (its ShardEpoch) is appended, not yet read back
    ACTIVE = "active"  # serving
    DRAINING = "draining"  # reloading, once the appends still in flight are reported
    FENCED = "fenced"  # another owner wrote a newer epoch, or placement decides whether it reloads
    FAILED = "failed"  # the log could not be replayed

    @property
    def status(self) -> ShardStatus:
        return _STATUS_OF[self]


_STATUS_OF = {
    ShardPhase.CLOSED: ShardStatus.CLOSED,
    ShardPhase.LOADING: ShardStatus.LOADING,
    ShardPhase.CLAIMING: ShardStatus.LOADING,
    ShardPhase.ACTIVE: ShardStatus.ACTIVE,
    ShardPhase.DRAINING: ShardStatus.LOADING,
    ShardPhase.FENCED: ShardStatus.FENCED,
    ShardPhase.FAILED: ShardStatus.FAILED,
}

_P = ShardPhase
# Which phase may follow which. A (re)load may start from any phase; only a load's end claims,
# only a claim read back serves, and only a shard that reads the log (loading, claiming or
# serving) can find it unreadable. A reload may come at any time except after close (it waits in
# DRAINING for the appends in flight, or stops as FENCED where placement decides).
TRANSITIONS: dict[ShardPhase, frozenset[ShardPhase]] = {
    _P.CLOSED: frozenset({_P.LOADING, _P.CLOSED}),
    _P.LOADING: frozenset({_P.CLAIMING, _P.LOADING, _P.DRAINING, _P.FENCED, _P.FAILED, _P.CLOSED}),
    _P.CLAIMING: frozenset({_P.ACTIVE, _P.LOADING, _P.DRAINING, _P.FENCED, _P.FAILED, _P.CLOSED}),
    _P.ACTIVE: frozenset({_P.LOADING, _P.DRAINING, _P.FENCED, _P.FAILED, _P.CLOSED}),
    _P.DRAINING: frozenset({_P.LOADING, _P.DRAINING, _P.FENCED, _P.CLOSED}),
    _P.FENCED: frozenset({_P.LOADING, _P.DRAINING, _P.FENCED, _P.CLOSED}),
    _P.FAILED: frozenset({_P.LOADING, _P.DRAINING, _P.FENCED, _P.CLOSED}),
}


# Reloads in a row (no claim read back in between) wait before loading: nothing, then
# ``RELOAD_BACKOFF_FIRST_S``, doubling up to ``RELOAD_BACKOFF_MAX_S``. A failure that every append
# meets at once (a producer failed fatally and not yet replaced, a log topic gone) otherwise had
# each shard reload ~50 times a second, and log as often (40k lines in 2 minutes, seen in a probe).
RELOAD_BACKOFF_FIRST_S = 0.1
RELOAD_BACKOFF_MAX_S = 5.0
# Meanwhile a reload with the reason last logged is logged again at most this often, with a count.
RELOAD_LOG_EVERY_S = 5.0


def reload_delay(reloads: int) -> float:
    """How long the ``reloads``-th reload in a row waits before loading (the first does not)."""
    if reloads <= 1:
        return 0.0
    return min(RELOAD_BACKOFF_FIRST_S * 2 ** min(reloads - 2, 32), RELOAD_BACKOFF_MAX_S)


class IllegalTransition(RuntimeError):
    """A move the transition table does not allow: a bug in the runtime, never a client's doing."""


class ShardObserver:
    """Where a shard reports what it does, for metrics (``groupcoord.coordinator.observability.metrics``);
    here every hook does nothing. Hooks run on the loop thread and must be cheap."""

    def loaded(self, partition: int, seconds: float) -> None:
        """A load finished and the shard is active."""

    def transitioned(self, shard: Shard[Any], before: ShardPhase, after: ShardPhase) -> None:
        """The shard changed phase (``Shard._transition_to``)."""

    def dequeued(self, waited_s: float) -> None:
        """An event left the queue for its handler after waiting ``waited_s``."""

    def processed(
        self, state: Any, records: Sequence[CoordinatorRecord], cause: object, seconds: float, response: object = None
    ) -> None:
        """A handler returned ``records`` (not yet replayed into ``state``, the live state) and
        ``response``; ``cause`` is the timer event of a timer's handler, None for a request's."""

    def released(self, waited_s: float) -> None:
        """A write's answer was released once its records were read back, ``waited_s`` after its append."""

    def flushed(self, seconds: float) -> None:
        """A batch of appends was acknowledged by the log ``seconds`` after it was handed over."""

    def repeated(self, state: Any, response: object) -> None:
        """A repeat was answered at once (``_Repeat``): an event that waited for nothing, took no
        time and wrote nothing. What the three hooks above report of it, in one call (a steady
        member's heartbeats are most of a big group's events)."""
        self.dequeued(0.0)
        self.processed(state, (), None, 0.0, response)
        self.released(0.0)


_NO_OBSERVER = ShardObserver()


class ShardNotAvailable(Exception):
    """The shard cannot serve now; ``status`` says why (the service maps it to a Kafka error)."""

    def __init__(self, partition: int, status: ShardStatus, detail: str = "") -> None:
        super().__init__(f"shard {partition} is {status.value}{': ' + detail if detail else ''}")
        self.partition = partition
        self.status = status


class AppendFailed(ShardNotAvailable):
    """The operation's records were refused by the log (larger than it accepts); nothing of the
    operation was applied and the shard keeps serving. Kafka answers this UNKNOWN_SERVER_ERROR."""

    def __init__(self, partition: int, detail: str) -> None:
        super().__init__(partition, ShardStatus.ACTIVE, detail)


class _MessageParts:
    """The parts of a consumed record read by name (``_read_own`` for messages of mixed classes)."""

    key = operator.methodcaller("key")
    value = operator.methodcaller("value")
    headers = operator.methodcaller("headers")


_MESSAGE_PARTS = _MessageParts()


# Generations are unique in the process, not per shard object: a shard dropped on revocation and
# created anew for the same partition (placement gave it back) would otherwise count from 1 again,
# and the reader's callbacks for its predecessor, still queued on the loop, would pass for its own.
_GENERATIONS = itertools.count(1)

# Bytes a record carries beyond key, value and our headers once in a batch on the broker (record
# and batch framing); kept as a margin so the size check errs on the side of refusing.
_FRAMING_BYTES = 128


@dataclass(slots=True)
class _Pending:
    last_offset: int
    future: asyncio.Future[Any] | None
    response: Any
    completions: list[tuple[Hashable, Any]] | None = None
    appended_at: float = 0.0  # perf_counter() at the append, for the purgatory-time metric
    written_ms: int = 0  # the host clock at the append, for the stuck-shard watchdog


# A whole atomic batch's keys, values and headers, each in the order written: what reading the
# batch back is compared with, column by column (``Shard._read_own``).
_Columns = tuple[list[bytes], list[bytes | None], list[Headers]]

# Records as the shard appended them, to know them again when they are read back: (records,
# their (key, value, headers) as handed to the log, epoch, count of their atomic batch (1: no
# batch), index of the first of them in that batch, the whole batch's columns while none of it
# is fed to the replayer, else None, how many of them were read back and checked but not fed
# yet: only with columns, and what their replay into the live state noted, one note a record,
# for their replay into the committed state: ``api.replay_noting``, or None). One entry per
# atomic batch, under the offset of its first record not read back yet; a record outside any
# batch is an entry of its own. A plain tuple, per batch rather than per record: a 100-partition
# commit is one entry.
_Written = tuple[Sequence[CoordinatorRecord], list[LogRecord], int, int, int, _Columns | None, int, Any]


class _Timer:
    """A timer of the shard's handlers: ``event`` is due at ``deadline_ms``; the loop's ``handle``
    fires at ``armed_ms``, which is never later (see ``Shard._apply_timers``)."""

    __slots__ = ("deadline_ms", "event", "armed_ms", "handle")

    def __init__(self, deadline_ms: int, event: Any) -> None:
        self.deadline_ms = deadline_ms
        self.event = event
        self.armed_ms = deadline_ms
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            # The handle holds this timer among its arguments: a cycle, which reference counting
            # cannot free and a frozen collector (``runtime/collector.py``) would keep.
            self.handle = None


@dataclass(slots=True)
class LoadReport:
    """A load's count and where its time went: each step's time since the load started (so a
    slow load names the step that took the seconds: the broker's first answer, reading the rest,
    the loop taking the result over, the epoch's append, its read-back)."""

    partition: int
    records: int
    seconds: float  # until the shard serves: the log read and replayed, and our ShardEpoch read back
    epoch: int
    read_seconds: float = 0.0  # until the end of the log was read and replayed (on the reader's thread)
    first_record_seconds: float = 0.0  # until the first record was read (``read_seconds`` if none)
    handed_seconds: float = 0.0  # until the loop took the load's result and appended the claim
    decoded_seconds: float = 0.0  # until the survivors were decoded into the states (on the loop)
    written_seconds: float = 0.0  # until the claim's append was reported written (on the loop)

    def steps(self) -> str:
        """The steps' times, for the load line (``server.ShardMoves``)."""
        return (
            f"first record {self.first_record_seconds:.3f}s, end of log {self.read_seconds:.3f}s,"
            f" taken over {self.handed_seconds:.3f}s, decoded {self.decoded_seconds:.3f}s,"
            f" epoch written {self.written_seconds:.3f}s, read back {self.seconds:.3f}s"
        )


class _Precomputed(Generic[S, T]):
    """A handler's result computed by ``Shard.write_now``, queued in place of its handler: the
    queue was empty then, so the result is the first the next flush processes, and it stands as
    long as the live state it was computed on has not changed since (it cannot, as the flush
    that changes it is the one taking it; the check keeps that an invariant rather than an
    argument). Otherwise the handler runs again, on the state as it is then."""

    __slots__ = ("op", "result", "shard", "changes")

    def __init__(self, op: Callable[[S, int], Result[T]], result: Result[T], shard: Shard[S], changes: int) -> None:
        self.op, self.result, self.shard, self.changes = op, result, shard, changes

    def __call__(self, state: S, now: int) -> Result[T]:
        if self.shard._live_changes == self.changes and state is self.shard.live:
            return self.result
        return self.op(state, now)


class _Repeat:
    """A repeat of a request ``Shard.write_now`` answered at once with ``response``: it stands
    while the shard serves in the same generation (a closed shard never serves again), nothing
    is queued or waits to be read back (``write_now`` would put the repeat behind it), no record
    was replayed into the live state since, and the handler's own ``again`` still gives its
    timers. One per steady member's connection, so slotted, with no closure."""

    __slots__ = ("shard", "response", "again", "live", "changes", "generation", "timers")

    def __init__(self, shard: Shard[Any], response: object, again: Callable[[int], list[TimerOp] | None]) -> None:
        self.shard, self.response, self.again = shard, response, again
        self.live, self.changes, self.generation = shard.live, shard._live_changes, shard.generation
        self.timers: list[TimerOp] = []

    def holds(self) -> bool:
        shard = self.shard
        if (
            shard.phase is not ShardPhase.ACTIVE
            or shard.generation != self.generation
            or shard._live_changes != self.changes
            or shard.live is not self.live
            or shard._answers_wait()
        ):
            return False
        timers = self.again(shard.host.clock.now_ms())
        if timers is None:
            return False
        self.timers = timers
        return True

    def renew(self) -> None:
        shard = self.shard
        shard.observer.repeated(shard.live, self.response)
        shard._apply_timers(self.timers, shard.host.clock.now_ms())


class Shard(Generic[S]):
    def __init__(self, host: ShardHost, partition: int, handlers: ShardHandlers[S]) -> None:
        self.host = host
        self.partition = partition
        self.handlers = handlers
        self.phase = ShardPhase.CLOSED
        self.error: str | None = None
        self.generation = 0
        self.epoch = 0
        self.live: S = handlers.create_state()
        self.committed: S = handlers.create_state()
        self.next_offset = 0  # offset the next appended record will get
        self.committed_offset = 0  # offset the reader will read next
        self.load_report: LoadReport | None = None
        self._load: ShardLoad | None = None  # while LOADING
        self._load_started = 0.0
        # The current load's steps, each when it happened (``LoadReport``).
        self._load_steps: dict[str, float] = {}
        # The tailing replayer, handed over by the load once it has claimed the shard.
        self._replayer = LogReplayer(host.topic, partition, [])
        self.observer: ShardObserver = _NO_OBSERVER
        # (handler, its future, the timer event that caused it or None, perf_counter() when queued)
        self._queue: list[tuple[Callable[[S, int], Result[Any]], asyncio.Future[Any], object, float]] = []
        self._flush_scheduled = False
        # Changes of the live state (records replayed into it, a fresh one for a load): a result
        # ``write_now`` computed is taken as it is only if none came between (``_Precomputed``).
        self._live_changes = 0
        self._pending: deque[_Pending] = deque()
        # offset of the first record not yet read back -> our records written from there (``_Written``)
        self._inflight: dict[int, _Written] = {}
        self._parked: dict[Hashable, asyncio.Future[Any]] = {}
        self._timers: dict[str, _Timer] = {}
        self._loaded = asyncio.Event()
        # Records handed to the host whose delivery has not been reported yet (any generation):
        # a reload waits for them in DRAINING (see ``reload``).
        self._unreported = 0
        # Whether the watchdog warned that a written answer waits too long (``check_stuck``).
        self.stuck = False
        # Reloads since the last claim read back (ACTIVE): how long the next load waits
        # (``reload_delay``), and the load waiting meanwhile.
        self.reloads = 0
        self._delayed_load: asyncio.TimerHandle | None = None
        # Reload logging, kept quiet while the same reason repeats (``_log_reload``): the reason
        # last logged, when (the host's clock, s), how many reloads were not logged since; and whether
        # the latest reload was logged (serve's own reload line follows it).
        self._reload_reason = ""
        self._reload_logged_at = 0.0
        self._reloads_unlogged = 0
        self.reload_logged = True

    @property
    def status(self) -> ShardStatus:
        return self.phase.status

    # --- lifecycle: one transition table --------------------------------------------------

    def _transition_to(self, phase: ShardPhase, reason: str = "", quiet: bool = False) -> None:
        """Move to ``phase`` and do what entering it entails, all of it here (Kafka's ``transitionTo``)."""
        before = self.phase
        if phase not in TRANSITIONS[before]:
            raise IllegalTransition(f"shard {self.partition}: {before.value} -> {phase.value} ({reason})")
        self.phase = phase
        self.observer.transitioned(self, before, phase)
        if phase is ShardPhase.CLAIMING:
            return
        if phase is ShardPhase.ACTIVE:
            if self.reloads > 1:
                log.warning("shard %d active again after %d reloads in a row", self.partition, self.reloads)
            self.reloads = 0
            self._reload_reason = ""
            self._reloads_unlogged = 0
            self._loaded.set()
            return
        if self._delayed_load is not None:
            self._delayed_load.cancel()
            self._delayed_load = None
        # Every other phase stops what the shard did: callbacks of the old generation are ignored
        # from now on, whatever waits is failed with the new status, timers are dropped.
        self.generation = next(_GENERATIONS)
        self.error = None if phase is ShardPhase.LOADING else reason or None
        self._load = None
        self._fail_all(phase.status, reason)
        self._cancel_timers()
        if phase is ShardPhase.LOADING:
            delay = reload_delay(self.reloads)
            if delay <= 0:
                self._start_load()  # assigns the partition anew: no unassign first
                return
            # Reloads in a row back off; the reader drops the partition meanwhile.
            self._loaded.clear()
            self.host.unassign(self.partition)
            self._delayed_load = self.host.loop.call_later(delay, self._start_delayed_load, self.generation)
            return
        self.host.unassign(self.partition)
        if phase is not ShardPhase.DRAINING:
            self._loaded.set()
        if phase is ShardPhase.FAILED:
            log.error("shard %d %s: %s", self.partition, phase.value, reason)
        elif phase is ShardPhase.FENCED and not quiet:
            # Part of every shard move under an eager placement rebalance (the old owner serves
            # until its new assignment arrives, the new owner's epoch record fences it first), and
            # the zombie rule working: nothing an operator must act on (it was an ERROR, which
            # paged operators at each planned scale-up).
            log.warning("shard %d %s: %s", self.partition, phase.value, reason)

    def _start_delayed_load(self, generation: int) -> None:
        self._delayed_load = None
        if generation == self.generation and self.phase is ShardPhase.LOADING and self._load is None:
            self._start_load()

    def _start_load(self) -> None:
        self._live_changes += 1
        self.live = self.handlers.create_state()
        self.committed = self.handlers.create_state()
        self._inflight.clear()
        self._loaded.clear()
        self._load_started = time.perf_counter()
        self._load_steps = {}
        host = self.host
        self._load = ShardLoad(host.topic, self.partition, self.committed, self.live, host.owner_id, host.clock)
        # The host runs the load on a thread of its own: it is not touched here before ``on_loaded``.
        host.load(self.partition, self.generation, self._load)

    def load(self) -> None:
        self._transition_to(ShardPhase.LOADING)

    async def wait_loaded(self) -> None:
        await self._loaded.wait()

    def close(self) -> None:
        self._transition_to(ShardPhase.CLOSED)

    def _fail(self, reason: str) -> None:
        self._transition_to(ShardPhase.FAILED, reason)

    def _fence(self, epoch: int) -> None:
        self._transition_to(ShardPhase.FENCED, f"epoch {epoch} written by another owner (ours is {self.epoch})")

    def reload(self, reason: str) -> None:
        """Rebuild both states from the log, e.g. after an append failed (the live state may hold
        records the log does not). Appends still in flight are waited for first (DRAINING): one
        landing after the reader had found the end of the log would reach the committed state only."""
        self.reloads += 1
        self._log_reload(reason)
        if not self.host.may_reload(self.partition, reason):
            # A reload claims a new epoch; with several processes only placement may decide that.
            self._transition_to(
                ShardPhase.FENCED,
                f"stopped after {reason}; placement decides whether it reloads",
                quiet=not self.reload_logged,
            )
        elif self._unreported > 0:
            self._transition_to(ShardPhase.DRAINING, reason)
        else:
            self._transition_to(ShardPhase.LOADING, reason)

    def _log_reload(self, reason: str) -> None:
        """Log a reload, but the same reason again only every ``RELOAD_LOG_EVERY_S``, with how
        many reloads were not logged meanwhile (``reload_logged`` says whether this one was)."""
        now = self.host.clock.now_ms() / 1000
        if reason == self._reload_reason and now - self._reload_logged_at < RELOAD_LOG_EVERY_S:
            self._reloads_unlogged += 1
            self.reload_logged = False
            return
        again = ""
        if reason == self._reload_reason and self._reloads_unlogged:
            again = f" ({self._reloads_unlogged + 1} times in {now - self._reload_logged_at:.0f}s)"
        wait = reload_delay(self.reloads)
        backoff = f"; loading in {wait:.1f}s ({self.reloads} reloads in a row)" if wait > 0 else ""
        log.warning("shard %d reloading from the log: %s%s%s", self.partition, reason, again, backoff)
        self._reload_reason, self._reload_logged_at, self._reloads_unlogged = reason, now, 0
        self.reload_logged = True

    def _fail_all(self, status: ShardStatus, detail: str = "") -> None:
        queued, self._queue = self._queue, []
        pending, self._pending = self._pending, deque()
        parked, self._parked = self._parked, {}
        futures = (
            [entry[1] for entry in queued] + [p.future for p in pending if p.future is not None] + list(parked.values())
        )
        for fut in futures:
            if not fut.done():
                fut.set_exception(ShardNotAvailable(self.partition, status, detail))

    # --- host callbacks (on the loop thread) ---------------------------------------------

    def on_loaded(self, generation: int, outcome: LoadResult | LoadFailed) -> None:
        """The load's one result: claim the shard, or fail."""
        if generation != self.generation or self.phase is not ShardPhase.LOADING or self._load is None:
            return
        load, self._load = self._load, None
        if isinstance(outcome, LoadFailed):
            self._fail(str(outcome))
            return
        self._load_steps = {
            "read": outcome.read_seconds,
            "first": outcome.first_record_seconds,
            "handed": time.perf_counter() - self._load_started,
        }
        self.next_offset = self.committed_offset = outcome.next_offset
        self.epoch = outcome.epoch
        self._transition_to(ShardPhase.CLAIMING)
        fut: asyncio.Future[Any] = self.host.loop.create_future()
        fut.add_done_callback(lambda done: self._claimed(generation, done))
        # Appended before the survivors are decoded: what it says is known already, and the
        # decoding then overlaps the append's round trip and read-back (which are handled on
        # this thread only after it). Should a survivor prove unreadable, the shard fails
        # with its epoch written: the previous owner is fenced, as it would be by any load.
        self._append(outcome.claim, fut, None, atomic=False)
        try:
            self._replayer = load.tailing()
        except LoadFailed as exc:
            self._fail(str(exc))
            return
        self._load_steps["decoded"] = time.perf_counter() - self._load_started

    def _claimed(self, generation: int, fut: asyncio.Future[Any]) -> None:
        # Done callbacks run later: a reload may have started a new load meanwhile. The
        # exception is looked at first, whatever the generation: a claim failed with its shard
        # (an unreadable record after it) is otherwise an unretrieved exception asyncio logs.
        if fut.cancelled() or fut.exception() is not None or generation != self.generation:
            return
        self._transition_to(ShardPhase.ACTIVE)
        steps = self._load_steps
        seconds = time.perf_counter() - self._load_started
        self.load_report = LoadReport(
            self.partition,
            self._replayer.read,
            seconds,
            self.epoch,
            steps.get("read", 0.0),
            steps.get("first", 0.0),
            steps.get("handed", 0.0),
            steps.get("decoded", 0.0),
            # Read back before its report was handled (both wait on this loop): no later than now.
            steps.get("written", seconds),
        )
        self.observer.loaded(self.partition, self.load_report.seconds)
        # Nobody awaits the loaded hook's write: a shard fenced or closed before it is read back
        # fails it (ShardNotAvailable), which is the shard's news, not an unretrieved error.
        self.submit(lambda state, now: self.handlers.on_loaded(state, now)).add_done_callback(_log_hook_failure)

    def on_records(self, generation: int, messages: list[Message]) -> None:
        """Records read after the load's end: ours (their offsets were noted at the append, so
        they are not decoded again) or another writer's."""
        if generation != self.generation or self.phase not in (ShardPhase.CLAIMING, ShardPhase.ACTIVE):
            return
        replayer = self._replayer
        # Every record from the end of the load on is ours; the first offset holding another
        # writer's record, if any:
        foreign: int | None = None
        inflight = self._inflight
        try:
            i, count = 0, len(messages)
            while i < count:
                msg = messages[i]
                offset = msg.offset()
                if offset is None or offset < replayer.next_offset:
                    i += 1
                    continue
                ours = inflight.pop(offset, None)
                if ours is not None:
                    read, mismatch = self._read_own(messages, i, offset, ours)
                    i += read
                    if foreign is None:
                        foreign = mismatch
                    continue
                if foreign is None and offset >= self.next_offset:
                    foreign = offset
                replayer.feed(offset, msg.key(), msg.value(), msg.headers())
                i += 1
        except Exception as exc:  # a replay bug must not leave a half-applied state serving
            self._fail(replayer.failure(exc))
            return
        self.committed_offset = replayer.next_offset
        if self.phase is ShardPhase.ACTIVE and replayer.max_epoch > self.epoch:
            self._fence(replayer.max_epoch)
            return
        if foreign is not None:
            # Another writer (a zombie: older epochs are ignored by replay) moved our records
            # to later offsets than we counted: the offsets read so far say nothing about them,
            # so nothing may be released, and our offsets no longer match the log.
            self.reload(f"another writer appended at offset {foreign}")
            return
        self._release()

    def _read_own(self, messages: list[Message], start: int, offset: int, ours: _Written) -> tuple[int, int | None]:
        """Feed the records read from ``messages[start]`` on (at ``offset``) that ``ours`` were
        written as; (how many were read, the first offset holding something else or None).

        Skips decoding only where the record read is the one we wrote: another writer (a zombie,
        or the owner we fenced) may have taken the offset, even with the very same bytes (both
        handled the same heartbeat): the headers (its epoch) tell them apart, and the zombie's
        is fenced on replay. An atomic batch read back unchanged, the common case, is compared
        column by column and applied at once (``LogReplayer.feed_own_batch``), also when the
        reader hands it over in pieces: each piece is checked and the batch applied with its
        last (replaying a piece only buffers it until the batch ends anyway)."""
        records, written, epoch, count, base, columns, checked, notes = ours
        replayer = self._replayer
        first = offset - checked  # where the entry's first record is
        size = len(written) - checked
        chunk = messages[start : start + size]
        read = len(chunk)
        if (columns is not None or read == size > 1) and read and chunk[-1].offset() == offset + read - 1:
            # Read through the messages' own class by C-level maps where they are all of one
            # (the reader's): a comprehension of three calls a record cost twice as much.
            kind: Any = type(chunk[0])
            if list(map(type, chunk)).count(kind) != read:
                kind = _MESSAGE_PARTS
            if columns is not None:
                # Column by column, values first (where two batches differ most): no tuple per
                # record read. The headers of the piece's last record alone: taking every record's
                # headers (a list of tuples made per record) was a tenth of a 100-partition
                # commit's time. They say enough: the records before this piece are ours at
                # the offsets we counted (each entry and piece is checked in turn, any mismatch
                # reloads), so this piece's records lie at this offset or later, in the order
                # written (one idempotent producer). Our epoch and the batch index of the piece's
                # last record at the piece's last offset is then that record of ours (another of
                # ours there would carry another index), and the records before it fill the
                # offsets before it: none is another writer's, even one with our very bytes (the
                # zombie tests in tests/runtime/test_shard.py).
                keys, values, headers_of = columns
                end = checked + read
                whole = checked == 0 and read == len(written)
                same = (
                    list(map(kind.value, chunk)) == (values if whole else values[checked:end])
                    and list(map(kind.key, chunk)) == (keys if whole else keys[checked:end])
                    and kind.headers(chunk[-1]) == headers_of[end - 1]
                )
                if same:
                    if end < len(written):  # the rest is read later, known again by its offset
                        self._inflight[offset + read] = (records, written, epoch, count, base, columns, end, notes)
                        return read, None
                    if not replayer.feed_own_batch(first, records, epoch, count, base, notes):
                        self._feed_checked(first, ours, end)
                    return read, None
            elif read == size > 1:
                pieces = zip(map(kind.key, chunk), map(kind.value, chunk), map(kind.headers, chunk), strict=True)
                if list(pieces) == written and replayer.feed_own_batch(offset, records, epoch, count, base, notes):
                    return size, None
        if checked:  # record by record from here: the records checked before go first
            self._feed_checked(first, ours, checked)
            records, written, base = records[checked:], written[checked:], base + checked
            notes = notes[checked:] if notes is not None else None
        mismatch: int | None = None
        fed = 0
        for msg in chunk:
            at = msg.offset()
            if at != offset + fed:
                break  # a gap in our own offsets: the caller reads on from there
            key, value, headers = msg.key(), msg.value(), msg.headers()
            decoded: CoordinatorRecord | None = None
            if (key, value, headers) == written[fed]:
                decoded = records[fed]
                batch = (base + fed, count) if count > 1 else None
                if replayer.feed_own(at, decoded, epoch, batch, notes[fed] if notes is not None else None):
                    fed += 1
                    continue
            elif mismatch is None:
                mismatch = at
            replayer.feed(at, key, value, headers, decoded)
            fed += 1
        if fed < size:  # the rest is read later: known again by the offset of its first record
            rest = notes[fed:] if notes is not None else None
            self._inflight[offset + fed] = (records[fed:], written[fed:], epoch, count, base + fed, None, 0, rest)
        return fed, mismatch

    def _feed_checked(self, first: int, ours: _Written, checked: int) -> None:
        """Feed one by one the first ``checked`` records of ``ours`` (at ``first`` on), read back
        and found to be what we wrote: what the record-by-record path does with such a record."""
        records, written, epoch, count, base = ours[:5]
        notes = ours[7]
        replayer = self._replayer
        for i in range(checked):
            batch = (base + i, count) if count > 1 else None
            if not replayer.feed_own(first + i, records[i], epoch, batch, notes[i] if notes is not None else None):
                key, value, headers = written[i]
                replayer.feed(first + i, key, value, headers, records[i])

    def on_error(self, generation: int, error: KafkaError) -> None:
        if generation != self.generation:
            return
        log.warning("shard %d reader error: %s", self.partition, error)
        if error.fatal() or error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
            self._fail(f"log partition unreadable: {error}")

    def on_delivery(
        self, generation: int, expected: int, error: KafkaError | None, offset: int, count: int = 1
    ) -> None:
        """``count`` records reported, the last of which was to land at ``expected``."""
        self._unreported = max(0, self._unreported - count)
        if generation == self.generation:
            if error is not None:
                self.reload(f"append failed: {error}")
            elif offset != expected:
                # Someone else appended to our partition: our state no longer matches the log.
                self.reload(f"append landed at offset {offset}, expected {expected}")
            elif self.phase is ShardPhase.CLAIMING:  # the claim is the one append while claiming
                self._load_steps.setdefault("written", time.perf_counter() - self._load_started)
        if self.phase is ShardPhase.DRAINING and self._unreported == 0:
            self._transition_to(ShardPhase.LOADING, self.error or "")

    # --- write path ----------------------------------------------------------------------

    def submit(self, op: Callable[[S, int], Result[T]], cause: object = None) -> asyncio.Future[T]:
        """Queue a write handler; the future resolves once its records are committed."""
        fut: asyncio.Future[T] = self.host.loop.create_future()
        if self.status is not ShardStatus.ACTIVE:
            fut.set_exception(ShardNotAvailable(self.partition, self.status, self.error or ""))
            return fut
        self._queue.append((op, fut, cause, time.perf_counter()))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.host.loop.call_soon(self._flush)
        return fut

    async def write(self, op: Callable[[S, int], Result[T]]) -> T:
        return await self.submit(op)

    def write_now(self, op: Callable[[S, int], Result[T]], transient: bool = False) -> T | asyncio.Future[T]:
        """``write``, answered at once when that changes nothing: the handler's answer itself if
        it needs no record and no earlier answer of this shard still waits for its records (the
        answer may rest on them), else a future as ``submit`` gives. A steady heartbeat is the
        first case: answered without a queue entry, a loop turn or a future. A handler that
        returns records is not run twice: its result goes through the queue as it is
        (``_Precomputed``), so the records are batched with the loop turn's others and the answer
        is released only once they are read back, as for any write. Raises what the handler
        raises, and ShardNotAvailable when the shard does not serve.

        ``transient``: the answer is transient state that a reload drops whole (a share-group
        acquisition: every lock expires on load), so it may rest on earlier records not read back
        yet: if the log loses them the shard reloads and what the answer handed out is void. Such
        an answer does not wait behind them, nor behind handlers queued for the next flush: it
        runs before them (as if it had come first), and if it has records after all they go
        first in that flush."""
        if self.status is not ShardStatus.ACTIVE:
            raise ShardNotAvailable(self.partition, self.status, self.error or "")
        # Transient: a result computed now must stand when its flush takes it, so nothing else
        # queued may have been computed before it.
        if any(isinstance(entry[0], _Precomputed) for entry in self._queue) if transient else self._answers_wait():
            return self.submit(op)  # behind what is queued or unreleased, in order
        now = self.host.clock.now_ms()
        started = time.perf_counter()
        result = op(self.live, now)
        if result.records or result.completions or isinstance(result.response, Park):
            queued = len(self._queue)
            fut = self.submit(_Precomputed(op, result, self, self._live_changes))
            if queued:
                # It ran on the live state before the queued handlers run: first in the flush.
                self._queue.insert(0, self._queue.pop())
            return fut
        self._answered_now(result.records, result.response, result.timers, now, time.perf_counter() - started)
        if result.again is not None:
            # Its repeats may be answered the same while it stands (``steady_answers``).
            repeat = _Repeat(self, result.response, result.again)
            steady_answers.offer(result.response, repeat.holds, repeat.renew)
        return result.response

    def _answers_wait(self) -> bool:
        """Whether an answer given now could rest on something not durable yet: handlers queued
        for the next flush, or records appended and not read back."""
        return bool(self._queue or self._pending or self.next_offset > self.committed_offset)

    def _answered_now(
        self, records: Sequence[CoordinatorRecord], response: object, timers: list[TimerOp], now: int, seconds: float
    ) -> None:
        """The bookkeeping of a write answered at once (``write_now``; a repeat of one reports
        itself with ``ShardObserver.repeated``)."""
        observer = self.observer
        observer.dequeued(0.0)
        observer.processed(self.live, records, None, seconds, response)
        self._apply_timers(timers, now)
        observer.released(0.0)

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
        # What is read back already releases its answers first (it may also reload the shard:
        # the status is checked below, after it).
        self.host.drain_reads()
        queued, self._queue = self._queue, []
        if self.status is not ShardStatus.ACTIVE:
            for entry in queued:
                if not entry[1].done():
                    entry[1].set_exception(ShardNotAvailable(self.partition, self.status, self.error or ""))
            return
        now = self.host.clock.now_ms()
        out: list[LogRecord] = []
        first_offset = self.next_offset
        observer = self.observer
        for op, fut, cause, queued_at in queued:
            if fut.done():
                continue
            started = time.perf_counter()
            observer.dequeued(started - queued_at)
            try:
                result = op(self.live, now)
                # The keys and the values apart (a plain commit's are made so: ``OffsetCommitRun``):
                # summed for the size check, kept to compare the batch read back with.
                keys, values = encode_columns(result.records)
            except Exception as exc:  # the handler wrote nothing: its caller gets the error
                fut.set_exception(exc)
                continue
            # A failed append must never leave the live state ahead of the log. The one failure
            # a request can provoke on purpose, a record larger than the log accepts, is caught
            # here, before the records touch the live state or get offsets: only this operation
            # fails and everything queued with it proceeds. Any other failure (refused by the
            # writer anyway, or lost in delivery) reloads the shard, see ``on_delivery``.
            oversized = self._oversized(keys, values)
            if oversized:
                fut.set_exception(AppendFailed(self.partition, oversized))
                continue
            observer.processed(self.live, result.records, cause, time.perf_counter() - started, result.response)
            if result.records:
                self._live_changes += 1
            try:
                # What it notes spares the read-back building the same members again.
                notes = replay_noting(self.live, result.records)
            except Exception as exc:
                fut.set_exception(exc)
                self.reload(f"replay of a new record failed: {exc!r}")
                return
            self._stage(result.records, keys, values, out, notes=notes)
            self._apply_timers(result.timers, now)
            if isinstance(result.response, Park):
                previous = self._parked.pop(result.response.token, None)
                if previous is not None and not previous.done():
                    previous.cancel()
                self._parked[result.response.token] = fut
                if result.completions:
                    self._pending.append(
                        _Pending(self.next_offset - 1, None, None, result.completions, time.perf_counter(), now)
                    )
            else:
                self._pending.append(
                    _Pending(
                        self.next_offset - 1,
                        fut,
                        result.response,
                        result.completions or None,
                        time.perf_counter(),
                        now,
                    )
                )
        if out:
            self._send(out, first_offset)
        self._release()

    def _append(
        self, records: list[CoordinatorRecord], fut: asyncio.Future[Any], response: Any, atomic: bool = True
    ) -> None:
        first_offset = self.next_offset
        out: list[LogRecord] = []
        self._stage(records, *encode_columns(records), out, atomic)
        now = self.host.clock.now_ms()
        self._pending.append(_Pending(self.next_offset - 1, fut, response, None, time.perf_counter(), now))
        self._send(out, first_offset)

    def _stage(
        self,
        records: Sequence[CoordinatorRecord],
        keys: list[bytes],
        values: list[bytes | None],
        out: list[LogRecord],
        atomic: bool = True,
        notes: Any = None,
    ) -> None:
        """Give the records (whose keys and values are ``keys`` and ``values``) their offsets
        (remembered, so reading them back skips decoding, with the ``notes`` their replay into
        the live state made) and their headers: the shard epoch, and the batch position when
        they must apply together."""
        total = len(records)
        if total == 0:
            return
        epoch, inflight, offset = self.epoch, self._inflight, self.next_offset
        if atomic and total > 1:
            headers_of = batch_headers(epoch, total)
            written = list(zip(keys, values, headers_of, strict=True))
            inflight[offset] = (records, written, epoch, total, 0, (keys, values, headers_of), 0, notes)
            out.extend(written)
        else:
            headers = batch_headers(epoch, 1)[0]
            for i, (record, key, value) in enumerate(zip(records, keys, values, strict=True)):
                one: LogRecord = (key, value, headers)
                inflight[offset + i] = ([record], [one], epoch, 1, 0, None, 0, None if notes is None else [notes[i]])
                out.append(one)
        self.next_offset = offset + total

    def _oversized(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> str:
        """Why a record (whose keys and values are ``keys`` and ``values``) is larger than the
        log accepts; empty if none is."""
        limit = self.host.max_record_bytes
        if not keys:
            return ""
        # No record is larger than all of them together: that sum, taken by C-level maps, says so
        # for a whole commit at once (the loop below cost 0.3 us a record of a 100-partition one).
        if sum(map(len, keys)) + sum(map(len, filter(None, values))) + _FRAMING_BYTES <= limit:
            return ""
        for key, value in zip(keys, values, strict=True):
            size = len(key) + len(value or b"") + _FRAMING_BYTES
            if size > limit:
                return f"a record of {size} bytes is larger than the log accepts ({limit} bytes)"
        return ""

    def _send(self, out: list[LogRecord], first_offset: int) -> None:
        generation = self.generation
        self._unreported += len(out)
        last, handed_at = len(out) - 1, time.perf_counter()

        def delivered(index: int, count: int, err: KafkaError | None, offset: int) -> None:
            end = index + count - 1
            if end == last:
                self.observer.flushed(time.perf_counter() - handed_at)
            self.on_delivery(generation, first_offset + end, err, offset, count)

        self.host.append(self.partition, out, delivered)

    def _release(self) -> None:
        pending = self._pending
        if not pending or pending[0].last_offset >= self.committed_offset:
            return
        now = time.perf_counter()
        while pending and pending[0].last_offset < self.committed_offset:
            p = pending.popleft()
            self.observer.released(now - p.appended_at)
            if p.future is not None and not p.future.done():
                p.future.set_result(p.response)
            for token, response in p.completions or ():
                parked = self._parked.pop(token, None)
                if parked is not None and not parked.done():
                    parked.set_result(response)

    # --- timers --------------------------------------------------------------------------

    def _apply_timers(self, ops: list[TimerOp], now: int) -> None:
        timers = self._timers
        for op in ops:
            timer = timers.get(op.key)
            if isinstance(op, ScheduleTimer):
                if timer is not None and timer.deadline_ms <= op.deadline_ms:
                    # Armed to fire no later than the new deadline: it is moved, not re-armed, and
                    # re-arms itself for the rest when it fires. A member's session timer moves
                    # with every heartbeat; cancelling and arming it each time was two heap
                    # operations of the loop per heartbeat (5,000 members: 1,000 a second).
                    timer.deadline_ms, timer.event = op.deadline_ms, op.event
                    continue
                if timer is not None:
                    timer.cancel()
                timers[op.key] = self._arm(op.key, _Timer(op.deadline_ms, op.event), max(0, op.deadline_ms - now))
            elif isinstance(op, CancelTimer):
                if timer is not None:
                    timer.cancel()
                    del timers[op.key]
            else:
                raise TypeError(f"unknown timer op {op!r}")

    def _arm(self, key: str, timer: _Timer, delay_ms: int) -> _Timer:
        timer.armed_ms = timer.deadline_ms
        timer.handle = self.host.loop.call_later(delay_ms / 1000.0, self._fire, self.generation, key, timer)
        return timer

    def _fire(self, generation: int, key: str, timer: _Timer) -> None:
        timer.handle = None  # fired: nothing to cancel, and no cycle through the handle's arguments
        if generation != self.generation or self.status is not ShardStatus.ACTIVE or self._timers.get(key) is not timer:
            return
        if timer.deadline_ms > timer.armed_ms:
            # Moved since it was armed: due that much later than now (now being its armed deadline).
            self._arm(key, timer, timer.deadline_ms - timer.armed_ms)
            return
        del self._timers[key]
        event = timer.event
        fut = self.submit(lambda state, now: self.handlers.on_timer(state, event, now), event)
        fut.add_done_callback(_log_timer_failure)

    def _cancel_timers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # --- stuck-shard watchdog ------------------------------------------------------------

    def unreleased_age_ms(self, now_ms: int) -> int:
        """How long the oldest written answer has waited for its records to be read back (0: none waits)."""
        if not self._pending:
            return 0
        return max(0, now_ms - self._pending[0].written_ms)

    def check_stuck(self, now_ms: int, warn_after_ms: int, reload_after_ms: int) -> int:
        """Called periodically by the host: a write (or a load's own ShardEpoch) whose records are
        not read back within ``warn_after_ms`` marks the shard stuck (one WARNING per episode,
        readiness and metrics show it); past ``reload_after_ms`` the shard reloads from the log,
        which fails what waits with a retriable error and reads the partition anew. Kafka's runtime fails a
        write that does not complete in time and keeps serving; here every later answer of the
        shard waits behind the oldest, so only a fresh read of the log can move them again."""
        # A stopped shard waits for nothing; a load waits here for its own ShardEpoch.
        age = self.unreleased_age_ms(now_ms)
        if age < warn_after_ms:
            self.stuck = False
            return age
        if not self.stuck:
            self.stuck = True
            log.warning(
                "shard %d: a write has waited %d ms for its records to be read back from the log "
                "(%d answers waiting, appended up to offset %d, read up to offset %d)",
                self.partition,
                age,
                len(self._pending),
                self.next_offset,
                self.committed_offset,
            )
        if age >= reload_after_ms:
            self.stuck = False
            self.reload(f"a write waited {age} ms for its records to be read back from the log")
        return age

    # --- checks --------------------------------------------------------------------------

    def replay_matches(self) -> bool:
        """Invariant 3: once caught up, the live state equals the replay of the committed log."""
        return bool(self.live.snapshot() == self.committed.snapshot())

    @property
    def backlog(self) -> tuple[int, int]:
        """(events queued for their handler, written answers waiting for their records to be read back)."""
        return len(self._queue), len(self._pending)

    @property
    def caught_up(self) -> bool:
        return self.committed_offset >= self.next_offset


def _logging_failure(what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done callback for a write nobody awaits: its ShardNotAvailable (the shard stopped) is
    dropped, anything else logged, and either way the exception counts as retrieved."""

    def done(fut: asyncio.Future[Any]) -> None:
        if not fut.cancelled() and fut.exception() is not None:
            exc = fut.exception()
            if not isinstance(exc, ShardNotAvailable):
                log.error("%s failed: %r", what, exc)

    return done


_log_timer_failure = _logging_failure("timer handler")
_log_hook_failure = _logging_failure("loaded hook")
