"""Prometheus metrics of ``groupcoord serve``, served at ``/metrics`` beside ``/healthz``.

Names follow Kafka's group coordinator metrics (``kafka.server:type=group-coordinator-metrics``
and the coordinator runtime's) where Kafka has one, made Prometheus-legal: ``groupcoord_``
prefix, ``_`` for ``-``; Kafka's ``-rate``/``-count`` pairs become one counter ``..._total``
(Prometheus derives the rate with ``rate()``). Each HELP text names the Kafka metric. Times are
histograms in seconds (Prometheus' base unit), which add up across processes where Kafka's
windowed percentiles and maxima could not; state label values are lower case.

=========================================  ===================================================
Kafka                                      here
=========================================  ===================================================
num-partitions{state}                      groupcoord_num_partitions{state=loading|active|failed}
partition-load-time-max / -avg             groupcoord_partition_load_time_seconds (histogram)
event-queue-size                           groupcoord_event_queue_size
event-queue-time-ms                        groupcoord_event_queue_time_seconds (histogram)
event-processing-time-ms                   groupcoord_event_processing_time_seconds (histogram)
event-purgatory-time-ms                    groupcoord_event_purgatory_time_seconds (histogram)
(none)                                     groupcoord_event_purgatory_oldest_seconds{partition}, groupcoord_stuck_partitions
batch-flush-time-ms                        groupcoord_batch_flush_time_seconds (histogram)
group-count{protocol}                      groupcoord_group_count{protocol=classic|consumer|share}
consumer-group-count{state}                groupcoord_consumer_group_count{state}
classic-group-count{state}                 groupcoord_classic_group_count{state}
share-group-count{state}                   groupcoord_share_group_count{state} (membership; KIP-932)
consumer-group-rebalance-rate / -count     groupcoord_consumer_group_rebalances_total
group-completed-rebalance-rate / -count    groupcoord_group_completed_rebalances_total
offset-count                               groupcoord_offset_count
offset-commit-rate / -count                groupcoord_offset_commits_total
offset-expiration-rate / -count            groupcoord_offset_expirations_total
offset-deletion-rate / -count              groupcoord_offset_deletions_total
share-acknowledgement-count                groupcoord_share_acknowledgements_total
record-acknowledgement-count{ack-type}     groupcoord_share_record_acknowledgements_total{ack_type}
AcquisitionLockTimeoutPerSec (KIP-1103)    groupcoord_share_record_lock_expirations_total
TotalShareFetchRequestsPerSec (KIP-1103)   groupcoord_share_fetch_requests_total
InFlightMessageCount (KIP-1103, total)     groupcoord_share_in_flight_records
=========================================  ===================================================

The gateway's metrics are in ``groupcoord.coordinator.observability.gateway``, consumer lag in
``groupcoord.coordinator.observability.lag``, ``groupcoord_build_info`` in ``registry``.

Gauges over the in-memory state are computed when scraped, on the coordinator's event loop (the
one thread that touches shard state), from the shards this process owns: several processes each
export their own shards. Counters are counted where the runtime applies what a handler returned
(``ShardMetrics.processed``), from the records themselves; the group logic knows nothing of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groupcoord.coordinator.groups.classic.group_state import ClassicGroupState
from groupcoord.coordinator.groups.consumer.group import ConsumerGroupState
from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.groups.share.group import ShareGroupState
from groupcoord.coordinator.observability.histogram import EVENT_BUCKETS, LOAD_BUCKETS, Histogram
from groupcoord.coordinator.observability.registry import REGISTRY
from groupcoord.coordinator.runtime.shard import Shard, ShardObserver, ShardStatus
from groupcoord.coordinator.service.answer_budget import take_in_slices
from groupcoord.coordinator.share.shard_ops import ShareLockExpiry
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.offset_commit_run import OffsetCommitRun

log = logging.getLogger(__name__)

T = TypeVar("T")


class Counts:
    """The group counters: plain integers with one writer (the loop thread), exported by a
    collector; cheaper on the write path than a locked ``prometheus_client.Counter``."""

    FAMILIES = (
        ("offset_commits", "groupcoord_offset_commits", "Offsets committed (Kafka offset-commit-count)."),
        ("offset_expirations", "groupcoord_offset_expirations", "Offsets expired (Kafka offset-expiration-count)."),
        (
            "offset_deletions",
            "groupcoord_offset_deletions",
            "Offsets deleted by OffsetDelete, DeleteGroups or topic deletion (Kafka offset-deletion-count).",
        ),
        (
            "consumer_rebalances",
            "groupcoord_consumer_group_rebalances",
            "Group epoch bumps of consumer (KIP-848) groups (Kafka consumer-group-rebalance-count).",
        ),
        (
            "classic_completed_rebalances",
            "groupcoord_group_completed_rebalances",
            "Classic groups' rebalances completed into a new generation (Kafka group-completed-rebalance-count).",
        ),
        (
            "txn_offset_commits",
            "groupcoord_txn_offset_commits",
            "TxnOffsetCommit requests staged, pending until their transaction is decided.",
        ),
        (
            "txn_commits",
            "groupcoord_txn_commits",
            "Staged transactional offset commits applied by their transaction's COMMIT marker.",
        ),
        (
            "txn_aborts",
            "groupcoord_txn_aborts",
            "Staged transactional offset commits dropped by their transaction's ABORT marker.",
        ),
        (
            "share_fetches",
            "groupcoord_share_fetch_requests",
            "ShareFetch requests answered by this process (Kafka TotalShareFetchRequestsPerSec, KIP-1103).",
        ),
        (
            "share_acknowledgements",
            "groupcoord_share_acknowledgements",
            "ShareFetch and ShareAcknowledge requests carrying acknowledgements (Kafka share-acknowledgement-count).",
        ),
        (
            "share_log_reads",
            "groupcoord_share_log_reads",
            "Reads of a partition from the cluster by ShareFetches (those not answered by the partition's last read).",
        ),
        (
            "share_lock_expirations",
            "groupcoord_share_record_lock_expirations",
            "Acquired records whose acquisition lock ran out (Kafka AcquisitionLockTimeoutPerSec, KIP-1103).",
        ),
    )
    # Acknowledgement type id -> label (Kafka's ack-type tag, lower case); GAP (0) is not counted, as in Kafka.
    ACK_TYPES = {1: "accept", 2: "release", 3: "reject"}

    def __init__(self) -> None:
        self.offset_commits = 0
        self.offset_expirations = 0
        self.offset_deletions = 0
        self.consumer_rebalances = 0
        self.classic_completed_rebalances = 0
        self.txn_offset_commits = 0
        self.txn_commits = 0
        self.txn_aborts = 0
        self.share_fetches = 0
        self.share_acknowledgements = 0
        self.share_lock_expirations = 0
        self.share_log_reads = 0
        self.share_record_acks: Tally[str] = Tally()

    def share_acknowledged(self, types_per_offset: Iterable[tuple[int, int]]) -> None:
        """Records acknowledged and applied: (acknowledgement type id, how many records)."""
        for ack_type, records in types_per_offset:
            label = self.ACK_TYPES.get(ack_type)
            if label is not None:
                self.share_record_acks[label] += records


COUNTS = Counts()


class Latency:
    """A histogram of one of Kafka's runtime latencies, with its name and HELP text."""

    def __init__(self, name: str, documentation: str, bounds: tuple[float, ...] = EVENT_BUCKETS) -> None:
        self.name = name
        self.documentation = documentation
        self.histogram = Histogram(bounds)

    def observe(self, seconds: float) -> None:
        self.histogram.observe(seconds)

    def family(self) -> Metric:
        return self.histogram.family(self.name, self.documentation)


