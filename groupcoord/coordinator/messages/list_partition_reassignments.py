"""ListPartitionReassignments request and response bodies (API key 46), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ListPartitionReassignmentsTopics(Struct):
    name: str = ""
    partition_indexes: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partition_indexes", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ListPartitionReassignmentsRequest(Message):
    API_KEY: ClassVar[int] = 46
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    timeout_ms: int = 60000
    topics: list[ListPartitionReassignmentsTopics] | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("timeout_ms", "int32", Versions(0), default=60000),
        Field("topics", "array", Versions(0), nullable=Versions(0), struct=ListPartitionReassignmentsTopics),
    )


@dataclass(kw_only=True, slots=True)
class ListPartitionReassignmentsResponseOngoingPartitionReassignment(Struct):
    partition_index: int = 0
    replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("replicas", "array", Versions(0), item="int32"),
        Field("adding_replicas", "array", Versions(0), item="int32"),
        Field("removing_replicas", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ListPartitionReassignmentsResponseOngoingTopicReassignment(Struct):
    name: str = ""
    partitions: list[ListPartitionReassignmentsResponseOngoingPartitionReassignment] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field(
            "partitions", "array", Versions(0), struct=ListPartitionReassignmentsResponseOngoingPartitionReassignment
        ),
    )


@dataclass(kw_only=True, slots=True)
class ListPartitionReassignmentsResponse(Message):
    API_KEY: ClassVar[int] = 46
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = ""
    topics: list[ListPartitionReassignmentsResponseOngoingTopicReassignment] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=ListPartitionReassignmentsResponseOngoingTopicReassignment),
    )
