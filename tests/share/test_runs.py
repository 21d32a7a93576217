"""The run-length share-partition answers as the per-offset one did, and keeps runs, not offsets.

``SharePartition`` keeps its in-flight state in runs of alike offsets, split where an operation
covers part of one. Every operation here runs on it and on ``per_offset_reference`` (the
per-offset model it replaced) side by side over arbitrary histories; every answer must be the
same: AcquiredRecords, error codes, durable changes, and the state read back after each step
(per-offset states, SPSO/SPEO, the next fetch offset and lock deadline, what each member holds,
the durable picture). The histories aim at the splits: fetched batches with holes between them
and parts compacted away, acknowledgements of part of a run or with one type per offset, RENEW of
a sub-range then expiry of the rest, members leaving while others hold neighbouring runs, the log
start moving into a run, failovers. The written state (``DurableShareState``, kept in ranges as
well) is checked against one kept per offset the same way.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.service.share_offsets import lag
from groupcoord.coordinator.share.partition import SharePartition
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    OffsetRange,
    RecordState,
    SharePartitionConfig,
)
from groupcoord.coordinator.share.state import DurableShareState
from groupcoord.records.definitions import ShareStateBatch
from tests.share import per_offset_reference as ref
from tests.share.harness import KEY, Harness, compact, replay

MEMBERS = ("a", "b", "c")
LOCK = 1_000


class Log:
    """The topic-partition: batches of offsets, with holes (offsets that hold no record)."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, int]] = []
        self.end = 0

    def produce(self, hole: int, size: int) -> None:
        self.end += hole
        if size:
            self.batches.append((self.end, self.end + size - 1))
            self.end += size

    def compact(self, first: int, width: int) -> None:
        """Records ``first..first+width`` go (compaction): batches keep what is left."""
        last = first + width
        kept: list[tuple[int, int]] = []
        for a, b in self.batches:
            if b < first or a > last:
                kept.append((a, b))
                continue
            if a < first:
                kept.append((a, first - 1))
            if b > last:
                kept.append((last + 1, b))
        self.batches = kept

    def read(self, start: int, count: int) -> list[OffsetRange]:
        """A fetch from ``start``: the batch holding it (or the next) and up to ``count`` - 1 more."""
        got = [OffsetRange(a, b) for a, b in self.batches if b >= start]
        return got[: max(1, count)]