EVENT_QUEUE_TIME = Latency(
    "groupcoord_event_queue_time_seconds", "Time an event waits for its handler (Kafka event-queue-time-ms)."
)
EVENT_PROCESSING_TIME = Latency(
    "groupcoord_event_processing_time_seconds",
    "Time a handler takes, encoding its records included (Kafka event-processing-time-ms).",
)
EVENT_PURGATORY_TIME = Latency(
    "groupcoord_event_purgatory_time_seconds",
    "Time from a write's append to the release of its answer once its records are read back"
    " (Kafka event-purgatory-time-ms).",
)
BATCH_FLUSH_TIME = Latency(
    "groupcoord_batch_flush_time_seconds",
    "Time from handing a batch to the log writer to its acknowledgement (Kafka batch-flush-time-ms).",
)
PARTITION_LOAD_TIME = Latency(
    "groupcoord_partition_load_time_seconds",
    "Time to load a shard from the log (Kafka partition-load-time-max and -avg: _sum/_count is the average).",
    LOAD_BUCKETS,
)
LATENCIES = (EVENT_QUEUE_TIME, EVENT_PROCESSING_TIME, EVENT_PURGATORY_TIME, BATCH_FLUSH_TIME, PARTITION_LOAD_TIME)
# What an event answered again at once (``ShardMetrics.repeated``) is counted in.
_REPEAT_HISTOGRAMS = (EVENT_QUEUE_TIME.histogram, EVENT_PROCESSING_TIME.histogram, EVENT_PURGATORY_TIME.histogram)


