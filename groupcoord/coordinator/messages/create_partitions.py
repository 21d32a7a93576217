"""CreatePartitions request and response bodies (API key 37), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class CreatePartitionsAssignment(Struct):
    broker_ids: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("broker_ids", "array", Versions(0), item="int32"),)


@dataclass(kw_only=True, slots=True)
class CreatePartitionsTopic(Struct):
    name: str = ""
    count: int = 0
    assignments: list[CreatePartitionsAssignment] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("count", "int32", Versions(0), default=0),
        Field("assignments", "array", Versions(0), nullable=Versions(0), struct=CreatePartitionsAssignment),
    )


@dataclass(kw_only=True, slots=True)
class CreatePartitionsRequest(Message):
    API_KEY: ClassVar[int] = 37
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    topics: list[CreatePartitionsTopic] = field(default_factory=list)
    timeout_ms: int = 0
    validate_only: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=CreatePartitionsTopic),
        Field("timeout_ms", "int32", Versions(0), default=0),
        Field("validate_only", "bool", Versions(0), default=False),
    )


@dataclass(kw_only=True, slots=True)
class CreatePartitionsTopicResult(Struct):
    name: str = ""
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class CreatePartitionsResponse(Message):
    API_KEY: ClassVar[int] = 37
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    results: list[CreatePartitionsTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("results", "array", Versions(0), struct=CreatePartitionsTopicResult),
    )
