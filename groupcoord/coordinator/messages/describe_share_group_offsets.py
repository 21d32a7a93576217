"""DescribeShareGroupOffsets request and response bodies (API key 90), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsRequestGroup(Struct):
    group_id: str = ""
    topics: list[DescribeShareGroupOffsetsRequestTopic] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), nullable=Versions(0), struct=DescribeShareGroupOffsetsRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsRequest(Message):
    API_KEY: ClassVar[int] = 90
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    groups: list[DescribeShareGroupOffsetsRequestGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("groups", "array", Versions(0), struct=DescribeShareGroupOffsetsRequestGroup),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = 0
    start_offset: int = 0
    leader_epoch: int = 0
    lag: int = -1
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("start_offset", "int64", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(0), default=0),
        Field("lag", "int64", Versions(1), default=-1),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[DescribeShareGroupOffsetsResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=DescribeShareGroupOffsetsResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsResponseGroup(Struct):
    group_id: str = ""
    topics: list[DescribeShareGroupOffsetsResponseTopic] = field(default_factory=list)
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=DescribeShareGroupOffsetsResponseTopic),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class DescribeShareGroupOffsetsResponse(Message):
    API_KEY: ClassVar[int] = 90
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    groups: list[DescribeShareGroupOffsetsResponseGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("groups", "array", Versions(0), struct=DescribeShareGroupOffsetsResponseGroup),
    )