class _Process(Collector):
    """The counters and the latency histograms of this process."""

    def collect(self) -> Iterable[Metric]:
        for attribute, name, documentation in Counts.FAMILIES:
            yield CounterMetricFamily(name, documentation, value=getattr(COUNTS, attribute))
        family = CounterMetricFamily(
            "groupcoord_share_record_acknowledgements",
            "Records acknowledged by share group members, by type (Kafka record-acknowledgement-count{ack-type}).",
            labels=["ack_type"],
        )
        for label in Counts.ACK_TYPES.values():
            family.add_metric([label], COUNTS.share_record_acks[label])
        yield family
        for latency in LATENCIES:
            yield latency.family()


REGISTRY.register(_Process())


class ShardMetrics(ShardObserver):
    """The runtime's hooks: latencies, and counters from the records each handler returned."""

    def loaded(self, partition: int, seconds: float) -> None:
        PARTITION_LOAD_TIME.observe(seconds)

    def dequeued(self, waited_s: float) -> None:
        EVENT_QUEUE_TIME.observe(waited_s)

    def released(self, waited_s: float) -> None:
        EVENT_PURGATORY_TIME.observe(waited_s)

    def flushed(self, seconds: float) -> None:
        BATCH_FLUSH_TIME.observe(seconds)

    def repeated(self, state: Any, response: object) -> None:
        # No wait, no processing time, no records: each histogram's lowest bucket, as observing
        # 0.0 would, without three calls through Latency and Histogram each.
        for histogram in _REPEAT_HISTOGRAMS:
            histogram.counts[0] += 1

    def processed(
        self, state: Any, records: Sequence[CoordinatorRecord], cause: object, seconds: float, response: object = None
    ) -> None:
        EVENT_PROCESSING_TIME.observe(seconds)
        if isinstance(cause, ShareLockExpiry) and isinstance(response, int):
            COUNTS.share_lock_expirations += response
        if records and isinstance(state, GroupCoordinatorState):
            count_records(state, records, timer=cause is not None)


def count_records(state: GroupCoordinatorState, records: Sequence[CoordinatorRecord], timer: bool) -> None:
    """Count what ``records`` (returned by one handler, not yet replayed into ``state``) do.

    An OffsetCommit value is a commit; an OffsetCommit tombstone is an expiration when a timer
    (the retention sweep) wrote it, else a deletion (OffsetDelete, DeleteGroups, a deleted topic).
    A ConsumerGroupMetadata value with a higher epoch than the group's is a rebalance (Kafka
    counts each group epoch bump); a GroupMetadata value with members and a generation newer
    than the group's last record is a completed classic rebalance."""
    if type(records) is OffsetCommitRun:  # a plain commit's records, as columns
        COUNTS.offset_commits += len(records)
        return
    commits = tombstones = 0
    decided = applied = 0
    for record in records:
        kind = record.type
        if kind == RecordType.OFFSET_COMMIT:
            if record.value is None:
                tombstones += 1
            else:
                commits += 1
                applied += record.value.producer_id >= 0
        elif kind == RecordType.PENDING_TXN_OFFSETS:
            if record.value is None:
                decided += 1
            else:
                COUNTS.txn_offset_commits += 1
        elif kind == RecordType.CONSUMER_GROUP_METADATA and record.value is not None:
            group = state.consumer.groups.get(record.key.group)
            if group is None or record.value.epoch > group.group_epoch:
                COUNTS.consumer_rebalances += 1
        elif kind == RecordType.GROUP_METADATA and record.value is not None and record.value.members:
            previous = state.classic.records.get(record.key.group)
            if previous is None or record.value.generation > previous.generation:
                COUNTS.classic_completed_rebalances += 1
    if decided:
        # One marker decides a whole batch: a COMMIT writes the offsets, an ABORT only drops.
        if applied:
            COUNTS.txn_commits += decided
        else:
            COUNTS.txn_aborts += decided
    COUNTS.offset_commits += commits
    if timer:
        COUNTS.offset_expirations += tombstones
    else:
        COUNTS.offset_deletions += tombstones


# --- gauges over the owned shards, computed at scrape time --------------------------------------

_SHARD_STATES = {
    ShardStatus.LOADING: "loading",
    ShardStatus.FENCED: "loading",  # stopped until placement confirms it may reload
    ShardStatus.ACTIVE: "active",
    ShardStatus.FAILED: "failed",
}
# Label values as Kafka's lower-case state names (ListGroups' states filter): "preparingrebalance".
_CLASSIC_STATES = [s.value.lower() for s in ClassicGroupState]
_CONSUMER_STATES = [s.value.lower() for s in ConsumerGroupState]
_SHARE_STATES = [s.value.lower() for s in ShareGroupState]


