"""ElectLeaders request and response bodies (API key 43), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ElectLeadersRequestTopicPartitions(Struct):
    topic: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ElectLeadersRequest(Message):
    API_KEY: ClassVar[int] = 43
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    election_type: int = 0
    topic_partitions: list[ElectLeadersRequestTopicPartitions] | None = field(default_factory=list)
    timeout_ms: int = 60000
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("election_type", "int8", Versions(1), default=0),
        Field(
            "topic_partitions", "array", Versions(0), nullable=Versions(0), struct=ElectLeadersRequestTopicPartitions
        ),
        Field("timeout_ms", "int32", Versions(0), default=60000),
    )


@dataclass(kw_only=True, slots=True)
class ElectLeadersResponsePartitionResult(Struct):
    partition_id: int = 0
    error_code: int = 0
    error_message: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_id", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class ElectLeadersResponseReplicaElectionResult(Struct):
    topic: str = ""
    partition_result: list[ElectLeadersResponsePartitionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0), default=""),
        Field("partition_result", "array", Versions(0), struct=ElectLeadersResponsePartitionResult),
    )


@dataclass(kw_only=True, slots=True)
class ElectLeadersResponse(Message):
    API_KEY: ClassVar[int] = 43
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    error_code: int = 0
    replica_election_results: list[ElectLeadersResponseReplicaElectionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(1), default=0),
        Field("replica_election_results", "array", Versions(0), struct=ElectLeadersResponseReplicaElectionResult),
    )
