"""Produce request and response bodies (API key 0), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ProduceRequestPartitionProduceData(Struct):
    index: int = 0
    records: bytes | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("index", "int32", Versions(0), default=0),
        Field("records", "records", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class ProduceRequestTopicProduceData(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partition_data: list[ProduceRequestPartitionProduceData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 12), default=""),
        Field("topic_id", "uuid", Versions(13), default=ZERO_UUID),
        Field("partition_data", "array", Versions(0), struct=ProduceRequestPartitionProduceData),
    )


@dataclass(kw_only=True, slots=True)
class ProduceRequest(Message):
    API_KEY: ClassVar[int] = 0
    VALID: ClassVar[Versions] = Versions(3, 13)
    FLEXIBLE: ClassVar[Versions] = Versions(9)
    transactional_id: str | None = None
    acks: int = 0
    timeout_ms: int = 0
    topic_data: list[ProduceRequestTopicProduceData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("transactional_id", "string", Versions(3), nullable=Versions(3), default=None),
        Field("acks", "int16", Versions(0), default=0),
        Field("timeout_ms", "int32", Versions(0), default=0),
        Field("topic_data", "array", Versions(0), struct=ProduceRequestTopicProduceData),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponseBatchIndexAndErrorMessage(Struct):
    batch_index: int = 0
    batch_index_error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("batch_index", "int32", Versions(8), default=0),
        Field("batch_index_error_message", "string", Versions(8), nullable=Versions(8), default=None),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponseLeaderIdAndEpoch(Struct):
    leader_id: int = -1
    leader_epoch: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("leader_id", "int32", Versions(10), default=-1),
        Field("leader_epoch", "int32", Versions(10), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponsePartitionProduceResponse(Struct):
    index: int = 0
    error_code: int = 0
    base_offset: int = 0
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: list[ProduceResponseBatchIndexAndErrorMessage] = field(default_factory=list)
    error_message: str | None = None
    current_leader: ProduceResponseLeaderIdAndEpoch = field(default_factory=ProduceResponseLeaderIdAndEpoch)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("base_offset", "int64", Versions(0), default=0),
        Field("log_append_time_ms", "int64", Versions(2), default=-1),
        Field("log_start_offset", "int64", Versions(5), default=-1),
        Field("record_errors", "array", Versions(8), struct=ProduceResponseBatchIndexAndErrorMessage),
        Field("error_message", "string", Versions(8), nullable=Versions(8), default=None),
        Field(
            "current_leader", "struct", Versions(10), tagged=Versions(10), tag=0, struct=ProduceResponseLeaderIdAndEpoch
        ),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponseTopicProduceResponse(Struct):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partition_responses: list[ProduceResponsePartitionProduceResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0, 12), default=""),
        Field("topic_id", "uuid", Versions(13), default=ZERO_UUID),
        Field("partition_responses", "array", Versions(0), struct=ProduceResponsePartitionProduceResponse),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponseNodeEndpoint(Struct):
    node_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("node_id", "int32", Versions(10), default=0),
        Field("host", "string", Versions(10), default=""),
        Field("port", "int32", Versions(10), default=0),
        Field("rack", "string", Versions(10), nullable=Versions(10), default=None),
    )


@dataclass(kw_only=True, slots=True)
class ProduceResponse(Message):
    API_KEY: ClassVar[int] = 0
    VALID: ClassVar[Versions] = Versions(3, 13)
    FLEXIBLE: ClassVar[Versions] = Versions(9)
    responses: list[ProduceResponseTopicProduceResponse] = field(default_factory=list)
    throttle_time_ms: int = 0
    node_endpoints: list[ProduceResponseNodeEndpoint] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("responses", "array", Versions(0), struct=ProduceResponseTopicProduceResponse),
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("node_endpoints", "array", Versions(10), tagged=Versions(10), tag=0, struct=ProduceResponseNodeEndpoint),
    )