# A group's (protocol, state) label pair, made once for each state.
GroupLabel = tuple[str, str]
_CONSUMER_LABELS = {s: ("consumer", s.value.lower()) for s in ConsumerGroupState}
_CLASSIC_LABELS = {s: ("classic", s.value.lower()) for s in ClassicGroupState}
_SHARE_LABELS = {s: ("share", s.value.lower()) for s in ShareGroupState}


def group_labels(live: GroupCoordinatorState) -> Iterator[GroupLabel]:
    """The label of each group with members' state (consumer, classic, share), lazily, over the
    group tables as they are now (copied before the first one is taken): a scrape takes it in
    slices and lets the loop run between them (``shard_families_in_slices``). A group created
    meanwhile is left out, one deleted meanwhile still counted, one changed meanwhile counted
    once in the state it had when reached: a gauge read while the groups change."""
    consumer = list(live.consumer.groups.values())
    classic = list(live.classic.groups.values())
    share = list(live.share.groups.values())

    def labels() -> Iterator[GroupLabel]:
        for cg in consumer:
            yield _CONSUMER_LABELS[cg.state()]
        for group in classic:
            yield _CLASSIC_LABELS[group.state]
        for sg in share:
            yield _SHARE_LABELS[sg.state()]

    return labels()


def shard_families(shards: Iterable[Shard[GroupCoordinatorState]]) -> list[Metric]:
    """The gauges over ``shards``, at once; call it on the loop thread that owns them."""
    scan, labels = _scan(shards)
    return _families(scan, chain.from_iterable(labels))


async def shard_families_in_slices(shards: Iterable[Shard[GroupCoordinatorState]]) -> list[Metric]:
    """``shard_families``, run on the loop that owns the shards, with the pass over the groups
    that have members taken in slices (``take_in_slices``): however many groups there are,
    the loop runs other work at least every ``YIELD_EVERY_SECONDS``."""
    scan, labels = _scan(shards)
    return _families(scan, await take_in_slices(chain.from_iterable(labels)))


class _Scan:
    """What ``shard_families`` reads of the shards without a pass over their groups."""

    def __init__(self) -> None:
        self.partitions: Tally[str] = Tally()
        self.queued = self.waiting = 0
        # partition -> seconds the oldest written answer of that shard has waited for its records to be read back
        self.unreleased: dict[int, float] = {}
        self.stuck = 0
        self.offset_only_groups = 0
        self.offsets = 0
        self.in_flight = 0


def _scan(shards: Iterable[Shard[GroupCoordinatorState]]) -> tuple[_Scan, list[Iterator[GroupLabel]]]:
    """The counts read at once, and the labels of the groups with members, lazily (per active
    shard). Never a pass over the groups that only committed offsets (100,000 of them took a
    scrape 173 ms of the loop) nor over offsets: ``OffsetsState.count`` is kept as replays
    change it."""
    scan = _Scan()
    labels: list[Iterator[GroupLabel]] = []
    for shard in shards:
        state = _SHARD_STATES.get(shard.status)
        if state is not None:
            scan.partitions[state] += 1
        q, w = shard.backlog
        scan.queued += q
        scan.waiting += w
        if shard.status in (ShardStatus.ACTIVE, ShardStatus.LOADING):
            scan.unreleased[shard.partition] = shard.unreleased_age_ms(shard.host.clock.now_ms()) / 1000
            scan.stuck += shard.stuck
        if shard.status is not ShardStatus.ACTIVE:
            continue
        # Group states as ListGroups shows them: the live state holds a classic group's
        # rebalance in progress, which is never written to the log.
        live = shard.live
        labels.append(group_labels(live))
        # A group that only ever committed offsets is an Empty classic group, as in Kafka: the
        # groups with offsets less those of them that are consumer or classic groups (found
        # from the side of the groups with members, which are walked anyway).
        committing = live.offsets.offsets
        members = live.consumer.groups.keys() | live.classic.groups.keys()
        scan.offset_only_groups += len(committing) - sum(1 for gid in members if gid in committing)
        scan.offsets += shard.committed.offsets.count
        scan.in_flight += sum(sp.in_flight() for sp in live.share_data.live.values())
    return scan, labels


