"""OffsetCommit request and response bodies (API key 8), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class OffsetCommitRequestPartition(Struct):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    commit_timestamp: int = -1
    committed_metadata: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("committed_offset", "int64", Versions(0), default=0),
        Field("committed_leader_epoch", "int32", Versions(6), default=-1),
        Field("commit_timestamp", "int64", Versions(1, 1), default=-1),
        Field("committed_metadata", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class OffsetCommitRequestTopic(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[OffsetCommitRequestPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 9), default=""),
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=OffsetCommitRequestPartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetCommitRequest(Message):
    API_KEY: ClassVar[int] = 8
    VALID: ClassVar[Versions] = Versions(2, 10)
    FLEXIBLE: ClassVar[Versions] = Versions(8)
    group_id: str = ""
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    topics: list[OffsetCommitRequestTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("generation_id_or_member_epoch", "int32", Versions(1), default=-1),
        Field("member_id", "string", Versions(1), default=""),
        Field("group_instance_id", "string", Versions(7), nullable=Versions(7), default=None),
        Field("retention_time_ms", "int64", Versions(2, 4), default=-1),
        Field("topics", "array", Versions(0), struct=OffsetCommitRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class OffsetCommitResponsePartition(Struct):
    partition_index: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetCommitResponseTopic(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[OffsetCommitResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 9), default=""),
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=OffsetCommitResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetCommitResponse(Message):
    API_KEY: ClassVar[int] = 8
    VALID: ClassVar[Versions] = Versions(2, 10)
    FLEXIBLE: ClassVar[Versions] = Versions(8)
    throttle_time_ms: int = 0
    topics: list[OffsetCommitResponseTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(3), default=0),
        Field("topics", "array", Versions(0), struct=OffsetCommitResponseTopic),
    )
