"""ListOffsets request and response bodies (API key 2), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ListOffsetsPartition(Struct):
    partition_index: int = 0
    current_leader_epoch: int = -1
    timestamp: int = 0
    max_num_offsets: int = 1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("current_leader_epoch", "int32", Versions(4), default=-1),
        Field("timestamp", "int64", Versions(0), default=0),
        Field("max_num_offsets", "int32", Versions(0, 0), default=1),
    )


@dataclass(kw_only=True, slots=True)
class ListOffsetsTopic(Struct):
    name: str = ""
    partitions: list[ListOffsetsPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=ListOffsetsPartition),
    )


@dataclass(kw_only=True, slots=True)
class ListOffsetsRequest(Message):
    API_KEY: ClassVar[int] = 2
    VALID: ClassVar[Versions] = Versions(1, 11)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    replica_id: int = 0
    isolation_level: int = 0
    topics: list[ListOffsetsTopic] = field(default_factory=list)
    timeout_ms: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("replica_id", "int32", Versions(0), default=0),
        Field("isolation_level", "int8", Versions(2), default=0),
        Field("topics", "array", Versions(0), struct=ListOffsetsTopic),
        Field("timeout_ms", "int32", Versions(10), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ListOffsetsPartitionResponse(Struct):
    partition_index: int = 0
    error_code: int = 0
    old_style_offsets: list[int] = field(default_factory=list)
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("old_style_offsets", "array", Versions(0, 0), item="int64"),
        Field("timestamp", "int64", Versions(1), default=-1),
        Field("offset", "int64", Versions(1), default=-1),
        Field("leader_epoch", "int32", Versions(4), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class ListOffsetsTopicResponse(Struct):
    name: str = ""
    partitions: list[ListOffsetsPartitionResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=ListOffsetsPartitionResponse),
    )


@dataclass(kw_only=True, slots=True)
class ListOffsetsResponse(Message):
    API_KEY: ClassVar[int] = 2
    VALID: ClassVar[Versions] = Versions(1, 11)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    throttle_time_ms: int = 0
    topics: list[ListOffsetsTopicResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(2), default=0),
        Field("topics", "array", Versions(0), struct=ListOffsetsTopicResponse),
    )