def _families(scan: _Scan, labels: Iterable[GroupLabel]) -> list[Metric]:
    tally = Tally(labels)
    classic: Tally[str] = Tally()
    consumer: Tally[str] = Tally()
    share: Tally[str] = Tally()
    by_protocol = {"classic": classic, "consumer": consumer, "share": share}
    for (protocol, state), count in tally.items():
        by_protocol[protocol][state] += count
    classic["empty"] += scan.offset_only_groups
    out: list[Metric] = []
    family = GaugeMetricFamily(
        "groupcoord_num_partitions",
        "Shards (log partitions) this process owns, by state (Kafka num-partitions).",
        labels=["state"],
    )
    for state in ("loading", "active", "failed"):
        family.add_metric([state], scan.partitions[state])
    out.append(family)
    out.append(
        GaugeMetricFamily(
            "groupcoord_event_queue_size",
            "Events waiting for their handler (Kafka event-queue-size).",
            value=scan.queued,
        )
    )
    out.append(
        GaugeMetricFamily(
            "groupcoord_event_purgatory_size",
            "Written answers waiting for their records to be read back from the log.",
            value=scan.waiting,
        )
    )
    family = GaugeMetricFamily(
        "groupcoord_event_purgatory_oldest_seconds",
        "How long the oldest written answer of each owned shard has waited for its records to be read back (seconds).",
        labels=["partition"],
    )
    for partition, age in sorted(scan.unreleased.items()):
        family.add_metric([str(partition)], age)
    out.append(family)
    out.append(
        GaugeMetricFamily(
            "groupcoord_stuck_partitions",
            "Owned shards whose oldest written answer waited past stuck_shard_warning_ms.",
            value=scan.stuck,
        )
    )
    family = GaugeMetricFamily(
        "groupcoord_group_count", "Groups of the owned shards, by protocol (Kafka group-count).", labels=["protocol"]
    )
    family.add_metric(["classic"], sum(classic.values()))
    family.add_metric(["consumer"], sum(consumer.values()))
    family.add_metric(["share"], sum(share.values()))
    out.append(family)
    family = GaugeMetricFamily(
        "groupcoord_consumer_group_count", "Consumer groups by state (Kafka consumer-group-count).", labels=["state"]
    )
    for state in _CONSUMER_STATES:
        family.add_metric([state], consumer[state])
    out.append(family)
    family = GaugeMetricFamily(
        "groupcoord_classic_group_count", "Classic groups by state (Kafka classic-group-count).", labels=["state"]
    )
    for state in _CLASSIC_STATES:
        family.add_metric([state], classic[state])
    out.append(family)
    family = GaugeMetricFamily(
        "groupcoord_share_group_count", "Share groups by state (Kafka share-group-count).", labels=["state"]
    )
    for state in _SHARE_STATES:
        family.add_metric([state], share[state])
    out.append(family)
    out.append(
        GaugeMetricFamily(
            "groupcoord_offset_count", "Committed offsets retained (Kafka offset-count).", value=scan.offsets
        )
    )
    out.append(
        GaugeMetricFamily(
            "groupcoord_share_in_flight_records",
            "Records between the start and end offsets of the live share-partitions, summed"
            " (Kafka InFlightMessageCount, KIP-1103, per share-partition there).",
            value=scan.in_flight,
        )
    )
    return out


def on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], T], timeout: float) -> T:
    """Run ``fn`` on ``loop`` from another thread and wait for its result."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(fn())
        except BaseException as exc:  # handed to the waiting thread
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done.result(timeout)


class ShardCollector(Collector):
    """The gauges of ``shard_families`` over the shards of ``shards()``, read on ``loop``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        shards: Callable[[], Iterable[Shard[GroupCoordinatorState]]],
        timeout: float = 5.0,
    ) -> None:
        self.loop = loop
        self.shards = shards
        self.timeout = timeout

    def describe(self) -> Iterable[Metric]:
        # Registration must not wait for the loop (it may be the caller).
        return shard_families([])

    async def _families(self) -> list[Metric]:
        return await shard_families_in_slices(list(self.shards()))

    def collect(self) -> Iterable[Metric]:
        started = time.perf_counter()
        try:
            # In slices on the loop: a scrape never holds it for a pass over every group.
            pending = asyncio.run_coroutine_threadsafe(self._families(), self.loop)
            try:
                families = pending.result(self.timeout)
            except concurrent.futures.TimeoutError:
                pending.cancel()
                raise
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            # A loop too busy to answer (or closing): the scrape goes on without these gauges.
            log.warning("shard metrics skipped: %s", exc or type(exc).__name__)
            return []
        families.append(
            GaugeMetricFamily(
                "groupcoord_shard_metrics_collect_seconds",
                "Time this scrape took to read the shard gauges.",
                value=time.perf_counter() - started,
            )
        )
        return families
