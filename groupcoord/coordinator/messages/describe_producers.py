"""DescribeProducers request and response bodies (API key 61), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeProducersRequestTopicRequest(Struct):
    name: str = ""
    partition_indexes: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partition_indexes", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class DescribeProducersRequest(Message):
    API_KEY: ClassVar[int] = 61
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    topics: list[DescribeProducersRequestTopicRequest] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(0), struct=DescribeProducersRequestTopicRequest),
    )


@dataclass(kw_only=True, slots=True)
class DescribeProducersResponseProducerState(Struct):
    producer_id: int = 0
    producer_epoch: int = 0
    last_sequence: int = -1
    last_timestamp: int = -1
    coordinator_epoch: int = 0
    current_txn_start_offset: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("producer_id", "int64", Versions(0), default=0),
        Field("producer_epoch", "int32", Versions(0), default=0),
        Field("last_sequence", "int32", Versions(0), default=-1),
        Field("last_timestamp", "int64", Versions(0), default=-1),
        Field("coordinator_epoch", "int32", Versions(0), default=0),
        Field("current_txn_start_offset", "int64", Versions(0), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class DescribeProducersResponsePartitionResponse(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = None
    active_producers: list[DescribeProducersResponseProducerState] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("active_producers", "array", Versions(0), struct=DescribeProducersResponseProducerState),
    )


@dataclass(kw_only=True, slots=True)
class DescribeProducersResponseTopicResponse(Struct):
    name: str = ""
    partitions: list[DescribeProducersResponsePartitionResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=DescribeProducersResponsePartitionResponse),
    )


@dataclass(kw_only=True, slots=True)
class DescribeProducersResponse(Message):
    API_KEY: ClassVar[int] = 61
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    topics: list[DescribeProducersResponseTopicResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=DescribeProducersResponseTopicResponse),
    )
