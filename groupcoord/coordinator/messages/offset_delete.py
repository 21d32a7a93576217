"""OffsetDelete request and response bodies (API key 47), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import NEVER, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class OffsetDeleteRequestPartition(Struct):
    partition_index: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("partition_index", "int32", Versions(0), default=0),)


@dataclass(kw_only=True, slots=True)
class OffsetDeleteRequestTopic(Struct):
    name: str = ""
    partitions: list[OffsetDeleteRequestPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=OffsetDeleteRequestPartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetDeleteRequest(Message):
    API_KEY: ClassVar[int] = 47
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = NEVER
    group_id: str = ""
    topics: list[OffsetDeleteRequestTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=OffsetDeleteRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class OffsetDeleteResponsePartition(Struct):
    partition_index: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetDeleteResponseTopic(Struct):
    name: str = ""
    partitions: list[OffsetDeleteResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=OffsetDeleteResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetDeleteResponse(Message):
    API_KEY: ClassVar[int] = 47
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = NEVER
    error_code: int = 0
    throttle_time_ms: int = 0
    topics: list[OffsetDeleteResponseTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=OffsetDeleteResponseTopic),
    )
