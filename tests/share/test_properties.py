"""Properties of the share-partition over arbitrary histories (hypothesis).

Any sequence of fetches, acknowledgements (any types, any ranges, right or wrong member), lock
expiries, members leaving, log-start moves and failovers (reload from the compacted log) keeps:

* the records written replay to the partition's durable picture, compacted or not (the harness
  checks it after every operation);
* a record is acquired by at most one member, and only while its lock runs;
* the in-flight window (SPEO - SPSO) stays within ``max_in_flight_records``, or, batch-optimized
  (a fetched batch begun is acquired to its end, as Kafka does), within it and one batch;
* SPSO never goes back; nothing below it is in flight;
* no record is delivered more than ``delivery_count_limit`` times, and delivery counts reported for
  an offset only grow, counting from the written count after a failover (acquisitions are not
  written, as in Kafka: one lost with its owner is not counted);
* an ACCEPTed record is never delivered again;
* at the end, once one member drains the partition, every offset below SPSO that held a record
  was ACCEPTed exactly once or archived: nothing is lost.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from tests.share.harness import KEY, Harness

MEMBERS = ("a", "b", "c")
LOCK = 1_000

op = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(0, 25), st.integers(1, 8), st.booleans()),
    st.tuples(
        st.just("ack"),
        st.sampled_from(MEMBERS),
        st.integers(0, 30),
        st.integers(0, 6),
        st.lists(st.integers(0, 4), min_size=1, max_size=7),
    ),
    st.tuples(st.just("mine"), st.sampled_from(MEMBERS), st.sampled_from((1, 1, 2, 3))),
    # A ShareFetch carrying acknowledgements of what the member holds: one record for both.
    st.tuples(
        st.just("ack_fetch"),
        st.sampled_from(MEMBERS),
        st.sampled_from((1, 1, 2, 3)),
        st.integers(0, 25),
        st.integers(1, 8),
    ),
    st.tuples(st.just("time"), st.integers(0, 2 * LOCK)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("log_start"), st.integers(0, 3)),
    st.tuples(
        st.just("reload"),
    ),
)


class Model:
    def __init__(self, limit: int, renew: bool, per_snapshot: int, batch: int = 0) -> None:
        # 0: record-limit fetches of one range; n: batch-optimized fetches of the log's n-offset batches.
        self.batch = batch
        self.h = Harness(
            SharePartitionConfig(
                delivery_count_limit=limit, record_lock_duration_ms=LOCK, max_in_flight_records=12, renew_enabled=renew
            ),
            updates_per_snapshot=per_snapshot,
        )
        self.now = 0
        self.log_end = 0  # the topic-partition's next offset
        self.log_start = 0
        self.accepted: Counter[int] = Counter()
        self.deliveries: Counter[int] = Counter()
        self.last_count: dict[int, int] = {}
        self.rejected: set[int] = set()
        self.aborted: set[int] = set()

    def fetch(self, member: str, produce: int, max_records: int, abort: bool) -> None:
        if abort and produce:
            self.aborted.add(self.log_end)  # the first record produced now is of an aborted transaction
        self.log_end += produce
        sp = self.h.sp
        start = max(sp.next_fetch_offset(), self.log_start)
        if start >= self.log_end:
            return
        archive = [OffsetRange(o, o) for o in sorted(self.aborted) if o >= start]
        got = self.h.acquire(
            member, self.read(start), max_records, self.now, archive=archive, batch_optimized=self.batch > 0
        )
        self.delivered(got)

    def read(self, start: int) -> list[OffsetRange]:
        """What a fetch from ``start`` returns: the batches holding ``start`` up to the log's end."""
        if start >= self.log_end:
            return []
        if not self.batch:
            return [OffsetRange(start, self.log_end - 1)]
        first = start - start % self.batch
        return [OffsetRange(b, min(b + self.batch, self.log_end) - 1) for b in range(first, self.log_end, self.batch)]

    def ack_fetch(self, member: str, kind: int, produce: int, max_records: int) -> None:
        """The data path's ShareFetch with acknowledgements: the fetch offset is read before the
        acknowledgements apply, both are one write."""
        self.log_end += produce
        sp = self.h.sp
        held = sp.acquired_by(member)
        start = max(sp.next_fetch_offset(), self.log_start)
        batches = [AcknowledgementBatch(x, x, (kind,)) for x in held]
        res, got = self.h.ack_and_acquire(
            member, batches, self.read(start), max_records, self.now, batch_optimized=self.batch > 0
        )
        assert res.error == ErrorCode.NONE
        if kind == 1:
            self.accepted.update(held)
        elif kind == 3:
            self.rejected.update(held)
        self.delivered(got)

    def delivered(self, got: tuple[AcquiredRecords, ...]) -> None:
        sp = self.h.sp
        for r in got:
            for offset in range(r.first_offset, r.last_offset + 1):
                assert self.accepted[offset] == 0, f"accepted offset {offset} delivered again"
                assert r.delivery_count > self.last_count.get(offset, 0)
                self.last_count[offset] = r.delivery_count
                self.deliveries[offset] += 1
                assert self.deliveries[offset] <= sp.config.delivery_count_limit

    def reload(self) -> None:
        """A failover: every acquisition not yet written is forgotten, the counts start again from
        the written ones (what a record was delivered per the log). A record the load archives
        at the limit falls below SPSO and out of the written state: its count is kept, or the
        drain would take it for lost."""
        self.h.reload()
        durable = self.h.store.get(KEY)
        assert durable is not None
        written = {o: count for o, (_, count) in durable.offsets.items()}
        done = {o: n for o, n in self.last_count.items() if o < self.h.sp.start_offset}
        self.last_count = {**done, **written}
        self.deliveries = Counter({**done, **written})

    def ack(self, member: str, batches: list[AcknowledgementBatch]) -> None:
        held = set(self.h.sp.acquired_by(member))
        res = self.h.ack(member, batches, self.now)
        if res.error == ErrorCode.NONE:
            for b in batches:
                for offset in range(b.first_offset, b.last_offset + 1):
                    t = b.types[0] if len(b.types) == 1 else b.types[offset - b.first_offset]
                    if t == 1 and offset in held:
                        self.accepted[offset] += 1
                    elif t in (0, 3) and offset in held:
                        self.rejected.add(offset)

    def check(self) -> None:
        sp = self.h.sp
        assert all(o >= sp.start_offset for o in sp.records) and sp.start_offset <= sp.end_offset
        for o, r in sp.records.items():
            assert r.delivery_count <= sp.config.delivery_count_limit
            assert (r.state == RecordState.ACQUIRED) == (r.member is not None)
            if r.state == RecordState.ACQUIRED:
                assert r.deadline > self.now, f"{o} acquired past its lock"
        assert all(n <= 1 for n in self.accepted.values())
        assert sp.in_flight() <= sp.config.max_in_flight_records + max(0, self.batch - 1)
        # The lock heap (one entry per acquisition, narrowed as its records are done) names the
        # earliest lock still running: the shard's expiry timer is armed at it.
        deadlines = [r.deadline for r in sp.records.values() if r.state == RecordState.ACQUIRED]
        assert sp.next_lock_deadline() == min(deadlines, default=None)


