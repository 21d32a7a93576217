"""DescribeLogDirs request and response bodies (API key 35), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsRequestDescribableLogDirTopic(Struct):
    topic: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsRequest(Message):
    API_KEY: ClassVar[int] = 35
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    topics: list[DescribeLogDirsRequestDescribableLogDirTopic] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field(
            "topics", "array", Versions(0), nullable=Versions(0), struct=DescribeLogDirsRequestDescribableLogDirTopic
        ),
    )


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsPartition(Struct):
    partition_index: int = 0
    partition_size: int = 0
    offset_lag: int = 0
    is_future_key: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("partition_size", "int64", Versions(0), default=0),
        Field("offset_lag", "int64", Versions(0), default=0),
        Field("is_future_key", "bool", Versions(0), default=False),
    )


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsTopic(Struct):
    name: str = ""
    partitions: list[DescribeLogDirsPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DescribeLogDirsPartition),
    )


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsResult(Struct):
    error_code: int = 0
    log_dir: str = ""
    topics: list[DescribeLogDirsTopic] = field(default_factory=list)
    total_bytes: int = -1
    usable_bytes: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("log_dir", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=DescribeLogDirsTopic),
        Field("total_bytes", "int64", Versions(4), default=-1),
        Field("usable_bytes", "int64", Versions(4), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class DescribeLogDirsResponse(Message):
    API_KEY: ClassVar[int] = 35
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    error_code: int = 0
    results: list[DescribeLogDirsResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(3), default=0),
        Field("results", "array", Versions(0), struct=DescribeLogDirsResult),
    )
