"""DeleteRecords request and response bodies (API key 21), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DeleteRecordsPartition(Struct):
    partition_index: int = 0
    offset: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("offset", "int64", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteRecordsTopic(Struct):
    name: str = ""
    partitions: list[DeleteRecordsPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DeleteRecordsPartition),
    )


@dataclass(kw_only=True, slots=True)
class DeleteRecordsRequest(Message):
    API_KEY: ClassVar[int] = 21
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    topics: list[DeleteRecordsTopic] = field(default_factory=list)
    timeout_ms: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=DeleteRecordsTopic),
        Field("timeout_ms", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteRecordsPartitionResult(Struct):
    partition_index: int = 0
    low_watermark: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("low_watermark", "int64", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteRecordsTopicResult(Struct):
    name: str = ""
    partitions: list[DeleteRecordsPartitionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DeleteRecordsPartitionResult),
    )


@dataclass(kw_only=True, slots=True)
class DeleteRecordsResponse(Message):
    API_KEY: ClassVar[int] = 21
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    topics: list[DeleteRecordsTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=DeleteRecordsTopicResult),
    )
