"""Replays the coordinator log into shard state: the one replay path for loading and for tailing.

Besides decoding, it enforces the runtime's log rules (see ``headers``):
- records of an atomic batch are applied together when the batch's last record is read, or when
  a later record shows that the rest was compacted away;
- a ``BatchAbort`` record, written by a new owner that found a batch cut short at the end of the
  log, discards the buffered records at or after the offset it names;
- records written under a shard epoch older than one already seen come from a fenced owner
  (a zombie) and are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordinator.runtime.api import ShardState
from coordinator.runtime.headers import parse_headers
from records import CoordinatorRecord, RecordCodec, RecordDecodeError, RecordType
from records.codec import DEFAULT_CODEC


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
        self.skipped = 0
        self._buffer: list[tuple[int, CoordinatorRecord]] = []

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
                self._flush()
                self.max_epoch = record.value.epoch
            return
        if epoch < self.max_epoch:
            self.skipped += 1
            return
        self.max_epoch = epoch
        if record.type == RecordType.BATCH_ABORT:
            if record.value is not None:
                cut = record.value.first_offset
                self._buffer = [(o, r) for o, r in self._buffer if o < cut]
                self._flush()
            return
        if batch is None:
            self._flush()
            self._apply(record)
            return
        index, count = batch
        if index == 0:
            self._flush()
        self._buffer.append((offset, record))
        if index == count - 1:
            self._flush()

    def open_batch(self) -> tuple[int, int] | None:
        """(first, last) offsets of a batch still waiting for its end, if any."""
        if not self._buffer:
            return None
        return self._buffer[0][0], self._buffer[-1][0]

    def _flush(self) -> None:
        buffered, self._buffer = self._buffer, []
        for _, record in buffered:
            self._apply(record)

    def _apply(self, record: CoordinatorRecord) -> None:
        for target in self.targets:
            target.replay(record)
        self.applied += 1
