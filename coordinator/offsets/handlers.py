"""OffsetCommit and OffsetFetch (OffsetMetadataManager in Kafka's coordinator).

Pure functions: commit returns the records to write and the response; fetch reads a state
(the runtime hands it the committed one).
"""

from __future__ import annotations

from coordinator.errors import ErrorCode
from coordinator.offsets.config import OffsetsConfig
from coordinator.offsets.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequestGroup,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from coordinator.offsets.state import OffsetsState
from coordinator.runtime.api import Result
from records import CoordinatorRecord, RecordType
from records.definitions import OffsetCommitKey, OffsetCommitValue


def _java_length(text: str) -> int:
    # Kafka compares String.length(), i.e. UTF-16 code units, against offset.metadata.max.bytes.
    return len(text.encode("utf-16-le")) // 2


def commit_response(request: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    """The same answer for every partition of ``request``."""
    return OffsetCommitResponse(
        [
            OffsetCommitResponseTopic(
                t.name, [OffsetCommitResponsePartition(p.partition_index, code) for p in t.partitions]
            )
            for t in request.topics
        ]
    )


def commit_offsets(
    state: OffsetsState,
    request: OffsetCommitRequest,
    now_ms: int,
    config: OffsetsConfig,
    membership_error: ErrorCode = ErrorCode.NONE,
    partition_errors: dict[tuple[str, int], ErrorCode] | None = None,
) -> Result[OffsetCommitResponse]:
    """Validate, then write one OffsetCommit record per partition as one atomic batch.

    ``membership_error`` is the verdict of the group's own commit validation (member epoch or
    generation), computed by the group logic that owns the group; ``partition_errors`` names
    partitions it refuses on their own (a consumer-group member committing a partition it does
    not own at that epoch): those get their error and are not written.
    """
    rejected = partition_errors or {}
    if not request.group_id:
        return Result(commit_response(request, ErrorCode.INVALID_GROUP_ID))
    if membership_error != ErrorCode.NONE:
        return Result(commit_response(request, membership_error))
    oversized = {
        (t.name, p.partition_index)
        for t in request.topics
        for p in t.partitions
        if p.committed_metadata is not None and _java_length(p.committed_metadata) > config.offset_metadata_max_bytes
    }
    if oversized:
        # Nothing of a request with an oversized metadata is written, so a client never sees
        # some partitions of one commit applied and others not.
        return Result(
            OffsetCommitResponse(
                [
                    OffsetCommitResponseTopic(
                        t.name,
                        [
                            OffsetCommitResponsePartition(
                                p.partition_index,
                                ErrorCode.OFFSET_METADATA_TOO_LARGE
                                if (t.name, p.partition_index) in oversized
                                else ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        )
    # Only -1 means "the broker's default"; any other retention (v2-v4), 0 included, is taken as
    # given, so 0 expires the offsets at commit time (Kafka's expireTimestampMs).
    expire = now_ms + request.retention_time_ms if request.retention_time_ms != -1 else -1
    records = [
        CoordinatorRecord(
            RecordType.OFFSET_COMMIT,
            OffsetCommitKey(request.group_id, t.name, p.partition_index),
            OffsetCommitValue(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=p.committed_metadata or "",
                commit_timestamp=now_ms,
                expire_timestamp=expire,
                topic_id=t.topic_id,
            ),
        )
        for t in request.topics
        for p in t.partitions
        if (t.name, p.partition_index) not in rejected
    ]
    response = OffsetCommitResponse(
        [
            OffsetCommitResponseTopic(
                t.name,
                [
                    OffsetCommitResponsePartition(
                        p.partition_index, rejected.get((t.name, p.partition_index), ErrorCode.NONE)
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )
    return Result(response, records)


def fetch_offsets(state: OffsetsState, request: OffsetFetchRequestGroup) -> OffsetFetchResponseGroup:
    committed = state.group_offsets(request.group_id)
    if request.topics is None:
        topics = [
            OffsetFetchResponseTopic(
                name,
                [
                    OffsetFetchResponsePartition(p, v.offset, v.leader_epoch, v.metadata)
                    for p, v in sorted(partitions.items())
                ],
            )
            for name, partitions in sorted(committed.items())
        ]
        return OffsetFetchResponseGroup(request.group_id, topics)
    out = []
    for t in request.topics:
        partitions = committed.get(t.name, {})
        rows = []
        for index in t.partition_indexes:
            v = partitions.get(index)
            if v is None:
                rows.append(OffsetFetchResponsePartition(index, -1, -1, ""))
            else:
                rows.append(OffsetFetchResponsePartition(index, v.offset, v.leader_epoch, v.metadata))
        out.append(OffsetFetchResponseTopic(t.name, rows))
    return OffsetFetchResponseGroup(request.group_id, out)
