"""OffsetCommit and OffsetFetch (OffsetMetadataManager in Kafka's coordinator).

Pure functions: commit returns the records to write and the response; fetch reads a state
(the runtime hands it the committed one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.offset_commit_columns import (
    AnswerColumns,
    OffsetCommitColumnsAnswerTopic,
    request_columns,
)
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequestGroup,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from groupcoord.coordinator.messages.schema import known_topic_id
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.offsets.state import OffsetsState
from groupcoord.coordinator.runtime.api import Result
from groupcoord.records import CoordinatorRecord
from groupcoord.records.definitions import OffsetCommitValue
from groupcoord.records.offset_commit_records import offset_commit_record
from groupcoord.records.offset_commit_run import RUNS_ENABLED, OffsetCommitRun, RunTopic, is_plain_topic_id


def java_length(text: str) -> int:
    # Kafka compares String.length(), i.e. UTF-16 code units, against offset.metadata.max.bytes.
    return len(text.encode("utf-16-le")) // 2


def _answer(topic: OffsetCommitRequestTopic, codes: list[int]) -> OffsetCommitResponseTopic:
    """The answer to one request topic, named as the request named it (name and id)."""
    columns = request_columns(topic)
    if columns is not None:
        return OffsetCommitColumnsAnswerTopic(
            name=topic.name, topic_id=topic.topic_id, columns=AnswerColumns(columns.indexes, codes)
        )
    return OffsetCommitResponseTopic(
        name=topic.name,
        topic_id=topic.topic_id,
        partitions=[
            OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p, code in zip(topic.partitions, codes, strict=True)
        ],
    )


def commit_response(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """The same answer for every partition of ``request``."""
    return OffsetCommitResponse(topics=[_answer(t, [code] * _partition_count(t)) for t in request.topics])


def _partition_count(topic: OffsetCommitRequestTopic) -> int:
    columns = request_columns(topic)
    return len(columns.indexes) if columns is not None else len(topic.partitions)


def _oversized_answer(request: OffsetCommitRequest, max_metadata: int) -> OffsetCommitResponse:
    """The answer to a commit with a metadata longer than ``max_metadata``: nothing of it is
    written, so a client never sees some partitions of one commit applied and others not."""
    oversized = {
        (t.name, p.partition_index)
        for t in request.topics
        for p in t.partitions
        if p.committed_metadata and java_length(p.committed_metadata) > max_metadata
    }
    return OffsetCommitResponse(
        topics=[
            _answer(
                t,
                [
                    ErrorCode.OFFSET_METADATA_TOO_LARGE
                    if (t.name, p.partition_index) in oversized
                    else ErrorCode.INVALID_COMMIT_OFFSET_SIZE
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


@dataclass(frozen=True, slots=True)
class CommitVerdict:
    """The group's own commit validation (member epoch or generation), computed by the group logic
    that owns the group: ``error`` refuses the whole commit; otherwise ``partition_errors`` (keyed
    by topic name and partition, as the request names them) refuses single partitions (a
    consumer-group member committing a partition it does not own at that epoch)."""

    error: ErrorCode = ErrorCode.NONE
    partition_errors: Mapping[tuple[str, int], ErrorCode] = field(default_factory=dict)


def commit_offsets(
    state: OffsetsState,
    request: OffsetCommitRequest,
    now_ms: int,
    config: OffsetsConfig,
    verdict: CommitVerdict = CommitVerdict(),
) -> Result[OffsetCommitResponse]:
    """Validate, then write one OffsetCommit record per partition as one atomic batch; the
    partitions the group's ``verdict`` refuses get their error and are not written."""
    rejected = verdict.partition_errors
    if not request.group_id:
        return Result(commit_response(request, ErrorCode.INVALID_GROUP_ID))
    if verdict.error != ErrorCode.NONE:
        return Result(commit_response(request, verdict.error))
    max_metadata = config.offset_metadata_max_bytes
    # Only -1 means "the broker's default"; any other retention (v2-v4), 0 included, is taken as
    # given, so 0 expires the offsets at commit time (Kafka's expireTimestampMs).
    expire = now_ms + request.retention_time_ms if request.retention_time_ms != -1 else -1
    # A run saves nothing for a single record (made as a record anyway, to be fed alone).
    if not rejected and RUNS_ENABLED and sum(map(_partition_count, request.topics)) > 1:
        run = _plain_run(request, now_ms, expire)
        if run is not None:
            return run
    # One pass, the records and the answer together: a 100-partition commit builds 100 of each.
    group_id = request.group_id
    make, accepted = offset_commit_record, ErrorCode.NONE
    records: list[CoordinatorRecord] = []
    answered: list[OffsetCommitResponseTopic] = []
    for t in request.topics:
        name, topic_id = t.name, known_topic_id(t.topic_id)
        partitions: list[OffsetCommitResponsePartition] = []
        for p in t.partitions:
            index, metadata = p.partition_index, p.committed_metadata
            # A string of n code points is n to 2n UTF-16 units: only one that may be too long is measured.
            if metadata and 2 * len(metadata) > max_metadata and java_length(metadata) > max_metadata:
                return Result(_oversized_answer(request, max_metadata))
            if rejected and (name, index) in rejected:
                partitions.append(
                    OffsetCommitResponsePartition(partition_index=index, error_code=rejected[name, index])
                )
                continue
            partitions.append(OffsetCommitResponsePartition(partition_index=index, error_code=accepted))
            records.append(
                make(
                    group_id,
                    name,
                    index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    metadata or "",
                    now_ms,
                    expire,
                    topic_id,
                )
            )
        answered.append(OffsetCommitResponseTopic(name=name, topic_id=t.topic_id, partitions=partitions))
    response = OffsetCommitResponse(topics=answered)
    return Result(response, records)


