"""AlterShareGroupOffsets request and response bodies (API key 91), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsRequestPartition(Struct):
    partition_index: int = 0
    start_offset: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("start_offset", "int64", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = ""
    partitions: list[AlterShareGroupOffsetsRequestPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=AlterShareGroupOffsetsRequestPartition),
    )


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsRequest(Message):
    API_KEY: ClassVar[int] = 91
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_id: str = ""
    topics: list[AlterShareGroupOffsetsRequestTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=AlterShareGroupOffsetsRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[AlterShareGroupOffsetsResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=AlterShareGroupOffsetsResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class AlterShareGroupOffsetsResponse(Message):
    API_KEY: ClassVar[int] = 91
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    responses: list[AlterShareGroupOffsetsResponseTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("responses", "array", Versions(0), struct=AlterShareGroupOffsetsResponseTopic),
    )
