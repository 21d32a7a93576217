"""TxnOffsetCommit request and response bodies (API key 28), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = 0
    committed_offset: int = 0
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("committed_offset", "int64", Versions(0), default=0),
        Field("committed_leader_epoch", "int32", Versions(2), default=-1),
        Field("committed_metadata", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitRequestTopic(Struct):
    name: str = ""
    partitions: list[TxnOffsetCommitRequestPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=TxnOffsetCommitRequestPartition),
    )


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitRequest(Message):
    API_KEY: ClassVar[int] = 28
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    transactional_id: str = ""
    group_id: str = ""
    producer_id: int = 0
    producer_epoch: int = 0
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    topics: list[TxnOffsetCommitRequestTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("transactional_id", "string", Versions(0), default=""),
        Field("group_id", "string", Versions(0), default=""),
        Field("producer_id", "int64", Versions(0), default=0),
        Field("producer_epoch", "int16", Versions(0), default=0),
        Field("generation_id", "int32", Versions(3), default=-1),
        Field("member_id", "string", Versions(3), default=""),
        Field("group_instance_id", "string", Versions(3), nullable=Versions(3), default=None),
        Field("topics", "array", Versions(0), struct=TxnOffsetCommitRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitResponseTopic(Struct):
    name: str = ""
    partitions: list[TxnOffsetCommitResponsePartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=TxnOffsetCommitResponsePartition),
    )


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommitResponse(Message):
    API_KEY: ClassVar[int] = 28
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    throttle_time_ms: int = 0
    topics: list[TxnOffsetCommitResponseTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=TxnOffsetCommitResponseTopic),
    )
