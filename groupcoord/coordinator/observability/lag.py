"""Consumer lag per group and partition, as ``kafka_consumergroup_lag`` of kafka-exporter.

``groupcoord_consumergroup_lag{consumergroup,topic,partition}`` (kafka_exporter's labels) is the high watermark of the partition
minus the group's committed offset (never below 0), for the committed offsets of the shards this
process owns. A background thread refreshes it every ``metrics_lag_interval_ms``: it copies the
committed offsets on the event loop (one pass over them, no I/O there) and reads the high
watermarks with its own consumer. The watermarks come from fetch responses, not ListOffsets,
which some Kafka-compatible brokers answer wrongly for "latest" (the local Tansu broker among
them): each partition is fetched once from the last watermark seen (or the committed offset),
and the answer's watermark is kept.

At most ``metrics_lag_max_partitions`` (group, topic, partition) series are exported, the first
ones in shard and commit order; ``groupcoord_consumergroup_lag_partitions_omitted`` says how
many committed partitions were left out, so a dashboard can tell.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.offsets.state import PartitionOffsets
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus

log = logging.getLogger(__name__)

# (group, topic, partition, committed offset)
Committed = tuple[str, str, int, int]


def committed_offsets(shards: Iterable[Shard[GroupCoordinatorState]], limit: int) -> tuple[list[Committed], int]:
    """Up to ``limit`` committed offsets of the active ``shards``, and how many there are in all.
    Call it on the loop thread; beyond the limit only the per-topic counts are read."""
    out: list[Committed] = []
    total = 0
    for shard in shards:
        if shard.status is not ShardStatus.ACTIVE:
            continue
        # The total is kept as the offsets change: no walk over every group of a big shard on
        # the loop (100,000 groups), only over the first ``limit`` offsets.
        total += shard.committed.offsets.count
        out.extend(islice(_each_offset(shard.committed.offsets.offsets), max(0, limit - len(out))))
    return out, total


def _each_offset(offsets: dict[str, dict[str, PartitionOffsets]]) -> Iterator[Committed]:
    for group, topics in offsets.items():
        for topic, parts in topics.items():
            for partition, value in parts.items():
                yield group, topic, partition, value.offset


class LagMonitor(Collector):
    """Refreshes the lag on its own thread every ``interval_s``; ``collect`` serves the last result."""

    def __init__(
        self,
        client_config: dict[str, Any],
        offsets: Callable[[int], tuple[list[Committed], int]],
        interval_s: float,
        max_partitions: int,
        fetch_timeout_s: float = 10.0,
    ) -> None:
        self.client_config = dict(client_config)
        self.offsets = offsets
        self.interval_s = interval_s
        self.max_partitions = max_partitions
        self.fetch_timeout_s = fetch_timeout_s
        self._lags: dict[Committed, int] = {}  # replaced whole by each refresh, read by scrapes
        self._omitted = 0
        self._marks: dict[tuple[str, int], int] = {}
        self._consumer: Consumer | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="metrics-lag", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.fetch_timeout_s + 5)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.refresh()
            except Exception as exc:  # the next round tries again; metrics must not stop serving
                log.warning("consumer lag refresh failed: %s", exc)

    def refresh(self) -> None:
        """One round: read the committed offsets, fetch the high watermarks, compute the lag."""
        committed, total = self.offsets(self.max_partitions)
        omitted = total - len(committed)
        if omitted > 0 and not self._warned:
            self._warned = True
            log.warning(
                "consumer lag exported for %d of %d committed partitions (metrics_lag_max_partitions)",
                len(committed),
                total,
            )
        starts: dict[tuple[str, int], int] = {}
        for _, topic, partition, offset in committed:
            tp = (topic, partition)
            start = self._marks.get(tp, offset)
            starts[tp] = max(0, min(starts.get(tp, start), start))
        marks = self._high_watermarks(starts)
        self._marks = marks
        self._lags = {c: max(0, marks[(c[1], c[2])] - c[3]) for c in committed if (c[1], c[2]) in marks}
        self._omitted = omitted

    def _high_watermarks(self, starts: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        if not starts:
            return {}
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    **self.client_config,
                    # Never joins or commits: it only reads watermarks of assigned partitions.
                    "group.id": f"groupcoord-lag-{uuid.uuid4().hex[:8]}",
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    "max.partition.fetch.bytes": 1024,
                    "queued.max.messages.kbytes": 1024,
                }
            )
        consumer = self._consumer
        marks: dict[tuple[str, int], int] = {}
        pending = set(starts)
        assigned = [TopicPartition(t, p, off) for (t, p), off in starts.items()]
        consumer.assign(assigned)
        try:
            deadline = time.monotonic() + self.fetch_timeout_s
            while pending and time.monotonic() < deadline and not self._stop.is_set():
                for msg in consumer.consume(500, 0.2):
                    if msg.topic() is None:
                        continue  # a client-wide event; librdkafka retries, the deadline bounds it
                    key = (msg.topic(), msg.partition())
                    error = msg.error()
                    if error is not None and error.code() != KafkaError._PARTITION_EOF:
                        pending.discard(key)  # a deleted topic, say: no lag for it this round
                        continue
                    if key in pending:
                        _, high = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
                        if high >= 0:
                            marks[key] = high
                            pending.discard(key)
                            consumer.pause([TopicPartition(*key)])
        finally:
            try:
                # A pause outlives the assignment in librdkafka: the next round must fetch again.
                consumer.resume(assigned)
                consumer.unassign()
            except KafkaException as exc:
                log.debug("lag consumer unassign failed: %s", exc)
        return marks

    def describe(self) -> Iterable[Metric]:
        return self._families({}, 0)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._lags, self._omitted)

    def _families(self, lags: dict[Committed, int], omitted: int) -> list[Metric]:
        family = GaugeMetricFamily(
            "groupcoord_consumergroup_lag",
            "High watermark minus the group's committed offset, per partition, refreshed on an interval"
            " (kafka_exporter kafka_consumergroup_lag).",
            # kafka_exporter's label names, so that its dashboards read these series as they are
            # (deploy/prometheus/ renames the metric to kafka_consumergroup_lag).
            labels=["consumergroup", "topic", "partition"],
        )
        for (group, topic, partition, _), lag in lags.items():
            family.add_metric([group, topic, str(partition)], lag)
        return [
            family,
            GaugeMetricFamily(
                "groupcoord_consumergroup_lag_partitions_omitted",
                "Committed partitions beyond metrics_lag_max_partitions, whose lag is not exported.",
                value=omitted,
            ),
        ]
