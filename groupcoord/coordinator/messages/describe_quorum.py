"""DescribeQuorum request and response bodies (API key 55), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeQuorumRequestPartitionData(Struct):
    partition_index: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("partition_index", "int32", Versions(0), default=0),)


@dataclass(kw_only=True, slots=True)
class DescribeQuorumRequestTopicData(Struct):
    topic_name: str = ""
    partitions: list[DescribeQuorumRequestPartitionData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DescribeQuorumRequestPartitionData),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumRequest(Message):
    API_KEY: ClassVar[int] = 55
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    topics: list[DescribeQuorumRequestTopicData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=DescribeQuorumRequestTopicData),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponseReplicaState(Struct):
    replica_id: int = 0
    replica_directory_id: uuid.UUID = ZERO_UUID
    log_end_offset: int = 0
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("replica_id", "int32", Versions(0), default=0),
        Field("replica_directory_id", "uuid", Versions(2), default=ZERO_UUID),
        Field("log_end_offset", "int64", Versions(0), default=0),
        Field("last_fetch_timestamp", "int64", Versions(1), default=-1),
        Field("last_caught_up_timestamp", "int64", Versions(1), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponsePartitionData(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = ""
    leader_id: int = 0
    leader_epoch: int = 0
    high_watermark: int = 0
    current_voters: list[DescribeQuorumResponseReplicaState] = field(default_factory=list)
    observers: list[DescribeQuorumResponseReplicaState] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(2), nullable=Versions(2), default=""),
        Field("leader_id", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(0), default=0),
        Field("high_watermark", "int64", Versions(0), default=0),
        Field("current_voters", "array", Versions(0), struct=DescribeQuorumResponseReplicaState),
        Field("observers", "array", Versions(0), struct=DescribeQuorumResponseReplicaState),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponseTopicData(Struct):
    topic_name: str = ""
    partitions: list[DescribeQuorumResponsePartitionData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DescribeQuorumResponsePartitionData),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponseListener(Struct):
    name: str = ""
    host: str = ""
    port: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(2), default=""),
        Field("host", "string", Versions(2), default=""),
        Field("port", "uint16", Versions(2), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponseNode(Struct):
    node_id: int = 0
    listeners: list[DescribeQuorumResponseListener] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("node_id", "int32", Versions(2), default=0),
        Field("listeners", "array", Versions(2), struct=DescribeQuorumResponseListener),
    )


@dataclass(kw_only=True, slots=True)
class DescribeQuorumResponse(Message):
    API_KEY: ClassVar[int] = 55
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    error_code: int = 0
    error_message: str | None = ""
    topics: list[DescribeQuorumResponseTopicData] = field(default_factory=list)
    nodes: list[DescribeQuorumResponseNode] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(2), nullable=Versions(2), default=""),
        Field("topics", "array", Versions(0), struct=DescribeQuorumResponseTopicData),
        Field("nodes", "array", Versions(2), struct=DescribeQuorumResponseNode),
    )
