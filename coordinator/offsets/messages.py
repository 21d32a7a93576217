"""OffsetCommit / OffsetFetch request and response models.

Field names are the Kafka schema's field names in snake_case, so the gateway converts wire
messages mechanically. Only what the coordinator reads or answers is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: list[OffsetCommitRequestPartition]
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    topics: list[OffsetCommitRequestTopic]
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    api_version: int = 9


@dataclass(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: int


@dataclass(frozen=True, slots=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: list[OffsetCommitResponsePartition]


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: list[OffsetCommitResponseTopic]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: list[int]


@dataclass(frozen=True, slots=True)
class OffsetFetchRequestGroup:
    """One group of an OffsetFetch request; ``topics=None`` asks for every committed offset."""

    group_id: str
    topics: list[OffsetFetchRequestTopic] | None = None
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: list[OffsetFetchResponsePartition]


@dataclass(frozen=True, slots=True)
class OffsetFetchResponseGroup:
    group_id: str
    topics: list[OffsetFetchResponseTopic] = field(default_factory=list)
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequestTopic:
    name: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: list[OffsetDeleteRequestTopic]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponsePartition:
    partition_index: int
    error_code: int = 0


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponseTopic:
    name: str
    partitions: list[OffsetDeleteResponsePartition]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error_code: int = 0
    topics: list[OffsetDeleteResponseTopic] = field(default_factory=list)
