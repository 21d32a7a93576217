"""AlterPartitionReassignments request and response bodies (API key 45), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsRequestReassignablePartition(Struct):
    partition_index: int = 0
    replicas: list[int] | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("replicas", "array", Versions(0), nullable=Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsRequestReassignableTopic(Struct):
    name: str = ""
    partitions: list[AlterPartitionReassignmentsRequestReassignablePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=AlterPartitionReassignmentsRequestReassignablePartition),
    )


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsRequest(Message):
    API_KEY: ClassVar[int] = 45
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    timeout_ms: int = 60000
    topics: list[AlterPartitionReassignmentsRequestReassignableTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("timeout_ms", "int32", Versions(0), default=60000),
        Field("topics", "array", Versions(0), struct=AlterPartitionReassignmentsRequestReassignableTopic),
    )


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsResponseReassignablePartitionResponse(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsResponseReassignableTopicResponse(Struct):
    name: str = ""
    partitions: list[AlterPartitionReassignmentsResponseReassignablePartitionResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field(
            "partitions", "array", Versions(0), struct=AlterPartitionReassignmentsResponseReassignablePartitionResponse
        ),
    )


@dataclass(kw_only=True, slots=True)
class AlterPartitionReassignmentsResponse(Message):
    API_KEY: ClassVar[int] = 45
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = ""
    responses: list[AlterPartitionReassignmentsResponseReassignableTopicResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("responses", "array", Versions(0), struct=AlterPartitionReassignmentsResponseReassignableTopicResponse),
    )
