"""Workload: transactional offsets (TxnOffsetCommit) on the REAL ``runtime.Shard`` over a simulated
log, beside plain commits, while the shard moves between processes and reloads.

A simulated cluster stands for the transaction coordinator and the transaction topic's partition
of the shard: producers (several producer ids) write their transaction's record there, the shard
stages the offsets with where it landed (``stage_txn_offsets``, checked on the live state as the
bridge does), and the cluster later writes the producer's COMMIT or ABORT marker; sometimes it
aborts on its own (a timeout: ABORT with a bumped epoch). A resolver, as ``groupcoord.coordinator.txn.bridge``,
reads the transaction partition from the lowest staged record and has the owning shard write the
outcome of each marker. A plain committer writes to the same partitions meanwhile. Every value
written is unique, so where a committed offset came from is always known.

Invariant 7 (DESIGN.md), after every step: a committed offset is a plain commit's value or a
committed transaction's; an aborted transaction's value never is. At the quiet end: nothing is
left staged, and the log holds exactly one applied OffsetCommit for each partition of each
committed transaction not overtaken by a later plain commit, and none for aborted ones (exactly
once, across moves and reloads). ``invariant_3`` (live = replay of the log) is checked throughout.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorState
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.replayer import LogReplayer
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus
from groupcoord.records import CoordinatorRecord, RecordType
from tests.messages import tid
from tests.sim import invariants, shard_api
from tests.sim.clients import commit_request
from tests.sim.kernel import LOG_TOPIC, InvariantViolation, SimHost, SimLog, sim_loop

GROUP = "txn-group"
TOPIC = "t0"
PARTITION = 0
TOPIC_ID = tid(TOPIC)
IDS: dict[str, str | None] = {TOPIC: TOPIC_ID}


@dataclass(frozen=True)
class Scenario:
    seed: int
    producers: int
    partitions: int
    transactions: int
    moves: int
    reloads: int
    plain_commits: int
    retention_check_ms: int | None = None  # the retention sweep's interval (None: Kafka's 10 minutes)

    @classmethod
    def random(cls, seed: int) -> Scenario:
        rng = random.Random(seed)
        return cls(
            seed=seed,
            producers=rng.randint(1, 3),
            partitions=rng.randint(1, 3),
            transactions=rng.randint(3, 10),
            moves=rng.choice([0, 1, 2, 3]),
            reloads=rng.choice([0, 1, 2]),
            plain_commits=rng.choice([0, 3, 8]),
            retention_check_ms=rng.choice(shard_api.SWEEPS),
        )


@dataclass
class Txn:
    values: dict[int, int]  # partition -> offset value
    staged_at: list[int] = field(default_factory=list)  # transaction-topic offsets of its acknowledged records


@dataclass
class TxnEntry:
    offset: int
    producer_id: int
    marker: str | None  # None: the offsets' record; "commit" / "abort"


class Simulation:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 31 + 11)
        self.loop = sim_loop()
        self.log = SimLog(clock=self.loop.clock)
        self.hosts = [SimHost(self.log, self.loop, f"owner-{i}", self.rng) for i in range(2)]
        image = TopicsImage.of([TopicImage(TOPIC, TOPIC_ID, sc.partitions)], 1)
        self.handlers = shard_api.handlers(
            lambda: image, ConsumerGroupConfig(assignment_interval_ms=0), retention_check_ms=sc.retention_check_ms
        )
        self.owner = 0
        self.txn_topic: list[TxnEntry] = []
        self.epochs = {pid: 0 for pid in range(1, sc.producers + 1)}
        self.plain: set[int] = set()
        self.committed_values: set[int] = set()
        self.aborted_values: set[int] = set()
        self.decided: list[tuple[Txn, bool]] = []
        self.next_value = 1
        self.open: dict[int, Txn] = {}
        self.remaining = {pid: sc.transactions for pid in self.epochs}
        self.resolving = False
        self.stats: Counter[str] = Counter()
        self.trace: list[str] = []
        self.steps = 0
        self.shard().load()

    # --- plumbing ------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    def at(self, delay_ms: int, fn: Any, *args: Any) -> None:
        self.loop.at(self.now + delay_ms, fn, *args)

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now} {line}")

    def shard(self, host: int | None = None) -> Shard[GroupCoordinatorState]:
        return self.hosts[self.owner if host is None else host].shard(PARTITION, self.handlers)

    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-30:])
        raise InvariantViolation(f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{tail}")

    def value(self) -> int:
        self.next_value += 1
        return self.next_value

    # --- the run -------------------------------------------------------------------------------
    def run(self) -> Simulation:
        for pid in self.epochs:
            self.at(self.rng.randint(50, 500), self.begin, pid)
        for _ in range(self.sc.plain_commits):
            self.at(self.rng.randint(100, 6000), self.plain_commit)
        for _ in range(self.sc.moves):
            self.at(self.rng.randint(200, 6000), self.move)
        for _ in range(self.sc.reloads):
            self.at(self.rng.randint(200, 6000), self.reload)
        self.at(20, self.resolve)
        while self.loop.step():
            self.steps += 1
            self.check()
            if self.now > 60_000:
                self.fail("the transactions were not all decided within 60 s")
            if self.finished():
                break
        self.check_final()
        return self

    def finished(self) -> bool:
        shard = self.shard()
        return (
            not self.open
            and not any(self.remaining.values())
            and shard.status is ShardStatus.ACTIVE
            and shard.caught_up
            and shard.committed.txn.lowest_txn_offset() is None
            and not self.resolving
        )

    # --- producers -----------------------------------------------------------------------------
    def begin(self, pid: int) -> None:
        if not self.remaining[pid]:
            return
        self.remaining[pid] -= 1
        partitions = self.rng.sample(range(self.sc.partitions), self.rng.randint(1, self.sc.partitions))
        txn = Txn({p: self.value() for p in partitions})
        self.open[pid] = txn
        self.send_offsets(pid, txn, attempts=3)

    def send_offsets(self, pid: int, txn: Txn, attempts: int) -> None:
        """TxnOffsetCommit: the record joins the transaction, then the shard stages it."""
        epoch = self.epochs[pid]
        request = TxnOffsetCommitRequest(
            transactional_id=f"tx-{pid}",
            group_id=GROUP,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[
                        TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=v)
                        for p, v in txn.values.items()
                    ],
                )
            ],
        )
        at = len(self.txn_topic)
        self.txn_topic.append(TxnEntry(at, pid, None))
        handlers = self.handlers

        def stage(state: GroupCoordinatorState, now: int) -> Result[TxnOffsetCommitResponse]:
            error, sequence = handlers.validate_txn_commit(state, request, IDS)
            if error != ErrorCode.NONE:
                return Result(TxnOffsetCommitResponse())
            return handlers.stage_txn_offsets(state, request, at, sequence, IDS, now)

        def answered(fut: Any) -> None:
            ok = fut.exception() is None and any(p.error_code == 0 for t in fut.result().topics for p in t.partitions)
            self.stats[f"stage:{'ok' if ok else 'refused'}"] += 1
            if ok:
                txn.staged_at.append(at)
                self.at(self.rng.randint(10, 400), self.end, pid, txn)
            elif attempts > 1:
                self.at(self.rng.randint(20, 200), self.send_offsets, pid, txn, attempts - 1)
            else:
                self.at(self.rng.randint(10, 100), self.end, pid, txn, False)

        self.shard().submit(stage).add_done_callback(answered)

    def end(self, pid: int, txn: Txn, may_commit: bool = True) -> None:
        """The cluster's transaction coordinator ends the transaction: the client's EndTxn, or
        its own abort (a timeout, or fencing by a new producer: the epoch is bumped)."""
        if self.open.get(pid) is not txn:
            return
        del self.open[pid]
        roll = self.rng.random()
        if may_commit and roll < 0.6:
            marker = "commit"
        elif roll < 0.85:
            marker = "abort"
        else:
            marker = "abort"
            self.epochs[pid] += 1
            self.stats["timeout-abort"] += 1
        self.txn_topic.append(TxnEntry(len(self.txn_topic), pid, marker))
        committed = marker == "commit"
        (self.committed_values if committed else self.aborted_values).update(txn.values.values())
        self.decided.append((txn, committed))
        self.stats[marker] += 1
        self.note(f"{marker} {pid} {txn}")
        self.at(self.rng.randint(10, 300), self.begin, pid)

    def plain_commit(self) -> None:
        value = self.value()
        partition = self.rng.randrange(self.sc.partitions)
        self.plain.add(value)
        request = commit_request(GROUP, "", -1, {TOPIC: [(partition, value)]})
        self.shard().submit(shard_api.commit_offsets(self.handlers, request)).add_done_callback(lambda fut: None)
        self.stats["plain"] += 1
        self.note(f"plain {partition}={value}")

    # --- the resolver (coordinator.txn.bridge) ---------------------------------------------------
    def resolve(self) -> None:
        self.at(20, self.resolve)
        shard = self.shard()
        if self.resolving or shard.status is not ShardStatus.ACTIVE:
            return
        staged = shard.committed.txn
        start = staged.lowest_txn_offset()
        if start is None:
            return
        for entry in self.txn_topic[start:]:
            if entry.marker is None:
                continue
            if any(c.key.txn_offset < entry.offset for c in staged.commits_of(entry.producer_id)):
                self.resolving = True
                op = self._decide(entry.producer_id, entry.offset, entry.marker == "commit")

                def done(fut: Any) -> None:
                    self.resolving = False
                    self.stats["resolved" if fut.exception() is None else "resolve-failed"] += 1

                shard.submit(op).add_done_callback(done)
                return

    def _decide(self, pid: int, at: int, committed: bool) -> Any:
        return lambda state, now: self.handlers.resolve_txn(state, pid, at, committed, now)

    # --- ownership ------------------------------------------------------------------------------
    def move(self) -> None:
        old, new = self.owner, 1 - self.owner
        if self.shard(new).status is not ShardStatus.CLOSED:
            return
        self.note(f"move {old} -> {new}")
        self.stats["move"] += 1
        self.shard(old).close()
        self.owner = new
        self.shard(new).load()

    def reload(self) -> None:
        if self.shard().status is ShardStatus.ACTIVE:
            self.stats["reload"] += 1
            self.shard().reload("simulated reload")

    # --- invariants -----------------------------------------------------------------------------
    def check(self) -> None:
        for host in self.hosts:
            invariants.invariant_shard_life(host.transitions, self.fail)
        shard = self.shard()
        if shard.status is not ShardStatus.ACTIVE:
            return
        invariants.invariant_7_committed_offsets_come_from_commits(
            shard.committed, GROUP, self.plain, self.committed_values, self.aborted_values, self.fail
        )
        invariants.invariant_3_replay_matches(shard, self.log, self.fail, full=self.steps % 50 == 0)

    def check_final(self) -> None:
        """Exactly once: each committed transaction's offsets were applied once (unless a later
        plain commit overtook them), an aborted one's never; nothing is left staged."""
        counter = _Applied()
        replayer = LogReplayer(LOG_TOPIC, PARTITION, [counter])
        for e in self.log.entries.get(PARTITION, []):
            replayer.feed(e.offset, e.key, e.value, e.headers)
        for txn, committed in self.decided:
            for partition, value in txn.values.items():
                times = counter.applied[value]
                if not committed and times:
                    self.fail(f"7. aborted {partition}={value} was applied")
                if committed and txn.staged_at and times != 1 and not counter.overtaken(value):
                    self.fail(f"exactly once: committed {partition}={value} applied {times} times")
        if self.shard().committed.txn.pending:
            self.fail("offsets are still staged at the end")
        invariants.invariant_3_replay_matches(self.shard(), self.log, self.fail, full=True)


class _Applied:
    """Counts, over a replay of the whole log, the OffsetCommit values a committed transaction
    wrote, and which staged values a later plain commit overtook."""

    def __init__(self) -> None:
        self.applied: Counter[int] = Counter()
        self.state = GroupCoordinatorState()
        self._overtaken: set[int] = set()

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type == RecordType.OFFSET_COMMIT and record.value is not None:
            if record.value.producer_id >= 0:
                self.applied[record.value.offset] += 1
            else:
                key = record.key
                for staged in self.state.txn.pending.values():
                    for commit in staged.values():
                        for o in commit.value.offsets:
                            if (o.topic, o.partition) == (key.topic, key.partition):
                                self._overtaken.add(o.offset)
        self.state.replay(record)

    def overtaken(self, value: int) -> bool:
        return value in self._overtaken

    def snapshot(self) -> Any:
        return None


def run_seed(seed: int) -> Simulation:
    return Simulation(Scenario.random(seed)).run()
