"""CreateTopics request and response bodies (API key 19), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class CreateTopicsRequestCreatableReplicaAssignment(Struct):
    partition_index: int = 0
    broker_ids: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("broker_ids", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsRequestCreatableTopicConfig(Struct):
    name: str = ""
    value: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("value", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsRequestCreatableTopic(Struct):
    name: str = ""
    num_partitions: int = 0
    replication_factor: int = 0
    assignments: list[CreateTopicsRequestCreatableReplicaAssignment] = field(default_factory=list)
    configs: list[CreateTopicsRequestCreatableTopicConfig] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("num_partitions", "int32", Versions(0), default=0),
        Field("replication_factor", "int16", Versions(0), default=0),
        Field("assignments", "array", Versions(0), struct=CreateTopicsRequestCreatableReplicaAssignment),
        Field("configs", "array", Versions(0), struct=CreateTopicsRequestCreatableTopicConfig),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsRequest(Message):
    API_KEY: ClassVar[int] = 19
    VALID: ClassVar[Versions] = Versions(2, 7)
    FLEXIBLE: ClassVar[Versions] = Versions(5)
    topics: list[CreateTopicsRequestCreatableTopic] = field(default_factory=list)
    timeout_ms: int = 60000
    validate_only: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=CreateTopicsRequestCreatableTopic),
        Field("timeout_ms", "int32", Versions(0), default=60000),
        Field("validate_only", "bool", Versions(1), default=False),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsResponseCreatableTopicConfigs(Struct):
    name: str = ""
    value: str | None = ""
    read_only: bool = False
    config_source: int = -1
    is_sensitive: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(5), default=""),
        Field("value", "string", Versions(5), nullable=Versions(5), default=""),
        Field("read_only", "bool", Versions(5), default=False),
        Field("config_source", "int8", Versions(5), default=-1),
        Field("is_sensitive", "bool", Versions(5), default=False),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsResponseCreatableTopicResult(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    error_code: int = 0
    error_message: str | None = ""
    topic_config_error_code: int = 0
    num_partitions: int = -1
    replication_factor: int = -1
    configs: list[CreateTopicsResponseCreatableTopicConfigs] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("topic_id", "uuid", Versions(7), default=ZERO_UUID),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(1), nullable=Versions(0), default=""),
        Field("topic_config_error_code", "int16", Versions(5), tagged=Versions(5), tag=0, default=0),
        Field("num_partitions", "int32", Versions(5), default=-1),
        Field("replication_factor", "int16", Versions(5), default=-1),
        Field("configs", "array", Versions(5), nullable=Versions(5), struct=CreateTopicsResponseCreatableTopicConfigs),
    )


@dataclass(kw_only=True, slots=True)
class CreateTopicsResponse(Message):
    API_KEY: ClassVar[int] = 19
    VALID: ClassVar[Versions] = Versions(2, 7)
    FLEXIBLE: ClassVar[Versions] = Versions(5)
    throttle_time_ms: int = 0
    topics: list[CreateTopicsResponseCreatableTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(2), default=0),
        Field("topics", "array", Versions(0), struct=CreateTopicsResponseCreatableTopicResult),
    )
