"""ShareAcknowledge request and response bodies (API key 79), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeRequestAcknowledgementBatch(Struct):
    first_offset: int = 0
    last_offset: int = 0
    acknowledge_types: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("first_offset", "int64", Versions(0), default=0),
        Field("last_offset", "int64", Versions(0), default=0),
        Field("acknowledge_types", "array", Versions(0), item="int8"),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeRequestAcknowledgePartition(Struct):
    partition_index: int = 0
    acknowledgement_batches: list[ShareAcknowledgeRequestAcknowledgementBatch] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("acknowledgement_batches", "array", Versions(0), struct=ShareAcknowledgeRequestAcknowledgementBatch),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeRequestAcknowledgeTopic(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[ShareAcknowledgeRequestAcknowledgePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=ShareAcknowledgeRequestAcknowledgePartition),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeRequest(Message):
    API_KEY: ClassVar[int] = 79
    VALID: ClassVar[Versions] = Versions(1, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_id: str | None = None
    member_id: str | None = ""
    share_session_epoch: int = 0
    is_renew_ack: bool = False
    topics: list[ShareAcknowledgeRequestAcknowledgeTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("member_id", "string", Versions(0), nullable=Versions(0), default=""),
        Field("share_session_epoch", "int32", Versions(0), default=0),
        Field("is_renew_ack", "bool", Versions(2), default=False),
        Field("topics", "array", Versions(0), struct=ShareAcknowledgeRequestAcknowledgeTopic),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeResponseLeaderIdAndEpoch(Struct):
    leader_id: int = 0
    leader_epoch: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("leader_id", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeResponsePartitionData(Struct):
    partition_index: int = 0
    error_code: int = 0
    error_message: str | None = None
    current_leader: ShareAcknowledgeResponseLeaderIdAndEpoch = field(
        default_factory=ShareAcknowledgeResponseLeaderIdAndEpoch
    )
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("current_leader", "struct", Versions(0), struct=ShareAcknowledgeResponseLeaderIdAndEpoch),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeTopicResponse(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[ShareAcknowledgeResponsePartitionData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=ShareAcknowledgeResponsePartitionData),
    )


@dataclass(kw_only=True, slots=True)
class ShareAcknowledgeResponseNodeEndpoint(Struct):
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
class ShareAcknowledgeResponse(Message):
    API_KEY: ClassVar[int] = 79
    VALID: ClassVar[Versions] = Versions(1, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    acquisition_lock_timeout_ms: int = 0
    responses: list[ShareAcknowledgeTopicResponse] = field(default_factory=list)
    node_endpoints: list[ShareAcknowledgeResponseNodeEndpoint] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("acquisition_lock_timeout_ms", "int32", Versions(2), default=0),
        Field("responses", "array", Versions(0), struct=ShareAcknowledgeTopicResponse),
        Field("node_endpoints", "array", Versions(0), struct=ShareAcknowledgeResponseNodeEndpoint),
    )
