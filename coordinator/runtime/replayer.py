"""Replays the coordinator log into shard state: the one replay path for loading and for tailing.

Besides decoding, it enforces the runtime's log rules (see ``headers``):
- records of an atomic batch are applied together when the batch's last record is read, or when
  a later record shows that the rest was compacted away;
- a ``BatchAbort`` record, written by a new owner that found a batch cut short at the end of the
  log, discards the buffered records at or after the offset it names;
- records written under a shard epoch older than one already seen come from a fenced owner
  (a zombie) and are ignored.

Loading (``deferred=True``) decodes only the last effective record of each key. Keys are
deterministic bytes, so "the last record applied per key bytes, in the order of those last
records" is exactly what compaction would leave of the log, and the state machines must already
rebuild the same state from a compacted log. The rules above only need the headers and the
runtime's own records, so every other record is kept as raw bytes until ``finish`` and most of
a commit-heavy log is never decoded at all. After ``finish`` the replayer applies each record as
it arrives (tailing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordinator.runtime.api import ShardState
from coordinator.runtime.headers import parse_headers
from records import CoordinatorRecord, RecordCodec, RecordDecodeError, RecordType
from records.codec import DEFAULT_CODEC, record_type_of

# The runtime's own records drive the log rules, so they are decoded as soon as they are read.
_RUNTIME_TYPES = frozenset({int(RecordType.SHARD_EPOCH), int(RecordType.BATCH_ABORT)})

# A record read during a deferred load: (offset, key bytes, value bytes).
_Raw = tuple[int, bytes, bytes | None]


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
        deferred: bool = False,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.targets = list(targets)
        self.codec = codec
        self.max_epoch = 0
        self.next_offset = 0
        self.read = 0  # records consumed, whatever became of them
        self.applied = 0  # records replayed into the targets
        self.skipped = 0  # records of a fenced epoch
        self._buffer: list[tuple[int, CoordinatorRecord | _Raw]] = []
        # Deferred load: key bytes -> last effective raw record, kept in the order of those records.
        self._latest: dict[bytes, _Raw] | None = {} if deferred else None

    @property
    def deferred(self) -> bool:
        return self._latest is not None

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
            record_type = record_type_of(key)
        except (RecordDecodeError, ValueError) as exc:
            raise LogReadError(self.topic, self.partition, offset, str(exc)) from exc
        assert key is not None  # record_type_of checked it
        raw: _Raw = (offset, key, value)
        if record_type in _RUNTIME_TYPES:
            runtime_record = decoded if decoded is not None else self._decode(raw)
        self.next_offset = offset + 1
        self.read += 1
        if record_type == RecordType.SHARD_EPOCH:
            if runtime_record.value is not None and runtime_record.value.epoch >= self.max_epoch:
                self._flush()
                self.max_epoch = runtime_record.value.epoch
            return
        if epoch < self.max_epoch:
            # A fenced owner's record: ignored whatever its bytes, so it is not even decoded.
            self.skipped += 1
            return
        self.max_epoch = epoch
        if record_type == RecordType.BATCH_ABORT:
            if runtime_record.value is not None:
                cut = runtime_record.value.first_offset
                self._buffer = [(o, r) for o, r in self._buffer if o < cut]
                self._flush()
            return
        item: CoordinatorRecord | _Raw = raw
        if self._latest is None:  # tailing: apply records as they come
            item = decoded if decoded is not None else self._decode(raw)
        if batch is None:
            self._flush()
            self._apply(item)
            return
        index, count = batch
        if index == 0:
            self._flush()
        self._buffer.append((offset, item))
        if index == count - 1:
            self._flush()

    def open_batch(self) -> tuple[int, int] | None:
        """(first, last) offsets of a batch still waiting for its end, if any."""
        if not self._buffer:
            return None
        return self._buffer[0][0], self._buffer[-1][0]

    def finish(self) -> None:
        """End a deferred load: decode and replay the last effective record of every key, in
        log order; from now on records are applied as they are fed. (Records of a batch still
        open stay buffered raw: they are decoded only if the batch completes.)"""
        latest, self._latest = self._latest, None
        for raw in (latest or {}).values():
            self._apply(raw)

    def _decode(self, raw: _Raw) -> CoordinatorRecord:
        offset, key, value = raw
        try:
            return self.codec.decode(key, value)
        except RecordDecodeError as exc:
            raise LogReadError(self.topic, self.partition, offset, str(exc)) from exc

    def _flush(self) -> None:
        buffered, self._buffer = self._buffer, []
        for _, item in buffered:
            self._apply(item)

    def _apply(self, item: CoordinatorRecord | _Raw) -> None:
        if isinstance(item, tuple):
            latest = self._latest
            if latest is not None:
                key = item[1]
                # Re-inserting moves the key to the end: iteration order is that of the last records.
                latest.pop(key, None)
                latest[key] = item
                return
            item = self._decode(item)
        for target in self.targets:
            target.replay(item)
        self.applied += 1
