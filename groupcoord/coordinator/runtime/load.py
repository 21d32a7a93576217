"""One load of one shard, from offset 0 to the end of its log partition: Kafka's ``CoordinatorLoader``.

A ``ShardLoad`` owns the load from start to finish. Its host (the reader thread in production,
``tests/sim``'s simulated reader in the simulations: the same code either way) feeds it the
partition's records as they are read (``feed``) and, at the end of the partition, asks it for
its one result (``end``): the next offset, the new epoch, the records the new owner must write
to claim the shard (``claim``), counts and times. The shard appends the claim and only then asks
for its replayer (``tailing``), which decodes the records that survived the load (the last of
each key) into the fresh states: the decoding overlaps the claim's round trip to the log, and the
replayer it returns is in tailing mode, applying to the committed state what is read from then on.

``feed`` and ``end`` run on the host's reading thread; nothing else touches the load meanwhile,
and no shard state is touched before ``tailing`` (a deferred replayer keeps records raw). Every
failure is a ``LoadFailed`` naming why, an unreadable record by its offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from groupcoord.coordinator.runtime.api import ShardState
from groupcoord.coordinator.runtime.clock import Clock
from groupcoord.coordinator.runtime.collector import SHARED, collector_paused, release_freed_heap
from groupcoord.coordinator.runtime.replayer import LogMessage, LogReplayer
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import BatchAbortKey, BatchAbortValue, ShardEpochKey, ShardEpochValue

log = logging.getLogger(__name__)


class LoadFailed(Exception):
    """The load could not replay the log; the message says why (and where)."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What a load found: Kafka's ``LoadSummary``, plus what the new owner must write."""

    next_offset: int  # the end of the partition: the offset the claim's first record gets
    epoch: int  # the highest epoch read, plus one: the new owner's
    # BatchAbort (a batch cut short at the end of the log), restores, ShardEpoch, tombstones of
    # the earlier owners' ShardEpoch records: appended as they are, in this order.
    claim: list[CoordinatorRecord]
    restores: list[CoordinatorRecord]  # of ``claim``: the valid values re-stated
    records_read: int
    read_seconds: float  # from the start of the load until the end of the partition was read
    # From the start of the load until its first record was read (``read_seconds`` when the
    # partition had none): the broker's answer to the first fetch, apart from reading the rest.
    first_record_seconds: float = 0.0


class ShardLoad:
    def __init__(
        self, topic: str, partition: int, committed: ShardState, live: ShardState, owner_id: str, clock: Clock
    ) -> None:
        self.partition = partition
        self.owner_id = owner_id
        self.clock = clock
        self.started = time.perf_counter()
        self.first_record_at = 0.0  # perf_counter() when the first records were fed; 0: none yet
        self._committed = committed
        self._live = live
        self._replayer = LogReplayer(topic, partition, [committed, live], deferred=True)
        self._restores: list[CoordinatorRecord] = []

    def feed(self, messages: Sequence[LogMessage], of_class: type[LogMessage] | None = None) -> None:
        """Take records as the reader delivers them, in log order (runs of plain state records in
        bulk); ``of_class``: the class all of them are of, where the reader knows it."""
        if not self.first_record_at:
            self.first_record_at = time.perf_counter()
        try:
            self._replayer.feed_messages(messages, of_class)
        except Exception as exc:  # a replay bug must not leave a half-read load to finish
            raise LoadFailed(self._replayer.failure(exc)) from exc

    def end(self, end_offset: int) -> LoadResult | LoadFailed:
        """The reader is at the end of the partition (offsets below ``end_offset`` that were never
        delivered were removed by compaction): what the load found, and the claim to append."""
        try:
            return self._end(end_offset)
        except LoadFailed as exc:
            return exc

    def _end(self, end_offset: int) -> LoadResult:
        read_seconds = time.perf_counter() - self.started
        replayer = self._replayer
        try:
            replayer.end_read()
        except Exception as exc:
            raise LoadFailed(replayer.failure(exc, finishing=True)) from exc
        # The offsets table has placed the groups (on the reader's thread, the collector
        # held off): frozen now, before a young collection walks them while the claim is
        # appended (see ``collector``; the survivors are frozen in ``tailing``).
        SHARED.freeze_now()
        next_offset = max(replayer.next_offset, end_offset)
        replayer.next_offset = next_offset
        epoch = replayer.max_epoch + 1
        claim: list[CoordinatorRecord] = []
        open_batch = replayer.open_batch()
        if open_batch is not None:
            first, last = open_batch
            log.warning("shard %d: aborting batch cut short at offsets %d-%d", self.partition, first, last)
            claim.append(
                CoordinatorRecord(RecordType.BATCH_ABORT, BatchAbortKey(first), BatchAbortValue(first, last, epoch))
            )
        # Compaction would keep aborted and fenced records as the latest of their keys:
        # re-state the valid values (see ``LogReplayer.restores``).
        restores = replayer.restores()
        replayer.stop_tracking()
        claim.extend(restores)
        claim.append(
            CoordinatorRecord(
                RecordType.SHARD_EPOCH,
                ShardEpochKey(epoch),
                ShardEpochValue(epoch, self.owner_id, self.clock.now_ms()),
            )
        )
        # The earlier owners' ShardEpoch records: without tombstones each load would leave one
        # that compaction keeps forever. Ours follows them, and fencing takes the highest epoch
        # read so far; what they fenced is superseded by restores (this load's or an earlier one's).
        claim.extend(
            CoordinatorRecord(RecordType.SHARD_EPOCH, ShardEpochKey(old), None)
            for old in sorted(replayer.epoch_keys)
            if old < epoch
        )
        self._restores = restores
        first_record = self.first_record_at - self.started if self.first_record_at else read_seconds
        return LoadResult(next_offset, epoch, claim, restores, replayer.read, read_seconds, first_record)

    def tailing(self) -> LogReplayer:
        """After ``end`` (and the claim appended): decode the survivors into both states, then
        hand over the replayer in tailing mode, replaying into the committed state only (the
        live state gets the shard's own writes as it makes them, the restores included)."""
        replayer = self._replayer
        try:
            # The load decoded nothing but the log's own records; replay the survivors now.
            with collector_paused():
                replayer.replay_survivors()
            release_freed_heap()
            # What the load built is long-lived, and all of it is in the youngest generation
            # now: frozen at once, no collection walks it (see ``collector``).
            SHARED.freeze_now()
        except Exception as exc:
            raise LoadFailed(replayer.failure(exc, finishing=True)) from exc
        replayer.targets = [self._committed]
        for record in self._restores:
            self._live.replay(record)
        return replayer
