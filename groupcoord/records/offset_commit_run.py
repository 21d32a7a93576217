"""A plain commit's OffsetCommit records held as columns, not as a record object per offset.

A commit of N partitions is N OffsetCommit records. Made as ``CoordinatorRecord`` objects (three
objects per offset), encoded one by one and replayed into the shard's live and committed states
one by one, they were most of the serve-side CPU of a 100-partition commit (profiled: making
the objects 12%, encoding 13%, the two replays 12% of the loop thread). A plain commit (no
metadata, no producer id: what consumers send) is instead an ``OffsetCommitRun``: per topic,
its partitions, offsets and leader epochs as lists, taken from the request by C-level maps.

- The log gets its records' bytes from ``encoded()``: the keys and the values, made from the
  columns by ``OffsetCommitEncoder.encode_columns``, byte for byte what encoding each record
  gives (``tests/unit/test_offset_commit_run.py`` checks it against fastavro).
- The offsets states get ``kept()``: each value's bytes as a load keeps them (without the
  record type; ``groupcoord/records/offset_commit_decoding.py``), placed by
  ``OffsetsState.replay_run`` with one dict update per topic; the live and the committed state
  share them. A reader decodes a kept value when it reads it, as it does after a load, so what
  it sees is the value the record holds. Only values a load would keep are held so: empty
  metadata, a null or 22-character ASCII topic id (``is_plain_topic_id``).
- Anything else sees a ``Sequence[CoordinatorRecord]``: indexing or iterating makes the records
  (once), equal to the ones the handler made before, so every other reader of a handler's
  records (a transaction's overtaking check, the simulations, the tests) is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any, cast, overload

from groupcoord.records.codec import DEFAULT_CODEC, CoordinatorRecord
from groupcoord.records.offset_commit_decoding import PLAIN_VALUE
from groupcoord.records.offset_commit_records import offset_commit_record

# One topic of a run: (name, topic id, partitions, offsets, leader epochs).
RunTopic = tuple[str, str | None, list[int], list[int], list[int]]

_ENCODER = DEFAULT_CODEC.plain_commit_encoder()
# Whether commits may be made as runs: the encoder of their version exists, and so does the
# shape a load keeps values in (the states hold a run's values so).
RUNS_ENABLED = _ENCODER is not None and PLAIN_VALUE is not None
# A value as the offsets state keeps it: without its record type (two bytes).
_KEPT = itemgetter(slice(2, None))


def is_plain_topic_id(topic_id: str | None) -> bool:
    """Whether a value with this topic id (and empty metadata) is one a load keeps encoded."""
    return topic_id is None or (len(topic_id) == 22 and topic_id.isascii())


class OffsetCommitRun(Sequence[CoordinatorRecord]):
    """The plain OffsetCommit records (empty metadata, no producer id) of one commit of
    ``group``, all at ``commit_timestamp`` and expiring at ``expire_timestamp``, in the order of
    ``topics`` and of their partitions. Build only when ``RUNS_ENABLED``, with topic ids that
    ``is_plain_topic_id`` accepts."""

    __slots__ = ("group", "commit_timestamp", "expire_timestamp", "topics", "_count", "_encoded", "_kept", "_records")

    def __init__(self, group: str, commit_timestamp: int, expire_timestamp: int, topics: list[RunTopic]) -> None:
        self.group = group
        self.commit_timestamp = commit_timestamp
        self.expire_timestamp = expire_timestamp
        self.topics = topics
        self._count = sum(len(t[2]) for t in topics)
        self._encoded: tuple[list[bytes], list[bytes]] | None = None
        self._kept: list[bytes] | None = None
        self._records: list[CoordinatorRecord] | None = None

    def encoded(self) -> tuple[list[bytes], list[bytes]]:
        """(keys, values): the records' bytes, in order, made once."""
        if self._encoded is None:
            assert _ENCODER is not None, "runs are made only when RUNS_ENABLED"
            keys: list[bytes] = []
            values: list[bytes] = []
            for name, topic_id, partitions, offsets, epochs in self.topics:
                shared = (self.commit_timestamp, self.expire_timestamp, topic_id)
                _ENCODER.encode_columns(self.group, name, partitions, offsets, epochs, shared, keys, values)
            self._encoded = (keys, values)
        return self._encoded

    def kept(self) -> list[bytes]:
        """The values as the offsets state keeps them (``offset_commit_decoding``), made once."""
        if self._kept is None:
            self._kept = list(map(_KEPT, self.encoded()[1]))
        return self._kept

    def records(self) -> list[CoordinatorRecord]:
        """The records themselves, made once (what the handler made before runs)."""
        if self._records is None:
            group, committed, expires = self.group, self.commit_timestamp, self.expire_timestamp
            self._records = [
                offset_commit_record(group, name, partition, offset, epoch, "", committed, expires, topic_id)
                for name, topic_id, partitions, offsets, epochs in self.topics
                for partition, offset, epoch in zip(partitions, offsets, epochs, strict=True)
            ]
        return self._records

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> CoordinatorRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[CoordinatorRecord]: ...

    def __getitem__(self, index: int | slice) -> CoordinatorRecord | list[CoordinatorRecord]:
        return self.records()[index]

    def __iter__(self) -> Iterator[CoordinatorRecord]:
        return iter(self.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OffsetCommitRun):
            return self.records() == other.records()
        return isinstance(other, Sequence) and not isinstance(other, str | bytes) and self.records() == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, as the list it stands for

    def __repr__(self) -> str:
        return f"OffsetCommitRun({self.records()!r})"


def encode_columns(records: Sequence[CoordinatorRecord]) -> tuple[list[bytes], list[bytes | None]]:
    """(keys, values) of ``records``, in order: a run's own columns (not to be changed), else
    each record encoded."""
    if type(records) is OffsetCommitRun:
        keys, values = records.encoded()
        # The caller only reads them: a list of values none of which is a tombstone.
        return keys, cast(list[bytes | None], values)
    encoded = DEFAULT_CODEC.encode_all(records)
    if not encoded:
        return [], []
    key_column, value_column = zip(*encoded, strict=True)
    return list(key_column), list(value_column)


def run_or_none(records: Any) -> OffsetCommitRun | None:
    """``records`` if it is a run."""
    return records if type(records) is OffsetCommitRun else None