def run(ops: list[tuple], limit: int, renew: bool, per_snapshot: int, batch: int = 0) -> Model:
    m = Model(limit, renew, per_snapshot, batch)
    for o in ops:
        start_before = m.h.sp.start_offset
        kind = o[0]
        if kind == "fetch":
            m.fetch(o[1], o[2], o[3], o[4])
        elif kind == "ack":
            _, member, first, width, types = o
            m.ack(member, [AcknowledgementBatch(first, first + width, tuple(types))])
        elif kind == "mine":
            # A well-formed acknowledgement of what the member holds, one type for all.
            held = m.h.sp.acquired_by(o[1])
            if held:
                m.ack(o[1], [AcknowledgementBatch(x, x, (o[2],)) for x in held])
        elif kind == "ack_fetch":
            m.ack_fetch(o[1], o[2], o[3], o[4])
        elif kind == "time":
            m.now += o[1]
            m.h.expire(m.now)
        elif kind == "leave":
            m.h.release_member(o[1])
        elif kind == "log_start":
            m.log_start = min(m.log_end, m.log_start + o[1])
            m.h.update_log_start_offset(m.log_start)
        elif kind == "reload":
            m.reload()
        assert m.h.sp.start_offset >= start_before
        m.check()
    drain(m)
    return m


def drain(m: Model) -> None:
    """Quiet end: locks run out, one member fetches and accepts everything."""
    m.now += 10 * LOCK
    m.h.expire(m.now)
    for _ in range(10 * (m.log_end + 1)):
        if m.h.sp.start_offset >= m.log_end:
            break
        m.fetch("z", 0, 50, False)
        held = m.h.sp.acquired_by("z")
        if held:
            m.ack("z", [AcknowledgementBatch(x, x, (1,)) for x in held])
        m.now += 1
    assert m.h.sp.start_offset == max(m.log_end, m.log_start), "the partition did not drain"
    # Every record ended ACCEPTed exactly once, or archived for a reason: a member rejected it, it
    # belonged to an aborted transaction, or it was delivered as often as the limit allows.
    for offset in range(m.log_start, m.log_end):
        reason = m.accepted[offset] == 1 or offset in m.rejected or offset in m.aborted
        assert reason or m.last_count.get(offset, 0) >= m.h.sp.config.delivery_count_limit, (
            f"offset {offset} lost: accepted {m.accepted[offset]}, delivered {m.deliveries[offset]}"
        )


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(op, max_size=40),
    limit=st.integers(2, 5),
    renew=st.booleans(),
    per_snapshot=st.integers(1, 4),
    batch=st.sampled_from((0, 0, 1, 3, 5)),
)
def test_any_history_keeps_the_invariants(
    ops: list[tuple], limit: int, renew: bool, per_snapshot: int, batch: int
) -> None:
    run(ops, limit, renew, per_snapshot, batch)
