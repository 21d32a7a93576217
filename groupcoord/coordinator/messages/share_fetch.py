"""ShareFetch request and response bodies (API key 78), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ShareFetchRequestAcknowledgementBatch(Struct):
    first_offset: int = 0
    last_offset: int = 0
    acknowledge_types: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("first_offset", "int64", Versions(0), default=0),
        Field("last_offset", "int64", Versions(0), default=0),
        Field("acknowledge_types", "array", Versions(0), item="int8"),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchRequestFetchPartition(Struct):
    partition_index: int = 0
    partition_max_bytes: int = 0
    acknowledgement_batches: list[ShareFetchRequestAcknowledgementBatch] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("partition_max_bytes", "int32", Versions(0, 0), default=0),
        Field("acknowledgement_batches", "array", Versions(0), struct=ShareFetchRequestAcknowledgementBatch),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchRequestFetchTopic(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[ShareFetchRequestFetchPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=ShareFetchRequestFetchPartition),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchRequestForgottenTopic(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchRequest(Message):
    API_KEY: ClassVar[int] = 78
    VALID: ClassVar[Versions] = Versions(1, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_id: str | None = None
    member_id: str | None = ""
    share_session_epoch: int = 0
    max_wait_ms: int = 0
    min_bytes: int = 0
    max_bytes: int = 2147483647
    max_records: int = 0
    batch_size: int = 0
    share_acquire_mode: int = 0
    is_renew_ack: bool = False
    topics: list[ShareFetchRequestFetchTopic] = field(default_factory=list)
    forgotten_topics_data: list[ShareFetchRequestForgottenTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("member_id", "string", Versions(0), nullable=Versions(0), default=""),
        Field("share_session_epoch", "int32", Versions(0), default=0),
        Field("max_wait_ms", "int32", Versions(0), default=0),
        Field("min_bytes", "int32", Versions(0), default=0),
        Field("max_bytes", "int32", Versions(0), default=2147483647),
        Field("max_records", "int32", Versions(1), default=0),
        Field("batch_size", "int32", Versions(1), default=0),
        Field("share_acquire_mode", "int8", Versions(2), default=0),
        Field("is_renew_ack", "bool", Versions(2), default=False),
        Field("topics", "array", Versions(0), struct=ShareFetchRequestFetchTopic),
        Field("forgotten_topics_data", "array", Versions(0), struct=ShareFetchRequestForgottenTopic),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchResponseLeaderIdAndEpoch(Struct):
    leader_id: int = 0
    leader_epoch: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("leader_id", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchResponseAcquiredRecords(Struct):
    first_offset: int = 0
    last_offset: int = 0
    delivery_count: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("first_offset", "int64", Versions(0), default=0),
        Field("last_offset", "int64", Versions(0), default=0),
        Field("delivery_count", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchResponsePartitionData(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = None
    acknowledge_error_code: int = 0
    acknowledge_error_message: str | None = None
    current_leader: ShareFetchResponseLeaderIdAndEpoch = field(default_factory=ShareFetchResponseLeaderIdAndEpoch)
    records: bytes | None = None
    acquired_records: list[ShareFetchResponseAcquiredRecords] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("acknowledge_error_code", "int16", Versions(0), default=0),
        Field("acknowledge_error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("current_leader", "struct", Versions(0), struct=ShareFetchResponseLeaderIdAndEpoch),
        Field("records", "records", Versions(0), nullable=Versions(0, 0), default=None),
        Field("acquired_records", "array", Versions(0), struct=ShareFetchResponseAcquiredRecords),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchableTopicResponse(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[ShareFetchResponsePartitionData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=ShareFetchResponsePartitionData),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchResponseNodeEndpoint(Struct):
    node_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("node_id", "int32", Versions(0), default=0),
        Field("host", "string", Versions(0), default=""),
        Field("port", "int32", Versions(0), default=0),
        Field("rack", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class ShareFetchResponse(Message):
    API_KEY: ClassVar[int] = 78
    VALID: ClassVar[Versions] = Versions(1, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    acquisition_lock_timeout_ms: int = 0
    responses: list[ShareFetchableTopicResponse] = field(default_factory=list)
    node_endpoints: list[ShareFetchResponseNodeEndpoint] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("acquisition_lock_timeout_ms", "int32", Versions(1), default=0),
        Field("responses", "array", Versions(0), struct=ShareFetchableTopicResponse),
        Field("node_endpoints", "array", Versions(0), struct=ShareFetchResponseNodeEndpoint),
    )
