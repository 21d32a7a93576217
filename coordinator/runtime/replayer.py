"""Replays the coordinator log into shard state: the one replay path for loading and for tailing.

Besides decoding, it enforces the runtime's log rules (see ``headers``):
- records of an atomic batch are applied together when the batch's last record is read, or when
  a later record shows that the rest was compacted away. A batch's records get consecutive
  offsets (one writer per shard), so a later record at an offset inside the batch's range means
  the batch was cut short (its writer failed or crashed): it is discarded, never half-applied;
- a ``BatchAbort`` record, written by a new owner that found a batch cut short at the end of the
  log, discards the buffered records at or after the offset it names;
- records written under a shard epoch older than one already seen come from a fenced owner
  (a zombie) and are ignored.

Compaction keeps only the latest record per key, so a discarded or ignored record would, once
compacted, shadow the earlier valid record of its key for every later load. While loading, the
replayer therefore remembers the last applied value per key (``track_keys``) and which keys'
latest record was not applied; ``restores()`` gives the records a new owner re-appends to make
the valid values the latest again (a tombstone where the key never had a valid value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordinator.runtime.api import ShardState
from coordinator.runtime.headers import parse_headers
from records import CoordinatorRecord, RecordCodec, RecordDecodeError, RecordType
from records.codec import DEFAULT_CODEC

# A record read from the log: (offset, decoded, key bytes, value bytes)
_Read = tuple[int, CoordinatorRecord, bytes | None, bytes | None]


class LogReadError(RuntimeError):
    """A record in the log could not be read; names where it is."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(f"unreadable record in topic {topic!r} partition {partition} offset {offset}: {reason}")
        self.topic = topic
        self.partition = partition
        self.offset = offset


class LogReplayer:
    def __init__(
        self,
        topic: str,
        partition: int,
        targets: Sequence[ShardState],
        codec: RecordCodec = DEFAULT_CODEC,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.targets = list(targets)
        self.codec = codec
        self.max_epoch = 0
        self.next_offset = 0
        self.applied = 0
        self.skipped = 0  # records of fenced owners and of batches cut short
        self._buffer: list[_Read] = []
        self._batch_end = 0  # offset after the open batch's last record, as written
        self.track_keys = True
        self._values: dict[bytes, bytes | None] = {}  # key -> last applied value
        self._shadowed: set[bytes] = set()  # keys whose latest record was not applied

    def feed(
        self,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        headers: Any,
        decoded: CoordinatorRecord | None = None,
    ) -> None:
        """Consume the record at ``offset``; ``decoded`` skips decoding a record we wrote ourselves."""
        try:
            epoch, batch = parse_headers(headers)
            record = decoded if decoded is not None else self.codec.decode(key, value)
        except (RecordDecodeError, ValueError) as exc:
            raise LogReadError(self.topic, self.partition, offset, str(exc)) from exc
        self.next_offset = offset + 1
        if record.type == RecordType.SHARD_EPOCH:
            if record.value is not None and record.value.epoch >= self.max_epoch:
                self._close_batch(offset)
                self.max_epoch = record.value.epoch
            return
        if epoch < self.max_epoch:
            self._discard([(offset, record, key, value)])
            return
        self.max_epoch = epoch
        if record.type == RecordType.BATCH_ABORT:
            if record.value is not None:
                cut = record.value.first_offset
                self._discard([r for r in self._buffer if r[0] >= cut])
                self._buffer = [r for r in self._buffer if r[0] < cut]
                self._close_batch(offset)
            return
        if batch is None:
            self._close_batch(offset)
            self._apply(offset, record, key, value)
            return
        index, count = batch
        if index == 0 or not self._buffer or offset >= self._batch_end:
            self._close_batch(offset)
            self._batch_end = offset - index + count
        self._buffer.append((offset, record, key, value))
        if index == count - 1:
            self._close_batch(offset + 1)

    def open_batch(self) -> tuple[int, int] | None:
        """(first, last) offsets of a batch still waiting for its end, if any."""
        if not self._buffer:
            return None
        return self._buffer[0][0], self._buffer[-1][0]

    def restores(self) -> list[CoordinatorRecord]:
        """Records that make each key's latest record in the log a valid one again (see above);
        the open batch, which the caller aborts, counts as not applied."""
        keys = self._shadowed | {r[2] for r in self._buffer if r[2] is not None}
        return [self.codec.decode(key, self._values.get(key)) for key in sorted(keys)]

    def stop_tracking(self) -> None:
        self.track_keys = False
        self._values = {}
        self._shadowed = set()

    def _close_batch(self, offset: int) -> None:
        """A record at ``offset`` that does not continue the open batch: if it sits inside the
        batch's offsets the batch was cut short, otherwise its rest was compacted away."""
        buffered, self._buffer = self._buffer, []
        if offset < self._batch_end:
            self._discard(buffered)
            return
        for r in buffered:
            self._apply(*r)

    def _discard(self, reads: list[_Read]) -> None:
        self.skipped += len(reads)
        if self.track_keys:
            self._shadowed.update(r[2] for r in reads if r[2] is not None)

    def _apply(self, offset: int, record: CoordinatorRecord, key: bytes | None, value: bytes | None) -> None:
        for target in self.targets:
            target.replay(record)
        self.applied += 1
        if self.track_keys and key is not None:
            self._values[key] = value
            self._shadowed.discard(key)
