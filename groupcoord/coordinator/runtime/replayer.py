"""Replays the coordinator log into shard state: the one replay path for loading and for tailing.

Besides decoding, it enforces the runtime's log rules (see ``headers``):
- records of an atomic batch are applied together when the batch's last record is read, or when
  a later record shows that the rest was compacted away. A batch's records get consecutive
  offsets (one writer per shard), so a later record at an offset inside the batch's range means
  the batch was cut short (its writer failed or crashed): it is discarded, never half-applied.
  The one other writer, a fenced owner still writing, can put records among a batch's: those
  are not counted, the batch's range reaches past them;
- a ``BatchAbort`` record, written by a new owner that found a batch cut short at the end of the
  log, discards the buffered records at or after the offset it names;
- records written under a shard epoch older than one already seen come from a fenced owner
  (a zombie) and are ignored;
- a ``LogSkip`` record, written by an operator (``groupcoord log skip``), names the offset of an
  unreadable record that the load may pass over. It is necessarily written *after* the bad
  record, so a deferred load does not fail at an unreadable record: it notes the offset, reads on,
  and fails in ``finish`` only for unreadable offsets that no ``LogSkip`` named. A skipped record
  counts as absent (its key keeps no value from it). Tailing still fails at once on an unreadable
  record that no decision already covers; the shard's next load then applies the decision.

Loading (``deferred=True``) decodes only the last effective record of each key. Keys are
deterministic bytes, so "the last record applied per key bytes, in the order of those last
records" is exactly what compaction would leave of the log, and the state machines must already
rebuild the same state from a compacted log. The rules above only need the headers and the
runtime's own records, so every other record is kept as raw bytes until ``finish`` and most of
a commit-heavy log is never decoded at all. Most records need not even be looked at one by one:
``feed_messages`` stores runs of plain state records by key in bulk (see there). After ``finish``
the replayer applies each record as it arrives (tailing).

Compaction keeps only the latest record per key, so a discarded or ignored record would, once
compacted, shadow the earlier valid record of its key for every later load. A load therefore
also notes which keys' latest record was not applied; ``restores()`` gives the records a new
owner re-appends so that the valid values are the latest again (a tombstone where the key never
had a valid value).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from groupcoord.coordinator.runtime.api import ShardState, replay_noted
from groupcoord.coordinator.runtime.headers import batch_headers, make_headers, parse_headers
from groupcoord.records import CoordinatorRecord, RecordCodec, RecordDecodeError, RecordType
from groupcoord.records.codec import DEFAULT_CODEC, record_type_of
from groupcoord.records.definitions import ShardEpochKey
from groupcoord.records.offset_commit_decoding import KEY_PREFIX as _COMMIT_PREFIX
from groupcoord.records.offset_commit_decoding import OffsetCommitRuns, OffsetsTable
from groupcoord.records.offset_commit_run import OffsetCommitRun

# The runtime's own records drive the log rules, so they are decoded as soon as they are read.
_RUNTIME_TYPES = frozenset({int(RecordType.SHARD_EPOCH), int(RecordType.BATCH_ABORT), int(RecordType.LOG_SKIP)})

# A record read during a deferred load: (offset, key bytes, value bytes).
_Raw = tuple[int, bytes, bytes | None]

# Bulk loading (``feed_messages``): a key whose two type bytes sort between these names a
# record type below 100, i.e. not one of the runtime's own records (100-102), and is at least
# two bytes long. Keys are compared as bytes, in C, without slicing or decoding any of them.
_LOWEST_STATE_KEY = (1).to_bytes(2, "big")
_FIRST_RUNTIME_KEY = (min(_RUNTIME_TYPES)).to_bytes(2, "big")
# Keys of OffsetCommit records sort from _COMMIT_PREFIX up to this (their type is 1).
_AFTER_COMMIT_KEYS = (int(RecordType.OFFSET_COMMIT) + 1).to_bytes(2, "big")
# Records whose replay depends on where OffsetCommit records stand among them (a plain commit
# overtakes a staged transactional offset): with one of them among the survivors, a load's
# OffsetCommit records are replayed in the survivors' order (see ``replay_survivors``).
_ORDERED_WITH_COMMITS = tuple(
    int(t).to_bytes(2, "big") for t in (RecordType.PENDING_TXN_OFFSETS, RecordType.TXN_PRODUCER)
)
# Runs shorter than this go record by record: below it the checks cost more than they save.
BULK_MIN_RUN = 16
_offset_of = operator.itemgetter(0)
_type_of = operator.attrgetter("type")
# How a bulk run reads its messages' headers, keys, values and offsets.
_Access = tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]
_BY_NAME: _Access = tuple(operator.methodcaller(name) for name in ("headers", "key", "value", "offset"))  # type: ignore[assignment]


def _whole_batches_within(headers: list[Any]) -> tuple[int, int] | None:
    """(start, end) of the whole batches a run holds, from its first record's batch header
    (where the next batch starts) and the batches' size; None for a run that starts outside
    any batch (or with headers that do not read)."""
    try:
        _, batch = parse_headers(headers[0])
    except ValueError:
        return None
    if batch is None:
        return None
    index, count = batch
    start = (count - index) % count
    return start, start + (len(headers) - start) // count * count


def _as_raw(key: bytes, item: _Raw | LogMessage) -> _Raw:
    """A deferred load's latest record of ``key``, as (offset, key, value)."""
    return item if isinstance(item, tuple) else (item.offset() or 0, key, item.value())