class Twin:
    """One history applied to both models; every answer compared."""

    def __init__(self, limit: int, window: int, renew: bool) -> None:
        self.config = SharePartitionConfig(
            delivery_count_limit=limit, record_lock_duration_ms=LOCK, max_in_flight_records=window, renew_enabled=renew
        )
        self.h = Harness(self.config, updates_per_snapshot=3)
        self.old = ref.SharePartition(self.config, 0)
        self.log = Log()
        self.now = 0

    def same(self, new: object, old: object, what: str) -> None:
        assert new == old, f"{what}: runs {new!r} != per-offset {old!r}"

    def fetch(self, member: str, max_records: int, count: int, optimized: bool, archive: tuple[int, int]) -> None:
        start = self.h.sp.next_fetch_offset()
        self.same(start, self.old.next_fetch_offset(), "next_fetch_offset")
        fetched = self.log.read(start, count)
        if not fetched:
            return
        skip = [OffsetRange(start + archive[0], start + archive[0] + archive[1])] if archive[1] >= 0 else []
        args = dict(archive=skip, fetch_offset=start, batch_optimized=optimized)
        new = self.h.sp.acquire(member, fetched, max_records, self.now, **args)  # type: ignore[arg-type]
        old = self.old.acquire(member, fetched, max_records, self.now, **args)  # type: ignore[arg-type]
        self.same((new.records, new.change), (old.records, old.change), f"acquire {fetched} max {max_records}")
        self.h.write(new.change)

    def ack(self, member: str, batches: list[AcknowledgementBatch]) -> None:
        new = self.h.sp.acknowledge(member, batches, self.now)
        old = self.old.acknowledge(member, batches, self.now)
        self.same((new.error, new.change), (old.error, old.change), f"acknowledge {batches}")
        self.h.write(new.change)

    def held_ack(self, member: str, kinds: list[int], cut: int, overlap: bool = False) -> None:
        """An acknowledgement of what the member holds, as ranges: one batch per held stretch cut
        at ``cut`` offsets, each with one type, or one type per offset when ``kinds`` has several.
        ``overlap``: a batch that continues the one before begins at its last offset instead."""
        held = self.h.sp.acquired_by(member)
        if not held:
            return
        batches: list[AcknowledgementBatch] = []
        first = prev = held[0]
        for o in [*held[1:], None]:
            if o is not None and o == prev + 1 and o - first < max(1, cut):
                prev = o
                continue
            span = prev - first + 1
            if len(kinds) == 1:
                types: tuple[int, ...] = (kinds[0],)
            else:
                types = tuple(kinds[(first + i) % len(kinds)] for i in range(span))
            if overlap and batches and batches[-1].last_offset + 1 == first:
                extra = () if len(types) == 1 else (kinds[(first - 1) % len(kinds)],)
                batches.append(AcknowledgementBatch(first - 1, prev, extra + types))
            else:
                batches.append(AcknowledgementBatch(first, prev, types))
            if o is not None:
                first = prev = o
        self.ack(member, batches)

    def expire(self, step: int) -> None:
        self.now += step
        self.same(self.h.sp.locks_due(self.now), self.old.locks_due(self.now), "locks_due")
        new, old = self.h.sp.expire_locks(self.now), self.old.expire_locks(self.now)
        self.same(new, old, f"expire_locks at {self.now}")
        self.h.write(new)

    def leave(self, member: str) -> None:
        new, old = self.h.sp.release_member(member), self.old.release_member(member)
        self.same(new, old, f"release_member {member}")
        self.h.write(new)

    def log_start(self, step: int) -> None:
        target = self.h.sp.start_offset + step
        new, old = self.h.sp.update_log_start_offset(target), self.old.update_log_start_offset(target)
        self.same(new, old, f"update_log_start_offset {target}")
        self.h.write(new)
        self.log.batches = [(max(a, target), b) for a, b in self.log.batches if b >= target]

    def reload(self) -> None:
        store = replay(compact(self.h.log), self.h.store.updates_per_snapshot)
        durable = store.get(KEY)
        assert durable is not None
        new, new_change = SharePartition.load(self.config, durable)
        old, old_change = ref.SharePartition.load(self.config, durable)
        self.same(new_change, old_change, "load")
        self.h.store, self.h.sp, self.old = store, new, old
        self.h.write(new_change)

    def check(self) -> None:
        sp, old = self.h.sp, self.old
        view = {o: (r.state, r.delivery_count, r.member, r.deadline) for o, r in sp.records.items()}
        was = {o: (r.state, r.delivery_count, r.member, r.deadline) for o, r in old.records.items()}
        self.same(view, was, "records")
        self.same((sp.start_offset, sp.end_offset), (old.start_offset, old.end_offset), "SPSO, SPEO")
        self.same(sp.durable_picture(), old.durable_picture(), "durable_picture")
        self.same(sp.next_lock_deadline(), old.next_lock_deadline(), "next_lock_deadline")
        self.same(sp.next_fetch_offset(), old.next_fetch_offset(), "next_fetch_offset")
        self.same(sp.can_acquire(), old.can_acquire(), "can_acquire")
        for m in MEMBERS:
            self.same(sp.acquired_by(m), old.acquired_by(m), f"acquired_by {m}")
            self.same(sp.holds(m), bool(old.acquired_by(m)), f"holds {m}")
        # Alike neighbours are joined: no two adjacent runs could be one.
        runs = sp._runs
        assert all(not (a.last + 1 == b.first and a.alike(b)) for a, b in zip(runs, runs[1:], strict=False)), runs


member = st.sampled_from(MEMBERS)
op = st.one_of(
    st.tuples(st.just("produce"), st.integers(0, 3), st.integers(0, 12)),
    st.tuples(st.just("compact"), st.integers(0, 40), st.integers(0, 4)),
    st.tuples(
        st.just("fetch"),
        member,
        st.integers(1, 30),
        st.integers(1, 4),
        st.booleans(),
        st.tuples(st.integers(0, 10), st.integers(-1, 3)),
    ),
    st.tuples(
        st.just("held"),
        member,
        st.lists(st.integers(0, 4), min_size=1, max_size=3),
        st.integers(1, 12),
        st.booleans(),
    ),
    st.tuples(
        st.just("ack"),
        member,
        # A gap of -1 begins a range at the previous one's last offset (or just below SPSO).
        st.lists(st.tuples(st.integers(-1, 6), st.integers(0, 8), st.lists(st.integers(0, 4), min_size=1, max_size=3))),
    ),
    st.tuples(st.just("time"), st.integers(0, 2 * LOCK)),
    st.tuples(st.just("leave"), member),
    st.tuples(st.just("log_start"), st.integers(0, 4)),
    st.tuples(st.just("reload")),
)


