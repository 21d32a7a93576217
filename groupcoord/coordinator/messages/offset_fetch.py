"""OffsetFetch request and response bodies (API key 9), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class OffsetFetchRequestTopic(Struct):
    name: str = ""
    partition_indexes: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 7), default=""),
        Field("partition_indexes", "array", Versions(0, 7), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchRequestTopics(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partition_indexes: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(8, 9), default=""),
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("partition_indexes", "array", Versions(8), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchRequestGroup(Struct):
    group_id: str = ""
    member_id: str | None = None
    member_epoch: int = -1
    topics: list[OffsetFetchRequestTopics] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(8), default=""),
        Field("member_id", "string", Versions(9), nullable=Versions(9), default=None),
        Field("member_epoch", "int32", Versions(9), default=-1),
        Field("topics", "array", Versions(8), nullable=Versions(8), struct=OffsetFetchRequestTopics),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchRequest(Message):
    API_KEY: ClassVar[int] = 9
    VALID: ClassVar[Versions] = Versions(1, 10)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    group_id: str = ""
    topics: list[OffsetFetchRequestTopic] | None = field(default_factory=list)
    groups: list[OffsetFetchRequestGroup] = field(default_factory=list)
    require_stable: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0, 7), default=""),
        Field("topics", "array", Versions(0, 7), nullable=Versions(2, 7), struct=OffsetFetchRequestTopic),
        Field("groups", "array", Versions(8), struct=OffsetFetchRequestGroup),
        Field("require_stable", "bool", Versions(7), default=False),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponsePartition(Struct):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0, 7), default=0),
        Field("committed_offset", "int64", Versions(0, 7), default=0),
        Field("committed_leader_epoch", "int32", Versions(5, 7), default=-1),
        Field("metadata", "string", Versions(0, 7), nullable=Versions(0, 7), default=""),
        Field("error_code", "int16", Versions(0, 7), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponseTopic(Struct):
    name: str = ""
    partitions: list[OffsetFetchResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 7), default=""),
        Field("partitions", "array", Versions(0, 7), struct=OffsetFetchResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponsePartitions(Struct):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    metadata: str | None = ""
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(8), default=0),
        Field("committed_offset", "int64", Versions(8), default=0),
        Field("committed_leader_epoch", "int32", Versions(8), default=-1),
        Field("metadata", "string", Versions(8), nullable=Versions(8), default=""),
        Field("error_code", "int16", Versions(8), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponseTopics(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[OffsetFetchResponsePartitions] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(8, 9), default=""),
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("partitions", "array", Versions(8), struct=OffsetFetchResponsePartitions),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponseGroup(Struct):
    group_id: str = ""
    topics: list[OffsetFetchResponseTopics] = field(default_factory=list)
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(8), default=""),
        Field("topics", "array", Versions(8), struct=OffsetFetchResponseTopics),
        Field("error_code", "int16", Versions(8), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetFetchResponse(Message):
    API_KEY: ClassVar[int] = 9
    VALID: ClassVar[Versions] = Versions(1, 10)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    throttle_time_ms: int = 0
    topics: list[OffsetFetchResponseTopic] = field(default_factory=list)
    error_code: int = 0
    groups: list[OffsetFetchResponseGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(3), default=0),
        Field("topics", "array", Versions(0, 7), struct=OffsetFetchResponseTopic),
        Field("error_code", "int16", Versions(2, 7), default=0),
        Field("groups", "array", Versions(8), struct=OffsetFetchResponseGroup),
    )