_INDEX = attrgetter("partition_index")
_OFFSET = attrgetter("committed_offset")
_EPOCH = attrgetter("committed_leader_epoch")
_METADATA = attrgetter("committed_metadata")


def _plain_run(request: OffsetCommitRequest, now_ms: int, expire: int) -> Result[OffsetCommitResponse] | None:
    """A commit that no verdict refuses in part and that has no metadata, as an
    ``OffsetCommitRun`` (its records as columns, taken from the request by C-level maps) and its
    answer; None where a record would not be plain (metadata, an unusual topic id)."""
    topics: list[RunTopic] = []
    for t in request.topics:
        topic_id = known_topic_id(t.topic_id)
        if not is_plain_topic_id(topic_id):
            return None
        columns = request_columns(t)
        if columns is not None:
            # Decoded as columns (``messages/offset_commit_columns``): taken as they are (the
            # run and the answer only read them).
            if any(columns.metadata):
                return None
            topics.append((t.name, topic_id, columns.indexes, columns.offsets, columns.epochs))
            continue
        parts = t.partitions
        if any(map(_METADATA, parts)):
            return None
        topics.append((t.name, topic_id, list(map(_INDEX, parts)), list(map(_OFFSET, parts)), list(map(_EPOCH, parts))))
    accepted = int(ErrorCode.NONE)
    response = OffsetCommitResponse(
        topics=[
            OffsetCommitColumnsAnswerTopic(
                name=t.name, topic_id=t.topic_id, columns=AnswerColumns(indexes, [accepted] * len(indexes))
            )
            for t, (_, _, indexes, _, _) in zip(request.topics, topics, strict=True)
        ]
    )
    return Result(response, OffsetCommitRun(request.group_id, now_ms, expire, topics))


# Upper bounds of an answered topic's fixed fields (its uuid and framing; the name is counted)
# and of a partition's fixed fields (index, offset, epoch, error, framing; the metadata is counted).
_TOPIC_FIXED_BYTES = 32
_PARTITION_FIXED_BYTES = 32
_GROUP_FIXED_BYTES = 16


def _metadata_length(value: OffsetCommitValue | bytes) -> int:
    # A value a load kept encoded has empty metadata (only such values are kept so, see
    # ``PLAIN_VALUE``): it is not decoded here only to be decoded again for the answer.
    return 0 if type(value) is bytes else len(value.metadata)  # type: ignore[union-attr]


def fetch_size(state: OffsetsState, request: OffsetFetchRequestGroup) -> int:
    """An upper bound of the bytes ``fetch_offsets`` encodes for ``request``, from the committed
    offsets alone, so that an answer too large to send is refused before it is built."""
    committed = state.group_offsets(request.group_id)
    size = _GROUP_FIXED_BYTES + len(request.group_id)
    if request.topics is None:
        for name, partitions in committed.items():
            size += _TOPIC_FIXED_BYTES + len(name) + _PARTITION_FIXED_BYTES * len(partitions)
            size += sum(map(_metadata_length, partitions.slots.values()))
        return size
    for t in request.topics:
        asked = committed.get(t.name)
        slots = asked.slots if asked is not None else {}
        size += _TOPIC_FIXED_BYTES + len(t.name) + _PARTITION_FIXED_BYTES * len(t.partition_indexes)
        size += sum(_metadata_length(v) for i in t.partition_indexes if (v := slots.get(i)) is not None)
    return size


def fetch_offsets(
    state: OffsetsState, request: OffsetFetchRequestGroup, unstable: Callable[[str, str, int], bool] | None = None
) -> OffsetFetchResponseGroup:
    """The committed offsets the group asks for (``topics=None``: all of them); each answered
    topic keeps the request's own name and id. ``unstable(group, topic, partition)``: whether
    transactional offsets are staged there (asked with require_stable), answered as Kafka does,
    UNSTABLE_OFFSET_COMMIT with no offset."""
    committed = state.group_offsets(request.group_id)
    response = _fetch(committed, request)
    if unstable is not None:
        for t in response.topics:
            for p in t.partitions:
                if unstable(request.group_id, t.name, p.partition_index):
                    p.committed_offset, p.committed_leader_epoch, p.metadata = -1, -1, ""
                    p.error_code = ErrorCode.UNSTABLE_OFFSET_COMMIT
    return response


def _fetch(
    committed: Mapping[str, Mapping[int, OffsetCommitValue]], request: OffsetFetchRequestGroup
) -> OffsetFetchResponseGroup:
    if request.topics is None:
        topics = [
            OffsetFetchResponseTopics(
                name=name,
                partitions=[
                    OffsetFetchResponsePartitions(
                        partition_index=p,
                        committed_offset=v.offset,
                        committed_leader_epoch=v.leader_epoch,
                        metadata=v.metadata,
                    )
                    for p, v in sorted(partitions.items())
                ],
            )
            for name, partitions in sorted(committed.items())
        ]
        return OffsetFetchResponseGroup(group_id=request.group_id, topics=topics)
    out = []
    for t in request.topics:
        partitions = committed.get(t.name, {})
        rows = []
        for index in t.partition_indexes:
            v = partitions.get(index)
            if v is None:
                rows.append(
                    OffsetFetchResponsePartitions(
                        partition_index=index, committed_offset=-1, committed_leader_epoch=-1, metadata=""
                    )
                )
            else:
                rows.append(
                    OffsetFetchResponsePartitions(
                        partition_index=index,
                        committed_offset=v.offset,
                        committed_leader_epoch=v.leader_epoch,
                        metadata=v.metadata,
                    )
                )
        out.append(OffsetFetchResponseTopics(name=t.name, topic_id=t.topic_id, partitions=rows))
    return OffsetFetchResponseGroup(group_id=request.group_id, topics=out)