def run(ops: list[tuple], limit: int, window: int, renew: bool) -> None:
    t = Twin(limit, window, renew)
    for o in ops:
        kind = o[0]
        if kind == "produce":
            t.log.produce(o[1], o[2])
        elif kind == "compact":
            t.log.compact(o[1], o[2])
        elif kind == "fetch":
            t.fetch(o[1], o[2], o[3], o[4], o[5])
        elif kind == "held":
            t.held_ack(o[1], o[2], o[3], o[4])
        elif kind == "ack":
            # Ranges from SPSO on, gaps between them (or sharing an offset with the one before);
            # types one per batch or one per offset.
            batches, at = [], t.h.sp.start_offset
            for gap, width, kinds in o[2]:
                first = at + gap
                types = tuple(kinds) if len(kinds) == 1 else tuple(kinds[i % len(kinds)] for i in range(width + 1))
                batches.append(AcknowledgementBatch(first, first + width, types))
                at = first + width + 1
            t.ack(o[1], batches)
        elif kind == "time":
            t.expire(o[1])
        elif kind == "leave":
            t.leave(o[1])
        elif kind == "log_start":
            t.log_start(o[1])
        elif kind == "reload":
            t.reload()
        t.check()


@settings(max_examples=400, deadline=None)
@given(
    ops=st.lists(op, max_size=50),
    limit=st.integers(2, 5),
    window=st.sampled_from((6, 20, 60)),
    renew=st.booleans(),
)
def test_runs_answer_as_the_per_offset_model(ops: list[tuple], limit: int, window: int, renew: bool) -> None:
    run(ops, limit, window, renew)


def _twin_with_batch(size: int, renew: bool = True) -> Twin:
    t = Twin(5, size, renew)
    t.log.produce(0, size)
    return t


def test_a_partial_accept_splits_a_run_in_three_and_a_whole_accept_leaves_none() -> None:
    t = _twin_with_batch(10)
    t.fetch("a", 10, 1, True, (0, -1))
    assert t.h.sp.run_count() == 1
    t.ack("a", [AcknowledgementBatch(3, 5, (1,))])
    t.check()
    assert t.h.sp.run_count() == 3  # acquired 0-2, acknowledged 3-5, acquired 6-9
    t.ack("a", [AcknowledgementBatch(0, 2, (1,)), AcknowledgementBatch(6, 9, (1,))])
    t.check()
    assert t.h.sp.run_count() == 0 and t.h.sp.start_offset == 10