class LogMessage(Protocol):
    """What the replayer reads of a consumed record (``confluent_kafka.Message``, or the
    simulated log's messages)."""

    def offset(self) -> int | None: ...

    def key(self) -> bytes | None: ...

    def value(self) -> bytes | None: ...

    def headers(self) -> Any: ...


class LogReadError(RuntimeError):
    """A record in the log could not be read; names where it is."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str) -> None:
        super().__init__(
            f"unreadable record in topic {topic!r} partition {partition} offset {offset}: {reason}"
            f" (to load the shard without it: groupcoord log skip --topic {topic} --partition {partition}"
            f" --offset {offset})"
        )
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
        self.skipped = 0  # records of a fenced epoch or of a batch cut short
        self.skip_decisions: dict[int, str] = {}  # offset -> reason, from LogSkip records
        # Keys (epochs) of the ShardEpoch records still live in the log: the next owner tombstones them.
        self.epoch_keys: set[int] = set()
        self.unreadable_skipped = 0  # unreadable records passed over by a skip decision
        self._unreadable: dict[int, str] = {}  # deferred load: unreadable offset -> why, awaiting a decision
        self._buffer: list[tuple[int, CoordinatorRecord | _Raw]] = []
        self._batch_end = 0  # offset after the open batch's last record, as written
        # Deferred load: key bytes -> last effective record, raw or still the consumed message
        # (bulk loading); ``finish`` orders them by offset. OffsetCommit records, most of a log
        # of many groups, are not kept by key: every one applied goes to ``_commit_keys`` and
        # ``_commit_offsets`` in log order (a run of them in bulk is two list extends), and ``finish``
        # places them into an ``OffsetsTable`` at once, where the later record of a key replaces
        # the earlier as the dict by key would have (without a million-entry dict to build first).
        self._latest: dict[bytes, _Raw | LogMessage] | None = {} if deferred else None
        self._commit_keys: list[bytes] = []
        self._commit_values: list[bytes | None] = []
        self._commit_offsets: list[int] = []
        self.bulk_read = 0  # of ``read``, records taken in bulk by ``feed_messages``
        # Kept from a deferred load until ``stop_tracking``, for ``restores``.
        self._values: dict[bytes, _Raw] = {}
        # Keys whose latest record was not applied, with that record's offset. A valid record
        # read earlier in the log can be applied after it (its batch closes later, around a
        # fenced owner's records written into the batch's offsets): it leaves the key shadowed,
        # as compaction keeps the later record.
        self._shadowed: dict[bytes, int] = {}
        self._survivors: list[_Raw] = []  # between ``end_read`` and ``replay_survivors``
        self._commits: tuple[list[bytes], list[bytes | None], list[int]] = ([], [], [])  # likewise

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
            try:
                epoch, batch = parse_headers(headers)
                # A record handed over decoded (our own write, or rows the pipeline replays by
                # these rules) names its type; otherwise the key's header does.
                record_type = int(decoded.type) if decoded is not None else record_type_of(key)
            except (RecordDecodeError, ValueError) as exc:
                raise LogReadError(self.topic, self.partition, offset, str(exc)) from exc
            raw: _Raw = (offset, key if key is not None else b"", value)
            if record_type in _RUNTIME_TYPES:
                runtime_record = decoded if decoded is not None else self._decode(raw)
        except LogReadError as exc:
            self._pass_unreadable(offset, exc)
            self.next_offset = offset + 1
            self.read += 1
            return
        self.next_offset = offset + 1
        self.read += 1
        if record_type == RecordType.LOG_SKIP:
            # An operator's decision counts whatever epoch wrote it: it is not the state of a group.
            if runtime_record.value is not None:
                self.skip_decisions[runtime_record.value.offset] = runtime_record.value.reason
                if self._unreadable.pop(runtime_record.value.offset, None) is not None:
                    self.unreadable_skipped += 1
            return
        if record_type == RecordType.SHARD_EPOCH:
            if isinstance(runtime_record.key, ShardEpochKey):
                if runtime_record.value is None:
                    self.epoch_keys.discard(runtime_record.key.epoch)
                else:
                    self.epoch_keys.add(runtime_record.key.epoch)
            if runtime_record.value is not None and runtime_record.value.epoch >= self.max_epoch:
                self._close_batch(offset)
                self.max_epoch = runtime_record.value.epoch
            return
        if epoch < self.max_epoch:
            # A fenced owner's record: ignored whatever its bytes, so it is not even decoded.
            self._discard([(offset, raw)])
            if self._buffer and offset < self._batch_end:
                # Written among the open batch's records (a paused owner's producer and the new
                # owner's on one partition): it takes none of the batch's offsets, so the batch
                # ends one offset later. Otherwise a record of the batch read after it would
                # look like a new batch, and the batch's own first records like a batch whose
                # rest was compacted away: applied alone, if the rest never came.
                self._batch_end += 1
            return
        self.max_epoch = epoch
        if record_type == RecordType.BATCH_ABORT:
            if runtime_record.value is not None:
                cut = runtime_record.value.first_offset
                self._discard([entry for entry in self._buffer if entry[0] >= cut])
                self._buffer = [entry for entry in self._buffer if entry[0] < cut]
                self._close_batch(offset)
            return
        item: CoordinatorRecord | _Raw = raw
        if self._latest is None or key is None:  # tailing: apply records as they come
            item = decoded if decoded is not None else self._decode(raw)
        self._place(offset, item, batch)

    def feed_own(
        self, offset: int, record: CoordinatorRecord, epoch: int, batch: tuple[int, int] | None, note: Any = None
    ) -> bool:
        """Consume, while tailing, a record the shard wrote itself and read back unchanged, whose
        headers it made (``epoch``, ``batch``): what ``feed`` does with it, without reading its
        headers and type again (a 100-partition commit reads back 100 of them). False, and
        nothing done, where ``feed`` has more to decide (a load, the runtime's own records, an
        epoch other than the newest): the caller feeds the record as read. ``note``: what its
        replay into the live state noted (``api.replay_noting``), used outside a batch."""
        if self._latest is not None or epoch != self.max_epoch or offset < self.next_offset:
            return False
        if record.type in _RUNTIME_TYPES:
            return False
        self.next_offset = offset + 1
        self.read += 1
        if note is not None and batch is None:
            self._close_batch(offset)
            for target in self.targets:
                replay_noted(target, (record,), (note,))
            self.applied += 1
            return True
        self._place(offset, record, batch)
        return True

    def feed_own_batch(
        self,
        offset: int,
        records: Sequence[CoordinatorRecord],
        epoch: int,
        count: int,
        first_index: int,
        notes: Any = None,
    ) -> bool:
        """Consume, while tailing, a whole atomic batch the shard wrote itself (``count`` records
        from index 0, at consecutive offsets from ``offset``) and read back unchanged: what
        ``feed_own`` does with each of them, applied at once since nothing is open before it
        and the batch ends with its last record (with the ``notes`` of their replay into the
        live state, ``api.replay_noted``). False, and nothing done, where ``feed_own`` must
        decide record by record."""
        if (
            self._latest is not None
            or epoch != self.max_epoch
            or offset < self.next_offset
            or first_index != 0
            or count != len(records)
            or self._buffer
        ):
            return False
        # A run (a plain commit's records as columns) holds OffsetCommit records alone.
        if type(records) is not OffsetCommitRun and not _RUNTIME_TYPES.isdisjoint(map(_type_of, records)):
            return False
        # What ``_place`` leaves after the batch's last record: nothing buffered, the batch closed.
        self._batch_end = offset + count
        self.next_offset = offset + count
        self.read += count
        # Each target in turn: they are separate states, so this is each record into every target.
        for target in self.targets:
            replay_noted(target, records, notes)
        self.applied += count
        return True

    def _place(self, offset: int, item: CoordinatorRecord | _Raw, batch: tuple[int, int] | None) -> None:
        """Apply a state record at once, or buffer it with its atomic batch until the batch ends."""
        if batch is None:
            self._close_batch(offset)
            self._apply(item)
            return
        index, count = batch
        if index == 0 or not self._buffer or offset >= self._batch_end:
            self._close_batch(offset)
            self._batch_end = offset - index + count
        self._buffer.append((offset, item))
        if index == count - 1:
            self._close_batch(offset + 1)

    def feed_messages(self, messages: Sequence[LogMessage], of_class: type[LogMessage] | None = None) -> None:
        """Consume records as the reader delivers them, in log order (records before
        ``next_offset`` were read already and are passed over).

        During a deferred load, a run of records that are plainly state (written under the
        current epoch, outside any batch, none of them the runtime's own) is taken in bulk: the
        run's headers and keys are checked and its records stored by key with list and dict
        operations that run in C, which is the outcome ``feed`` gives each of them at a fraction
        of the per-record cost. A run that fails the check is halved until the rest is short
        enough to go record by record. ``of_class``: the class every one of ``messages`` is
        of, where the reader knows it (checked here otherwise)."""
        if self._latest is None or len(messages) < BULK_MIN_RUN:
            self._feed_each(messages)
            return
        access = _BY_NAME
        if of_class is None:
            kind = type(messages[0])
            if list(map(type, messages)).count(kind) == len(messages):
                of_class = kind
        if of_class is not None:
            # One reader's records, all of one class: its own methods, called through map(),
            # cost half of what methodcaller's lookup by name does per record (15 ms of a
            # load of 100k records for the headers alone, measured with confluent-kafka's
            # messages; the class check itself cost 0.16 us a record where the reader knows it).
            access = (of_class.headers, of_class.key, of_class.value, of_class.offset)
        self._feed_range(messages, list(map(access[0], messages)), list(map(access[1], messages)), access)

    def _feed_range(
        self, messages: Sequence[LogMessage], headers: list[Any], keys: list[bytes | None], access: _Access
    ) -> None:
        if len(messages) >= BULK_MIN_RUN and not self._buffer and self._take_run(messages, headers, keys, access):
            return
        # A delivery of atomic batches rarely starts and ends on a batch's edges: its partial
        # batches at either end go record by record, and the whole ones between in bulk.
        aligned = _whole_batches_within(headers) if len(messages) >= BULK_MIN_RUN else None
        if aligned is not None and aligned != (0, len(messages)) and aligned[1] - aligned[0] >= BULK_MIN_RUN:
            start, end = aligned
            self._feed_each(messages[:start])
            self._feed_range(messages[start:end], headers[start:end], keys[start:end], access)
            self._feed_each(messages[end:])
            return
        if len(messages) < 2 * BULK_MIN_RUN:
            self._feed_each(messages)
            return
        mid = len(messages) // 2
        self._feed_range(messages[:mid], headers[:mid], keys[:mid], access)
        self._feed_range(messages[mid:], headers[mid:], keys[mid:], access)

    def _take_run(
        self, messages: Sequence[LogMessage], headers: list[Any], keys: list[bytes | None], access: _Access
    ) -> bool:
        """Store the run by key if every record in it would go straight to ``_latest``."""
        first, last = messages[0].offset(), messages[-1].offset()
        if first is None or last is None or first < self.next_offset or self._latest is None:
            return False
        # The headers ``make_headers`` gives a record outside a batch, at the current epoch, or
        # whole atomic batches of it (each then applied as it ends, in order).
        if headers.count(make_headers(self.max_epoch, 0, 1)) != len(headers) and not self._whole_batches(
            headers, last - first
        ):
            return False
        try:
            lowest, highest = min(keys), max(keys)  # type: ignore[type-var]
        except TypeError:  # a record without a key
            return False
        if lowest < _LOWEST_STATE_KEY or highest >= _FIRST_RUNTIME_KEY:  # type: ignore[operator]
            return False
        if highest < _AFTER_COMMIT_KEYS:  # type: ignore[operator]
            self._commit_keys.extend(keys)  # type: ignore[arg-type]
            # Their keys, values and offsets, not the messages: those are freed as they are read
            # (freeing a million at the end took a second, their memory long out of cache).
            self._commit_values.extend(map(access[2], messages))
            self._commit_offsets.extend(map(access[3], messages))
        elif lowest >= _AFTER_COMMIT_KEYS:  # type: ignore[operator]
            self._latest.update(zip(keys, messages, strict=True))  # type: ignore[arg-type]
        else:
            for key, message in zip(keys, messages, strict=True):
                self._keep(key, message)  # type: ignore[arg-type]
        if self._shadowed:
            for key in keys:  # read in log order: later than anything shadowed so far
                self._shadowed.pop(key, None)  # type: ignore[arg-type]
        self.read += len(messages)
        self.bulk_read += len(messages)
        self.next_offset = last + 1
        return True

    def _whole_batches(self, headers: list[Any], span: int) -> bool:
        """Whether the run's records (``span``: its last offset minus its first), read with no
        batch open, are each applied when read: atomic batches of one size at the current epoch,
        whole and at consecutive offsets; or records each the last of its batch, which closes
        at once (no batch being open before it, none is cut short)."""
        try:
            epoch, batch = parse_headers(headers[0])
        except ValueError:
            return False
        if batch is None or epoch != self.max_epoch:
            return False
        index, count = batch
        if index == count - 1:
            return headers.count(headers[0]) == len(headers)
        if index != 0 or len(headers) % count or span != len(headers) - 1:
            return False
        return bool(headers == batch_headers(epoch, count) * (len(headers) // count))

    def _feed_each(self, messages: Sequence[LogMessage]) -> None:
        for msg in messages:
            offset = msg.offset()
            if offset is not None and offset >= self.next_offset:
                self.feed(offset, msg.key(), msg.value(), msg.headers())

    def failure(self, exc: Exception, finishing: bool = False) -> str:
        """Why the shard fails after feeding (wherever the records were fed) or finishing
        (``finishing``) raised ``exc``: an unreadable record names its offset."""
        if isinstance(exc, LogReadError):
            return str(exc)
        if finishing:
            return f"replay failed while finishing the load: {exc!r}"
        return f"replay failed at offset {self.next_offset - 1}: {exc!r}"

    def open_batch(self) -> tuple[int, int] | None:
        """(first, last) offsets of a batch still waiting for its end, if any."""
        if not self._buffer:
            return None
        return self._buffer[0][0], self._buffer[-1][0]

    def finish(self) -> None:
        """End a deferred load: decode and replay the last effective record of every key, in
        log order; from now on records are applied as they are fed. (Records of a batch still
        open stay buffered raw: they are decoded only if the batch completes.)"""
        self.end_read()
        self.replay_survivors()

    def end_read(self) -> None:
        """First half of ``finish``: the log is read; fail on an unreadable record no decision
        covers, and set the survivors aside. Everything ``restores``, ``open_batch`` and
        ``max_epoch`` say is known from here on, before any survivor is decoded."""
        if self._unreadable:
            offset = min(self._unreadable)
            raise LogReadError(self.topic, self.partition, offset, self._unreadable[offset])
        latest, self._latest = self._latest, None
        latest = latest or {}
        commit_keys, commit_values, commit_offsets = self._commit_keys, self._commit_values, self._commit_offsets
        self._commits = (commit_keys, commit_values, commit_offsets)
        self._commit_keys, self._commit_values, self._commit_offsets = [], [], []
        survivors = [
            item if isinstance(item, tuple) else (item.offset() or 0, key, item.value()) for key, item in latest.items()
        ]
        # In the order of those last records: what compaction would leave of the log.
        survivors.sort(key=_offset_of)
        self._survivors = survivors
        # What ``restores`` may ask for: the keys whose latest record was not applied.
        wanted = self._shadowed.keys() | {item[1] for _, item in self._buffer if isinstance(item, tuple)}
        if any(key.startswith(_COMMIT_PREFIX) for key in wanted):  # rare: a zombie's or an aborted commit
            latest = {**latest, **{raw[1]: raw for raw in zip(commit_offsets, commit_keys, commit_values, strict=True)}}
        self._values = {key: _as_raw(key, latest[key]) for key in wanted if key in latest}

    def replay_survivors(self) -> None:
        """Second half of ``finish``: decode and replay the survivors ``end_read`` set aside."""
        survivors, self._survivors = self._survivors, []
        (commit_keys, commit_values, commit_offsets), self._commits = self._commits, ([], [], [])
        if commit_keys:
            table = self._offsets_table(survivors, commit_keys, commit_values, commit_offsets)
            if table is None:
                # The survivors' way: the last record of each key, in their order.
                last = {raw[1]: raw for raw in zip(commit_offsets, commit_keys, commit_values, strict=True)}
                survivors.extend(last.values())
            else:
                for target in self.targets:
                    target.replay_offsets_table(table)  # type: ignore[attr-defined]
                self.applied += table.records()
                survivors.extend(table.irregular.values())
            del commit_keys, commit_values, commit_offsets
            survivors.sort(key=_offset_of)
        # Runs of OffsetCommit records (most of a log of many groups) go to the states with their
        # values left encoded, where every target takes them so; any other record, and any
        # OffsetCommit record those runs do not take, is decoded and applied here, in order.
        replays = [getattr(target, "replay_encoded_offsets", None) for target in self.targets]
        runs = OffsetCommitRuns() if None not in replays else None
        at, end = 0, len(survivors)
        while at < end:
            if runs is not None:
                taken, stop = runs.read(survivors, at)
                if taken:
                    for replay in replays:
                        replay(taken)  # type: ignore[misc]
                    self.applied += stop - at
                at = stop
                if at == end:
                    break
            raw = survivors[at]
            at += 1
            try:
                self._apply(raw)
            except LogReadError as exc:
                self._pass_unreadable(raw[0], exc)

    def _offsets_table(
        self, survivors: list[_Raw], keys: list[bytes], values: list[bytes | None], offsets: list[int]
    ) -> OffsetsTable | None:
        """The load's OffsetCommit records placed in an ``OffsetsTable``, to be replayed before
        the other survivors (their replay touches no offset, and the table's irregular records,
        each the last of its key, after it); None where that order would matter (a
        transactional record survives) or where the targets or the table cannot take them."""
        if not all(hasattr(target, "replay_offsets_table") for target in self.targets):
            return None
        if any(key.startswith(_ORDERED_WITH_COMMITS) for _, key, _ in survivors):
            return None
        table = OffsetsTable()
        table.add(keys, values, offsets)
        return None if table.declined else table

    def _pass_unreadable(self, offset: int, exc: LogReadError) -> None:
        """Go past an unreadable record if a decision covers it (or, loading, may still come)."""
        if offset in self.skip_decisions:
            self.unreadable_skipped += 1
        elif self._latest is not None:
            self._unreadable[offset] = str(exc.__cause__ or exc)
        else:
            raise exc

    def restores(self) -> list[CoordinatorRecord]:
        """After a deferred load: for every key whose latest record in the log was not applied
        (the open batch, which the caller aborts, included), its last applied record, or a
        tombstone if it never had one. Keys that cannot be decoded are left alone (such a record
        is only ever ignored)."""
        keys = set(self._shadowed)
        keys.update(item[1] for _, item in self._buffer if isinstance(item, tuple))
        out: list[CoordinatorRecord] = []
        for key in sorted(keys):
            try:
                valid = self._values.get(key)
                out.append(self.codec.decode(key, None if valid is None else valid[2]))
            except RecordDecodeError:
                continue
        return out

    def stop_tracking(self) -> None:
        self._values = {}
        self._shadowed = {}

    def _decode(self, raw: _Raw) -> CoordinatorRecord:
        offset, key, value = raw
        try:
            return self.codec.decode(key, value)
        except RecordDecodeError as exc:
            raise LogReadError(self.topic, self.partition, offset, str(exc)) from exc

    def _close_batch(self, offset: int) -> None:
        """A record at ``offset`` that does not continue the open batch: if it sits inside the
        batch's offsets the batch was cut short, otherwise its rest was compacted away."""
        buffered, self._buffer = self._buffer, []
        if offset < self._batch_end:
            self._discard(buffered)
            return
        for _, item in buffered:
            self._apply(item)

    def _discard(self, entries: list[tuple[int, CoordinatorRecord | _Raw]]) -> None:
        self.skipped += len(entries)
        if self._latest is not None:  # loading: remember what compaction could let shadow
            shadowed = self._shadowed
            for offset, item in entries:
                if isinstance(item, tuple) and shadowed.get(item[1], -1) < offset:
                    shadowed[item[1]] = offset

    def _keep(self, key: bytes, item: _Raw | LogMessage) -> None:
        """A deferred load's applied record: the latest of its key (``finish`` orders the survivors
        by offset), or the next of the load's OffsetCommit records."""
        if key.startswith(_COMMIT_PREFIX):
            self._commit_keys.append(key)
            if isinstance(item, tuple):
                self._commit_values.append(item[2])
                self._commit_offsets.append(item[0])
            else:
                self._commit_values.append(item.value())
                self._commit_offsets.append(item.offset() or 0)
        else:
            self._latest[key] = item  # type: ignore[index]
        shadow = self._shadowed.get(key) if self._shadowed else None
        if shadow is not None and shadow < (item[0] if isinstance(item, tuple) else (item.offset() or 0)):
            del self._shadowed[key]

    def _apply(self, item: CoordinatorRecord | _Raw) -> None:
        if isinstance(item, tuple):
            if self._latest is not None:
                self._keep(item[1], item)
                return
            item = self._decode(item)
        for target in self.targets:
            target.replay(item)
        self.applied += 1
