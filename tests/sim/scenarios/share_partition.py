"""Workload: one share-partition (KIP-932) served by a coordinator whose process fails and moves,
consumed by several members over a network that loses requests and responses.

The model is the pure logic (``groupcoord/coordinator/share``) over a simulated log of encoded records; the
runtime wiring comes later. A topic-partition grows (producers, some records in aborted
transactions, retention moving its start); members fetch (acquire), acknowledge what they hold
(ACCEPT mostly, RELEASE, REJECT, RENEW), stall past their locks and leave. The coordinator writes
each change as records and answers only once the record is committed (as the runtime does); an
acquisition that writes nothing is answered at once, even while earlier records are not committed
yet (the runtime's ``write_now``, transient: an ownership move voids every acquisition anyway);
appended records commit after a delay. An ownership move loses the uncommitted tail and every
answer still in flight; the new owner loads from the (sometimes compacted) committed log. At the
quiet end one member drains the partition.

Invariants, checked after every event (``fail`` names the seed; ``python -m tests.sim.replay
share_partition SEED`` replays one):

1. No record is ACCEPTed twice: committed ACCEPT transitions per offset <= 1, and a record whose
   ACCEPT a member saw succeed is never delivered again.
2. No record is lost: at the end every offset of the topic-partition still in the log was
   ACCEPTed exactly once or archived for a reason (a committed REJECT, an aborted transaction, or
   delivered as many times as the limit allows); meanwhile every offset below SPEO is done
   (below SPSO) or in flight with a state.
3. A record is acquired by at most one member at a time: when a member receives records, no other
   member holds any of them under a lock of the same owner whose time overlaps the new lock's
   (an answer may arrive after its lock ran out and another member took the record: an
   acquisition answered at once overtakes one waiting for its archivals to commit; that late
   lock was over before the other began).
4. Delivery counts never exceed ``share.delivery.count.limit``; the count a member sees for a record
   only grows while one owner serves it, and an acquisition's count is one more than the count
   written for the record (or 1 when none is). An
   acquisition is not written (as in Kafka): after an ownership move the records acquired and not
   yet acknowledged, released or expired are available again with the count last written, so a
   delivery lost with its owner is not counted; a record is delivered at most the limit's times
   per owner, and is archived once its written count reaches the limit.
5. The records replay to the live partition's durable picture after every operation; the
   compacted log, with some keys' values re-appended at its end (the runtime's restores), replays
   to the same state as the full log; the committed SPSO never goes back.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcknowledgeType,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import SharePartitionKey, ShareStateChange, ShareStateStore
from groupcoord.records import decode, encode
from tests.sim.kernel import InvariantViolation

KEY = SharePartitionKey("sim-share", "t0", 0)


@dataclass(frozen=True)
class Scenario:
    seed: int
    members: int
    limit: int
    lock_ms: int
    max_in_flight: int
    per_snapshot: int
    renew: bool
    loss: float  # a request or an answer is lost
    commit_lag: float  # chance that the log commits what was appended, per step
    moves: int
    compaction: bool
    abort_rate: float
    retention: bool
    steps: int = 400

    @classmethod
    def random(cls, seed: int, steps: int = 400) -> Scenario:
        rng = random.Random(seed)
        return cls(
            seed=seed,
            members=rng.randint(1, 5),
            limit=rng.randint(2, 6),
            lock_ms=rng.choice([500, 1000, 3000]),
            max_in_flight=rng.choice([5, 20, 200]),
            per_snapshot=rng.choice([1, 3, 10, 500]),
            renew=rng.random() < 0.3,
            loss=rng.choice([0.0, 0.05, 0.2]),
            commit_lag=rng.choice([1.0, 0.5, 0.2]),
            moves=rng.choice([0, 1, 3, 6]),
            compaction=rng.random() < 0.5,
            abort_rate=rng.choice([0.0, 0.0, 0.1]),
            retention=rng.random() < 0.2,
            steps=steps,
        )


@dataclass
class Member:
    name: str
    # offset -> (owner generation, lock deadline) as this member knows it
    held: dict[int, tuple[int, int]] = field(default_factory=dict)
    # offset -> when the owner acquired it for this member (its lock's start)
    acquired_at: dict[int, int] = field(default_factory=dict)
    # offset -> (owner generation, delivery count) of its last delivery to this member
    seen_count: dict[int, tuple[int, int]] = field(default_factory=dict)
    # Bumped when the member leaves: answers to its earlier requests are dropped, as a closed
    # share session's would be.
    session: int = 0
    # A share session has one request in flight: the member waits for its answer (or times out
    # when it is lost) before it sends the next.
    waiting: bool = False


@dataclass
class Pending:
    """An answer waiting for its record to commit (``seq`` is the log position it needs)."""

    seq: int
    generation: int
    deliver: Callable[[], None]


class Simulation:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 7919 + 11)
        self.config = SharePartitionConfig(
            delivery_count_limit=sc.limit,
            record_lock_duration_ms=sc.lock_ms,
            max_in_flight_records=sc.max_in_flight,
            renew_enabled=sc.renew,
        )
        self.now = 0
        self.steps = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        # The topic-partition the share group reads.
        self.log_start = 0
        self.log_end = 0
        self.aborted: set[int] = set()
        # The coordinator log: (seq, key, value); ``committed`` is the first seq not committed.
        self.log = SimCoordinatorLog()
        self.generation = 0
        self.store = ShareStateStore(sc.per_snapshot)
        self.pending: list[Pending] = []
        self.members = [Member(f"m{i}") for i in range(sc.members)]
        # What the records did once committed, per offset (the server's side of the invariants).
        self.entry_effects: dict[int, tuple[list[int], list[int]]] = {}
        self.committed_accepts: Counter[int] = Counter()
        self.committed_rejects: set[int] = set()
        # The highest delivery count an owner handed out per offset (acquisitions are not written;
        # a record archived at the limit was handed out at the limit by the owner that archived it).
        self.handed_out: dict[int, int] = {}
        self.confirmed_accepts: set[int] = set()
        self.committed_start = 0
        self.sp, change = SharePartition.create(self.config, 0)
        self.write(change, [], [])

    # --- plumbing --------------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-30:])
        raise InvariantViolation(f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{tail}")

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now:>7} {line}")

    def write(self, change: ShareStateChange | None, accepts: list[int], rejects: list[int]) -> int:
        """Append the change's record; returns the seq an answer must wait for (for an operation
        that writes nothing: the last appended, as the runtime answers it behind earlier writes)."""
        if change is not None:
            for r in self.store.records_for(KEY, change):
                key, value = encode(r)
                seq = self.log.append(key, value)
                self.store.replay(decode(key, value))
                self.entry_effects[seq] = (accepts, rejects)
                self.stats["record:" + r.type.name] += 1
        elif accepts or rejects:
            self.fail("an operation changed records without writing")
        return self.log.next_seq - 1

    def answer(self, seq: int | None, deliver: Callable[[], None], m: Member | None = None) -> None:
        """Deliver once the log has committed ``seq`` (None: at once), unless the answer is lost."""
        if self.rng.random() < self.sc.loss:
            self.stats["lost:answer"] += 1
            return  # the member times out and goes on
        if seq is None:
            self.stats["answered-at-once"] += 1
            deliver()
            return
        if m is not None:
            m.waiting = True

        def done() -> None:
            if m is not None:
                m.waiting = False
            deliver()

        self.pending.append(Pending(seq, self.generation, done))

    def commit(self) -> None:
        for seq, key, value in self.log.commit():
            snapshot = decode(key, value).value
            assert snapshot is not None  # write() appends snapshots and updates, never a tombstone
            start = snapshot.start_offset
            if start < self.committed_start:
                self.fail(f"committed SPSO went back from {self.committed_start} to {start}")
            self.committed_start = start
            accepts, rejects = self.entry_effects.pop(seq, ([], []))
            for o in accepts:
                self.committed_accepts[o] += 1
                if self.committed_accepts[o] > 1:
                    self.fail(f"offset {o} ACCEPTed twice")
            self.committed_rejects.update(rejects)
        ready = [p for p in self.pending if p.seq < self.log.committed]
        self.pending = [p for p in self.pending if p.seq >= self.log.committed]
        for p in ready:
            p.deliver()

    # --- the run ---------------------------------------------------------------------------------
    def run(self) -> Simulation:
        sc = self.sc
        move_at = sorted(self.rng.randint(20, sc.steps) for _ in range(sc.moves))
        for self.steps in range(1, sc.steps + 1):
            while move_at and move_at[0] == self.steps:
                move_at.pop(0)
                self.move()
            self.step()
            self.check()
        self.quiet_end()
        return self

    def step(self) -> None:
        rng, sc = self.rng, self.sc
        roll = rng.random()
        if roll < 0.15:
            n = rng.randint(1, 6)
            for o in range(self.log_end, self.log_end + n):
                if rng.random() < sc.abort_rate:
                    self.aborted.add(o)
            self.log_end += n
        elif roll < 0.5:
            self.fetch(rng.choice(self.members), rng.randint(1, 10))
        elif roll < 0.8:
            self.acknowledge(rng.choice(self.members))
        elif roll < 0.83:
            self.leave(rng.choice(self.members))
        elif roll < 0.84 and sc.retention:
            self.log_start = min(self.log_end, self.log_start + rng.randint(1, 5))
            self.note(f"retention: log start {self.log_start}")
            self.answer(self.write(self.sp.update_log_start_offset(self.log_start), [], []), lambda: None)
        if rng.random() < 0.3:
            self.now += rng.choice([10, 50, 200, sc.lock_ms // 2])
            self.write(self.sp.expire_locks(self.now), [], [])
        if rng.random() < sc.commit_lag:
            self.commit()

    def fetch(self, m: Member, max_records: int) -> None:
        if m.waiting:
            return
        if self.rng.random() < self.sc.loss:
            self.stats["lost:fetch"] += 1
            return
        start = max(self.sp.next_fetch_offset(), self.log_start)
        if start >= self.log_end or not self.sp.can_acquire():
            return
        last = min(self.log_end - 1, start + self.rng.randint(0, 15))
        batches, o = [], start
        while o <= last:
            size = self.rng.randint(1, 4)
            batches.append(OffsetRange(o, min(last, o + size - 1)))
            o += size
        archive = [OffsetRange(a, a) for a in sorted(self.aborted) if start <= a <= last]
        t, gen, session = self.now, self.generation, m.session
        durable = self.store.get(KEY)
        written = {} if durable is None else {o: c for o, (_, c) in durable.offsets.items()}
        got = self.sp.acquire(m.name, batches, max_records, t, archive=archive, fetch_offset=start)
        acquired = [(o, r.delivery_count) for r in got.records for o in range(r.first_offset, r.last_offset + 1)]
        for o, c in acquired:
            if c > self.config.delivery_count_limit:
                self.fail(f"offset {o} acquired with delivery count {c}")
            self.handed_out[o] = max(c, self.handed_out.get(o, 0))
            if c != written.get(o, 0) + 1:
                self.fail(f"offset {o} acquired with count {c}, its written count is {written.get(o, 0)}")
        # Archivals only: an acquisition is not written. Without records it is answered at once,
        # resting on what the log has not committed yet; with some, once they are committed.
        seq = None if got.change is None else self.write(got.change, [], [])
        self.note(
            f"{m.name} fetch {start}-{last} max {max_records}: {[(r.first_offset, r.last_offset, r.delivery_count) for r in got.records]}"
        )
        self.stats["acquired"] += len(acquired)

        def deliver() -> None:
            if session != m.session:
                return
            for o, c in acquired:
                if o in self.confirmed_accepts:
                    self.fail(f"offset {o} delivered to {m.name} after its ACCEPT succeeded")
                seen_gen, seen = m.seen_count.get(o, (gen, 0))
                if seen_gen == gen and c <= seen:
                    self.fail(f"offset {o} delivered to {m.name} with count {c} after {seen}")
                until = t + self.config.record_lock_duration_ms
                for other in self.members:
                    hold = other.held.get(o)
                    if other is m or hold is None or hold[0] != gen:
                        continue
                    if hold[1] > t and other.acquired_at[o] < until:
                        self.fail(f"offset {o} delivered to {m.name} while {other.name} holds it until {hold[1]}")
                m.seen_count[o] = (gen, c)
                m.held[o] = (gen, until)
                m.acquired_at[o] = t
            self.stats["delivered"] += len(acquired)

        if acquired:
            self.answer(seq, deliver, m)

    def acknowledge(self, m: Member) -> None:
        if not m.held or m.waiting:
            return
        rng = self.rng
        if rng.random() < 0.1:
            self.stats["stalled"] += 1  # a member that stops acknowledging for a while
            return
        offsets = sorted(o for o in m.held if rng.random() < 0.7)
        if not offsets:
            return
        weights = [(AcknowledgeType.ACCEPT, 70), (AcknowledgeType.RELEASE, 15), (AcknowledgeType.REJECT, 10)]
        if self.sc.renew:
            weights.append((AcknowledgeType.RENEW, 10))
        kinds, w = zip(*weights, strict=True)
        types = {o: int(rng.choices(kinds, w)[0]) for o in offsets}
        batches = [AcknowledgementBatch(o, o, (types[o],)) for o in offsets]
        for o in offsets:
            if types[o] != AcknowledgeType.RENEW:
                del m.held[o]  # given up by the member whatever the answer
        if rng.random() < self.sc.loss:
            self.stats["lost:ack"] += 1
            return
        t = self.now
        # Offsets below SPSO are skipped, not acknowledged: only what the server says m holds counts.
        server_held = set(self.sp.acquired_by(m.name))
        res = self.sp.acknowledge(m.name, batches, t)
        ok = res.error == ErrorCode.NONE
        accepts = [o for o in offsets if ok and types[o] == AcknowledgeType.ACCEPT and o in server_held]
        rejects = [o for o in offsets if ok and types[o] == AcknowledgeType.REJECT and o in server_held]
        seq = self.write(res.change, accepts, rejects)
        self.stats[f"ack:{res.error.name}"] += 1
        self.note(f"{m.name} ack {[(o, AcknowledgeType(types[o]).name) for o in offsets]}: {res.error.name}")

        def deliver() -> None:
            if ok:
                self.confirmed_accepts.update(accepts)
                for o in offsets:
                    # Only a lock the server held for m is renewed (one below SPSO is skipped).
                    if types[o] == AcknowledgeType.RENEW and o in m.held and o in server_held:
                        m.held[o] = (m.held[o][0], t + self.config.record_lock_duration_ms)

        if res.change is None and ok:
            deliver()  # nothing to write (a renewal): answered at once
        else:
            self.answer(seq, deliver, m)

    def leave(self, m: Member) -> None:
        """The member closes its share session (final epoch, or its connection): what it holds goes
        back. (Leaving the group alone releases nothing, as in Kafka 4.2.)"""
        m.held.clear()
        m.session += 1
        m.waiting = False
        self.note(f"{m.name} leaves")
        self.write(self.sp.release_member(m.name), [], [])

    def move(self) -> None:
        """The owner fails: what was not committed is lost with every answer in flight; another
        process loads the share-partition from the committed (perhaps compacted) log."""
        lost = self.log.truncate()
        self.stats["move"] += 1
        self.stats["lost-records"] += len(lost)
        for seq in lost:
            self.entry_effects.pop(seq, None)
        self.pending.clear()
        for m in self.members:
            m.waiting = False  # their requests time out
        self.generation += 1
        if self.sc.compaction and self.rng.random() < 0.7:
            self.log.compact()
            self.stats["compacted"] += 1
        if self.rng.random() < 0.3:
            # The runtime's restores (after a zombie) re-append some keys' valid values at the end.
            self.stats["restored"] += self.log.restore(self.rng)
        store = ShareStateStore(self.sc.per_snapshot)
        for key, value in self.log.values():
            store.replay(decode(key, value))
        full = ShareStateStore(self.sc.per_snapshot)
        for key, value in self.log.full_values():
            full.replay(decode(key, value))
        if store.picture() != full.picture():
            self.fail("the compacted log replays to another state than the full log")
        durable = store.get(KEY)
        if durable is None:
            self.fail("no share state after load")
            return
        self.store = store
        self.sp, change = SharePartition.load(self.config, durable)
        self.note(f"move to generation {self.generation}: start {self.sp.start_offset}, {len(lost)} records lost")
        self.write(change, [], [])

    # --- invariants ------------------------------------------------------------------------------
    def check(self) -> None:
        sp = self.sp
        durable = self.store.get(KEY)
        if durable is None or durable.picture() != sp.durable_picture():
            self.fail("records do not replay to the partition's durable state")
        # Every record of the topic-partition below SPEO is done (below SPSO) or has a state.
        records = sp.records  # a copy per offset: taken once
        for o in range(max(sp.start_offset, self.log_start), sp.end_offset):
            if o not in records:
                self.fail(f"offset {o} below SPEO {sp.end_offset} has no state")
        for o, r in records.items():
            if o < sp.start_offset or o >= sp.end_offset:
                self.fail(f"offset {o} in flight outside [{sp.start_offset}, {sp.end_offset})")
            if r.delivery_count > self.config.delivery_count_limit:
                self.fail(f"offset {o} delivery count {r.delivery_count}")
            if (r.state == RecordState.ACQUIRED) != (r.member is not None):
                self.fail(f"offset {o} {r.state.name} member {r.member}")

    def quiet_end(self) -> None:
        """No more faults: every answer arrives, locks run out, one member drains the partition."""
        self.sc = Scenario(**{**self.sc.__dict__, "loss": 0.0})
        self.commit_all()
        self.now += 10 * self.config.record_lock_duration_ms
        self.write(self.sp.expire_locks(self.now), [], [])
        drainer = Member("drainer")
        self.members.append(drainer)
        for _ in range(20 * (self.log_end + 2)):
            if self.sp.start_offset >= self.log_end:
                break
            self.fetch(drainer, 50)
            self.commit_all()
            if drainer.held:
                offsets = sorted(drainer.held)
                drainer.held.clear()
                res = self.sp.acknowledge(drainer.name, [AcknowledgementBatch(o, o, (1,)) for o in offsets], self.now)
                if res.error != ErrorCode.NONE:
                    self.fail(f"drainer's acknowledgement failed: {res.error.name}")
                self.write(res.change, offsets, [])
                self.confirmed_accepts.update(offsets)
                self.commit_all()
            self.now += 1
            self.check()
        if self.sp.start_offset < self.log_end:
            self.fail(f"did not drain: SPSO {self.sp.start_offset} < log end {self.log_end}")
        for o in range(self.log_start, self.log_end):
            if self.committed_accepts[o] == 1 or o in self.committed_rejects or o in self.aborted:
                continue
            if self.handed_out.get(o, 0) >= self.config.delivery_count_limit:
                self.stats["archived-at-limit"] += 1
                continue
            self.fail(f"offset {o} lost: never accepted, rejected or delivered to the limit")
        self.stats["accepted"] += sum(self.committed_accepts.values())

    def commit_all(self) -> None:
        while self.log.next_seq > self.log.committed or self.pending:
            self.commit()


class SimCoordinatorLog:
    """Appended (key, value) entries with sequence numbers, a committed mark, compaction."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, bytes, bytes | None]] = []
        self.full: list[tuple[int, bytes, bytes | None]] = []  # every committed entry, never compacted
        self.next_seq = 0
        self.committed = 0

    def append(self, key: bytes, value: bytes | None) -> int:
        seq = self.next_seq
        self.next_seq += 1
        self.entries.append((seq, key, value))
        return seq

    def commit(self) -> list[tuple[int, bytes, bytes | None]]:
        new = [e for e in self.entries if self.committed <= e[0]]
        self.full.extend(new)
        self.committed = self.next_seq
        return new

    def truncate(self) -> list[int]:
        lost = [e[0] for e in self.entries if e[0] >= self.committed]
        self.entries = [e for e in self.entries if e[0] < self.committed]
        self.next_seq = self.committed
        return lost

    def restore(self, rng: random.Random) -> int:
        newest = {key: (seq, value) for seq, key, value in self.entries}
        again = [(key, value) for key, (_, value) in newest.items() if rng.random() < 0.3]
        for key, value in again:
            self.append(key, value)
        self.commit()
        return len(again)

    def compact(self) -> None:
        newest = {key: seq for seq, key, _ in self.entries}
        self.entries = [e for e in self.entries if newest[e[1]] == e[0]]

    def values(self) -> list[tuple[bytes, bytes | None]]:
        return [(k, v) for _, k, v in self.entries]

    def full_values(self) -> list[tuple[bytes, bytes | None]]:
        return [(k, v) for _, k, v in self.full]


def run_seed(seed: int, **kwargs: Any) -> Simulation:
    return Simulation(Scenario.random(seed, **kwargs)).run()
