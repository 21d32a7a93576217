"""OffsetCommit topics whose partitions are held as columns, not as a dataclass per partition.

A 100-partition OffsetCommit through the gateway made 100 request partition objects when decoded
and 100 answer partition objects (twice: the logic's answer, then the gateway's), each walked again
to count the request's elements, to count the answer's error codes and to encode it: about a
third of the event loop's CPU per offset (profiled, ``docs/benchmarks.md``, issue #26). The
gateway's OffsetCommit decoder (``gateway/commit_columns.py``) makes these topics instead; the
places a commit goes through on its usual path read ``columns``; anything else reads
``partitions`` as ever and gets the same objects the generic codec makes, built once on first
access (``columns`` is None from then on, so nobody reads columns that no longer say what the
partitions do).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID


class CommitColumns(NamedTuple):
    """A request topic's partitions: one list per field, in request order (the commit timestamp
    of v1 is not among them: the gateway serves v2 and later)."""

    indexes: list[int]
    offsets: list[int]
    epochs: list[int]
    metadata: list[str | None]


class AnswerColumns(NamedTuple):
    """An answer topic's partitions: their indexes and error codes, in order."""

    indexes: list[int]
    codes: list[int]


def _request_partition(index: int, offset: int, epoch: int, metadata: str | None) -> OffsetCommitRequestPartition:
    return OffsetCommitRequestPartition(
        partition_index=index, committed_offset=offset, committed_leader_epoch=epoch, committed_metadata=metadata
    )


def _answer_partition(index: int, code: int) -> OffsetCommitResponsePartition:
    return OffsetCommitResponsePartition(partition_index=index, error_code=code)


# The slots the generated classes keep their partitions in, written once the columns are made
# into objects.
_REQUEST_SLOT: Any = OffsetCommitRequestTopic.__dict__["partitions"]
_ANSWER_SLOT: Any = OffsetCommitResponseTopic.__dict__["partitions"]

P = TypeVar("P")
C = TypeVar("C", bound=tuple[Any, ...])


class _PartitionsAsColumns(Generic[P, C]):
    """What a request topic and an answer topic holding columns share: a topic of the generated
    class (the second base) whose ``partitions`` are ``columns`` until read or set. Each subclass
    names the generated class's slot, the partition maker and that class (``_SLOT``, ``_MAKE``,
    ``_BASE``)."""

    if not TYPE_CHECKING:
        # No slot of its own (the generated class's slots and one of its own would conflict):
        # each subclass holds ``_columns``. Hidden from mypy, which would refuse the attribute.
        __slots__ = ()
    _SLOT: ClassVar[Any]
    _MAKE: ClassVar[Callable[..., Any]]
    _BASE: ClassVar[type]
    name: str
    topic_id: uuid.UUID
    unknown_tagged_fields: dict[int, bytes]
    _columns: C | None

    def __init__(
        self,
        *,
        name: str = "",
        topic_id: uuid.UUID = ZERO_UUID,
        partitions: list[P] | None = None,
        unknown_tagged_fields: dict[int, bytes] | None = None,
        columns: C | None = None,
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.unknown_tagged_fields = {} if unknown_tagged_fields is None else unknown_tagged_fields
        self._columns = columns
        if columns is None:
            type(self)._SLOT.__set__(self, [] if partitions is None else partitions)

    @property
    def columns(self) -> C | None:
        """The partitions as columns; None once ``partitions`` was read or set."""
        return self._columns

    @property
    def partitions(self) -> list[P]:
        columns = self._columns
        if columns is not None:
            type(self)._SLOT.__set__(self, list(map(self._MAKE, *columns)))
            self._columns = None
        value: list[P] = type(self)._SLOT.__get__(self, type(self))
        return value

    @partitions.setter
    def partitions(self, value: list[P]) -> None:
        self._columns = None
        type(self)._SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        # Equal to the generic codec's topic of the same fields (the dataclass's own comparison
        # would require the very same class).
        if not isinstance(other, self._BASE):
            return NotImplemented
        theirs: Any = other
        return (self.name, self.topic_id, self.partitions, self.unknown_tagged_fields) == (
            theirs.name,
            theirs.topic_id,
            theirs.partitions,
            theirs.unknown_tagged_fields,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, as the generated classes


class OffsetCommitColumnsTopic(  # type: ignore[misc]  # ``partitions``: a field there, made on first access here
    _PartitionsAsColumns[OffsetCommitRequestPartition, CommitColumns], OffsetCommitRequestTopic
):
    """An ``OffsetCommitRequestTopic`` whose partitions are ``columns`` until read."""

    __slots__ = ("_columns",)
    _SLOT = _REQUEST_SLOT
    _MAKE = staticmethod(_request_partition)
    _BASE = OffsetCommitRequestTopic


class OffsetCommitColumnsAnswerTopic(  # type: ignore[misc]
    _PartitionsAsColumns[OffsetCommitResponsePartition, AnswerColumns], OffsetCommitResponseTopic
):
    """An ``OffsetCommitResponseTopic`` whose partitions are ``columns`` until read."""

    __slots__ = ("_columns",)
    _SLOT = _ANSWER_SLOT
    _MAKE = staticmethod(_answer_partition)
    _BASE = OffsetCommitResponseTopic


def request_columns(topic: OffsetCommitRequestTopic) -> CommitColumns | None:
    """The topic's partitions as columns, if it holds them so (never makes them)."""
    return topic.columns if type(topic) is OffsetCommitColumnsTopic else None


def answer_columns(topic: OffsetCommitResponseTopic) -> AnswerColumns | None:
    return topic.columns if type(topic) is OffsetCommitColumnsAnswerTopic else None


# Structs that may hold an array as columns: readers that walk messages generically (element
# counts, error counts) ask these for ``columns`` first.
COLUMNAR_STRUCTS: frozenset[type] = frozenset({OffsetCommitColumnsTopic, OffsetCommitColumnsAnswerTopic})
