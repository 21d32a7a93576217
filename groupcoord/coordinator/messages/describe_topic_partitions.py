"""DescribeTopicPartitions request and response bodies (API key 75), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsRequestTopicRequest(Struct):
    name: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("name", "string", Versions(0), default=""),)


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsRequestCursor(Struct):
    topic_name: str = ""
    partition_index: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partition_index", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsRequest(Message):
    API_KEY: ClassVar[int] = 75
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    topics: list[DescribeTopicPartitionsRequestTopicRequest] = field(default_factory=list)
    response_partition_limit: int = 2000
    cursor: DescribeTopicPartitionsRequestCursor | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=DescribeTopicPartitionsRequestTopicRequest),
        Field("response_partition_limit", "int32", Versions(0), default=2000),
        Field("cursor", "struct", Versions(0), nullable=Versions(0), struct=DescribeTopicPartitionsRequestCursor),
    )


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsResponsePartition(Struct):
    error_code: int = 0
    partition_index: int = 0
    leader_id: int = 0
    leader_epoch: int = -1
    replica_nodes: list[int] = field(default_factory=list)
    isr_nodes: list[int] = field(default_factory=list)
    eligible_leader_replicas: list[int] | None = None
    last_known_elr: list[int] | None = None
    offline_replicas: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("partition_index", "int32", Versions(0), default=0),
        Field("leader_id", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(0), default=-1),
        Field("replica_nodes", "array", Versions(0), item="int32"),
        Field("isr_nodes", "array", Versions(0), item="int32"),
        Field("eligible_leader_replicas", "array", Versions(0), nullable=Versions(0), item="int32"),
        Field("last_known_elr", "array", Versions(0), nullable=Versions(0), item="int32"),
        Field("offline_replicas", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsResponseTopic(Struct):
    error_code: int = 0
    name: str | None = ""
    topic_id: uuid.UUID = ZERO_UUID
    is_internal: bool = False
    partitions: list[DescribeTopicPartitionsResponsePartition] = field(default_factory=list)
    topic_authorized_operations: int = -2147483648
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("name", "string", Versions(0), nullable=Versions(0), default=""),
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("is_internal", "bool", Versions(0), default=False),
        Field("partitions", "array", Versions(0), struct=DescribeTopicPartitionsResponsePartition),
        Field("topic_authorized_operations", "int32", Versions(0), default=-2147483648),
    )


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsResponseCursor(Struct):
    topic_name: str = ""
    partition_index: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partition_index", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DescribeTopicPartitionsResponse(Message):
    API_KEY: ClassVar[int] = 75
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    topics: list[DescribeTopicPartitionsResponseTopic] = field(default_factory=list)
    next_cursor: DescribeTopicPartitionsResponseCursor | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=DescribeTopicPartitionsResponseTopic),
        Field("next_cursor", "struct", Versions(0), nullable=Versions(0), struct=DescribeTopicPartitionsResponseCursor),
    )
