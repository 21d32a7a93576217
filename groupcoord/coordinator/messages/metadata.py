"""Metadata request and response bodies (API key 3), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class MetadataRequestTopic(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    name: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("name", "string", Versions(0), nullable=Versions(10), default=""),
    )


@dataclass(kw_only=True, slots=True)
class MetadataRequest(Message):
    API_KEY: ClassVar[int] = 3
    VALID: ClassVar[Versions] = Versions(0, 13)
    FLEXIBLE: ClassVar[Versions] = Versions(9)
    topics: list[MetadataRequestTopic] | None = field(default_factory=list)
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False
    include_topic_authorized_operations: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), nullable=Versions(1), struct=MetadataRequestTopic),
        Field("allow_auto_topic_creation", "bool", Versions(4), default=True),
        Field("include_cluster_authorized_operations", "bool", Versions(8, 10), default=False),
        Field("include_topic_authorized_operations", "bool", Versions(8), default=False),
    )


@dataclass(kw_only=True, slots=True)
class MetadataResponseBroker(Struct):
    node_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("node_id", "int32", Versions(0), default=0),
        Field("host", "string", Versions(0), default=""),
        Field("port", "int32", Versions(0), default=0),
        Field("rack", "string", Versions(1), nullable=Versions(1), default=None),
    )


@dataclass(kw_only=True, slots=True)
class MetadataResponsePartition(Struct):
    error_code: int = 0
    partition_index: int = 0
    leader_id: int = 0
    leader_epoch: int = -1
    replica_nodes: list[int] = field(default_factory=list)
    isr_nodes: list[int] = field(default_factory=list)
    offline_replicas: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("partition_index", "int32", Versions(0), default=0),
        Field("leader_id", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(7), default=-1),
        Field("replica_nodes", "array", Versions(0), item="int32"),
        Field("isr_nodes", "array", Versions(0), item="int32"),
        Field("offline_replicas", "array", Versions(5), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class MetadataResponseTopic(Struct):
    error_code: int = 0
    name: str | None = ""
    topic_id: uuid.UUID = ZERO_UUID
    is_internal: bool = False
    partitions: list[MetadataResponsePartition] = field(default_factory=list)
    topic_authorized_operations: int = -2147483648
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("name", "string", Versions(0), nullable=Versions(12), default=""),
        Field("topic_id", "uuid", Versions(10), default=ZERO_UUID),
        Field("is_internal", "bool", Versions(1), default=False),
        Field("partitions", "array", Versions(0), struct=MetadataResponsePartition),
        Field("topic_authorized_operations", "int32", Versions(8), default=-2147483648),
    )


@dataclass(kw_only=True, slots=True)
class MetadataResponse(Message):
    API_KEY: ClassVar[int] = 3
    VALID: ClassVar[Versions] = Versions(0, 13)
    FLEXIBLE: ClassVar[Versions] = Versions(9)
    throttle_time_ms: int = 0
    brokers: list[MetadataResponseBroker] = field(default_factory=list)
    cluster_id: str | None = None
    controller_id: int = -1
    topics: list[MetadataResponseTopic] = field(default_factory=list)
    cluster_authorized_operations: int = -2147483648
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(3), default=0),
        Field("brokers", "array", Versions(0), struct=MetadataResponseBroker),
        Field("cluster_id", "string", Versions(2), nullable=Versions(2), default=None),
        Field("controller_id", "int32", Versions(1), default=-1),
        Field("topics", "array", Versions(0), struct=MetadataResponseTopic),
        Field("cluster_authorized_operations", "int32", Versions(8, 10), default=-2147483648),
        Field("error_code", "int16", Versions(13), default=0),
    )