def test_mixed_types_in_one_batch_then_renew_of_a_sub_range_and_expiry_of_the_rest() -> None:
    t = _twin_with_batch(12)
    t.fetch("a", 12, 1, True, (0, -1))
    # ACCEPT, RELEASE, REJECT, GAP per offset on 0-3; RENEW 6-8 later; 4-5 and 9-11 expire first.
    t.ack("a", [AcknowledgementBatch(0, 3, (1, 2, 3, 0))])
    t.check()
    t.now = LOCK // 2
    t.ack("a", [AcknowledgementBatch(6, 8, (4,))])
    t.check()
    t.expire(LOCK // 2)  # the first lock runs out: 4-5 and 9-11 come back, 6-8 stay acquired
    t.check()
    sp = t.h.sp
    assert sp.acquired_by("a") == [6, 7, 8] and sp.next_lock_deadline() == LOCK // 2 + LOCK
    records = sp.records
    assert records[1].state == RecordState.AVAILABLE and records[4].state == RecordState.AVAILABLE
    t.expire(LOCK)
    t.check()
    assert sp.acquired_by("a") == []


def test_release_of_one_member_between_anothers_runs() -> None:
    t = Twin(5, 30, False)
    for _ in range(3):
        t.log.produce(0, 4)
    t.fetch("a", 1, 1, True, (0, -1))  # 0-3
    t.fetch("b", 1, 1, True, (0, -1))  # 4-7
    t.fetch("a", 1, 1, True, (0, -1))  # 8-11
    t.check()
    t.leave("a")
    t.check()
    assert t.h.sp.acquired_by("b") == [4, 5, 6, 7] and t.h.sp.next_fetch_offset() == 0
    t.fetch("c", 30, 3, True, (0, -1))  # 0-3 and 8-11 again, around b's run
    t.check()
    assert t.h.sp.acquired_by("c") == [0, 1, 2, 3, 8, 9, 10, 11]


def test_spso_jumps_holes_and_load_fills_them() -> None:
    t = Twin(5, 60, False)
    t.log.produce(0, 3)
    t.log.produce(5, 3)  # 0-2, hole 3-7, 8-10
    t.fetch("a", 10, 2, True, (0, -1))
    t.check()
    t.held_ack("a", [1], 20)
    t.check()
    assert t.h.sp.start_offset == 11 and t.h.sp.run_count() == 0
    t.log.produce(2, 4)  # 13-16
    t.fetch("a", 10, 1, True, (0, -1))
    t.ack("a", [AcknowledgementBatch(13, 13, (1,))])
    t.reload()  # 14-16 were acquired, never written: available again, count 0
    t.check()
    assert t.h.sp.start_offset == 14 and t.h.sp.next_fetch_offset() == 14


def test_a_whole_batch_is_one_run_acquired_and_accepted() -> None:
    """Acquiring a 100,000-record batch and accepting it in one range keeps one run, then none: the
    state is not per offset (the durable change is one range too)."""
    size = 100_000
    h = Harness(SharePartitionConfig(max_in_flight_records=size))
    got = h.acquire("a", [OffsetRange(0, size - 1)], size, 0, batch_optimized=True)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got] == [(0, size - 1, 1)]
    assert h.sp.run_count() == 1
    res = h.sp.acknowledge("a", [AcknowledgementBatch(0, size - 1, (1,))], 1)
    assert res.change is not None and res.change.start_offset == size and res.change.batches == ()
    h.write(res.change)
    assert h.sp.run_count() == 0
    # Accepting all but the first record: the rest is one acknowledged run behind SPSO.
    got = h.acquire("a", [OffsetRange(size, 2 * size - 1)], size, 2, batch_optimized=True)
    res = h.sp.acknowledge("a", [AcknowledgementBatch(size + 1, 2 * size - 1, (1,))], 3)
    assert res.change is not None and len(res.change.batches) == 1 and h.sp.run_count() == 2
    h.write(res.change)
    h.write(h.sp.expire_locks(3 + h.config.record_lock_duration_ms))
    assert h.sp.run_count() == 2 and h.sp.next_fetch_offset() == size


class _PerOffsetDurable:
    """``DurableShareState`` as it was kept before its ranges: one entry per offset."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.offsets: dict[int, tuple[int, int]] = {}

    def apply(self, start: int, batches: list[ShareStateBatch]) -> None:
        if start > self.start:
            self.offsets = {o: s for o, s in self.offsets.items() if o >= start}
            self.start = start
        for b in batches:
            for o in range(max(b.first_offset, self.start), b.last_offset + 1):
                self.offsets[o] = (b.delivery_state, b.delivery_count)


batch = st.tuples(st.integers(0, 40), st.integers(0, 12), st.sampled_from((0, 2, 4)), st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 6), st.lists(batch, max_size=4)), max_size=25))
def test_durable_ranges_replay_as_per_offset_state(steps: list[tuple[int, list[tuple[int, int, int, int]]]]) -> None:
    """Replayed updates overwrite parts of written ranges, and the start cuts into them: the
    picture, the snapshot's batches, the end and the counts read back are as per offset."""
    durable, model = DurableShareState(0), _PerOffsetDurable(0)
    for step, raw in steps:
        batches = [ShareStateBatch(f, f + w, s, c) for f, w, s, c in raw]
        durable.apply(durable.start_offset + step, batches)
        model.apply(model.start + step, batches)
        items = sorted(model.offsets.items())
        assert durable.picture() == (0, model.start, tuple((o, s, c) for o, (s, c) in items))
        assert durable.offsets == model.offsets
        assert durable.batches() == list(ref.merge_batches(items))
        assert durable.end_offset == max(model.start, max(model.offsets, default=-1) + 1)
        for first, width, _, _ in raw:
            counts = [model.offsets.get(o, (0, 0))[1] for o in range(first, first + width + 1)]
            assert durable.max_count(first, first + width) == max(counts)
        assert all(a[1] < b[0] for a, b in zip(durable.runs, durable.runs[1:], strict=False))
        for end in (model.start, model.start + 7, durable.end_offset, durable.end_offset + 3):
            done = sum(1 for o, (s, _) in model.offsets.items() if s in (2, 4) and o < end)
            assert lag(durable, end) == max(0, end - model.start - done)
