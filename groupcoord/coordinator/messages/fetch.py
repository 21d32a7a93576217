"""Fetch request and response bodies (API key 1), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class FetchRequestReplicaState(Struct):
    replica_id: int = -1
    replica_epoch: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("replica_id", "int32", Versions(15), default=-1),
        Field("replica_epoch", "int64", Versions(15), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class FetchPartition(Struct):
    partition: int = 0
    current_leader_epoch: int = -1
    fetch_offset: int = 0
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    partition_max_bytes: int = 0
    replica_directory_id: uuid.UUID = ZERO_UUID
    high_watermark: int = 9223372036854775807
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition", "int32", Versions(0), default=0),
        Field("current_leader_epoch", "int32", Versions(9), default=-1),
        Field("fetch_offset", "int64", Versions(0), default=0),
        Field("last_fetched_epoch", "int32", Versions(12), default=-1),
        Field("log_start_offset", "int64", Versions(5), default=-1),
        Field("partition_max_bytes", "int32", Versions(0), default=0),
        Field("replica_directory_id", "uuid", Versions(17), tagged=Versions(17), tag=0, default=ZERO_UUID),
        Field("high_watermark", "int64", Versions(18), tagged=Versions(18), tag=1, default=9223372036854775807),
    )


@dataclass(kw_only=True, slots=True)
class FetchTopic(Struct):
    topic: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[FetchPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0, 12), default=""),
        Field("topic_id", "uuid", Versions(13), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=FetchPartition),
    )


@dataclass(kw_only=True, slots=True)
class FetchRequestForgottenTopic(Struct):
    topic: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(7, 12), default=""),
        Field("topic_id", "uuid", Versions(13), default=ZERO_UUID),
        Field("partitions", "array", Versions(7), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class FetchRequest(Message):
    API_KEY: ClassVar[int] = 1
    VALID: ClassVar[Versions] = Versions(4, 18)
    FLEXIBLE: ClassVar[Versions] = Versions(12)
    cluster_id: str | None = None
    replica_id: int = -1
    replica_state: FetchRequestReplicaState = field(default_factory=FetchRequestReplicaState)
    max_wait_ms: int = 0
    min_bytes: int = 0
    max_bytes: int = 2147483647
    isolation_level: int = 0
    session_id: int = 0
    session_epoch: int = -1
    topics: list[FetchTopic] = field(default_factory=list)
    forgotten_topics_data: list[FetchRequestForgottenTopic] = field(default_factory=list)
    rack_id: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("cluster_id", "string", Versions(12), nullable=Versions(12), tagged=Versions(12), tag=0, default=None),
        Field("replica_id", "int32", Versions(0, 14), default=-1),
        Field("replica_state", "struct", Versions(15), tagged=Versions(15), tag=1, struct=FetchRequestReplicaState),
        Field("max_wait_ms", "int32", Versions(0), default=0),
        Field("min_bytes", "int32", Versions(0), default=0),
        Field("max_bytes", "int32", Versions(3), default=2147483647),
        Field("isolation_level", "int8", Versions(4), default=0),
        Field("session_id", "int32", Versions(7), default=0),
        Field("session_epoch", "int32", Versions(7), default=-1),
        Field("topics", "array", Versions(0), struct=FetchTopic),
        Field("forgotten_topics_data", "array", Versions(7), struct=FetchRequestForgottenTopic),
        Field("rack_id", "string", Versions(11), default=""),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponseEpochEndOffset(Struct):
    epoch: int = -1
    end_offset: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("epoch", "int32", Versions(12), default=-1),
        Field("end_offset", "int64", Versions(12), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponseLeaderIdAndEpoch(Struct):
    leader_id: int = -1
    leader_epoch: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("leader_id", "int32", Versions(12), default=-1),
        Field("leader_epoch", "int32", Versions(12), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponseSnapshotId(Struct):
    end_offset: int = -1
    epoch: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("end_offset", "int64", Versions(0), default=-1),
        Field("epoch", "int32", Versions(0), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponseAbortedTransaction(Struct):
    producer_id: int = 0
    first_offset: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("producer_id", "int64", Versions(4), default=0),
        Field("first_offset", "int64", Versions(4), default=0),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponsePartitionData(Struct):
    partition_index: int = 0
    error_code: int = 0
    high_watermark: int = 0
    last_stable_offset: int = -1
    log_start_offset: int = -1
    diverging_epoch: FetchResponseEpochEndOffset = field(default_factory=FetchResponseEpochEndOffset)
    current_leader: FetchResponseLeaderIdAndEpoch = field(default_factory=FetchResponseLeaderIdAndEpoch)
    snapshot_id: FetchResponseSnapshotId = field(default_factory=FetchResponseSnapshotId)
    aborted_transactions: list[FetchResponseAbortedTransaction] | None = field(default_factory=list)
    preferred_read_replica: int = -1
    records: bytes | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("high_watermark", "int64", Versions(0), default=0),
        Field("last_stable_offset", "int64", Versions(4), default=-1),
        Field("log_start_offset", "int64", Versions(5), default=-1),
        Field(
            "diverging_epoch", "struct", Versions(12), tagged=Versions(12), tag=0, struct=FetchResponseEpochEndOffset
        ),
        Field(
            "current_leader", "struct", Versions(12), tagged=Versions(12), tag=1, struct=FetchResponseLeaderIdAndEpoch
        ),
        Field("snapshot_id", "struct", Versions(12), tagged=Versions(12), tag=2, struct=FetchResponseSnapshotId),
        Field(
            "aborted_transactions", "array", Versions(4), nullable=Versions(4), struct=FetchResponseAbortedTransaction
        ),
        Field("preferred_read_replica", "int32", Versions(11), default=-1),
        Field("records", "records", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class FetchableTopicResponse(Struct):
    topic: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[FetchResponsePartitionData] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0, 12), default=""),
        Field("topic_id", "uuid", Versions(13), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), struct=FetchResponsePartitionData),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponseNodeEndpoint(Struct):
    node_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("node_id", "int32", Versions(16), default=0),
        Field("host", "string", Versions(16), default=""),
        Field("port", "int32", Versions(16), default=0),
        Field("rack", "string", Versions(16), nullable=Versions(16), default=None),
    )


@dataclass(kw_only=True, slots=True)
class FetchResponse(Message):
    API_KEY: ClassVar[int] = 1
    VALID: ClassVar[Versions] = Versions(4, 18)
    FLEXIBLE: ClassVar[Versions] = Versions(12)
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0
    responses: list[FetchableTopicResponse] = field(default_factory=list)
    node_endpoints: list[FetchResponseNodeEndpoint] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(7), default=0),
        Field("session_id", "int32", Versions(7), default=0),
        Field("responses", "array", Versions(0), struct=FetchableTopicResponse),
        Field("node_endpoints", "array", Versions(16), tagged=Versions(16), tag=0, struct=FetchResponseNodeEndpoint),
    )
