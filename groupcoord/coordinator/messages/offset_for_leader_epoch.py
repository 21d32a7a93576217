"""OffsetForLeaderEpoch request and response bodies (API key 23), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochRequestOffsetForLeaderPartition(Struct):
    partition: int = 0
    current_leader_epoch: int = -1
    leader_epoch: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition", "int32", Versions(0), default=0),
        Field("current_leader_epoch", "int32", Versions(2), default=-1),
        Field("leader_epoch", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochRequestOffsetForLeaderTopic(Struct):
    topic: str = ""
    partitions: list[OffsetForLeaderEpochRequestOffsetForLeaderPartition] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=OffsetForLeaderEpochRequestOffsetForLeaderPartition),
    )


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochRequest(Message):
    API_KEY: ClassVar[int] = 23
    VALID: ClassVar[Versions] = Versions(2, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    replica_id: int = -2
    topics: list[OffsetForLeaderEpochRequestOffsetForLeaderTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("replica_id", "int32", Versions(3), default=-2),
        Field("topics", "array", Versions(0), struct=OffsetForLeaderEpochRequestOffsetForLeaderTopic),
    )


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochResponseEpochEndOffset(Struct):
    error_code: int = 0
    partition: int = 0
    leader_epoch: int = -1
    end_offset: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("partition", "int32", Versions(0), default=0),
        Field("leader_epoch", "int32", Versions(1), default=-1),
        Field("end_offset", "int64", Versions(0), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochResponseOffsetForLeaderTopicResult(Struct):
    topic: str = ""
    partitions: list[OffsetForLeaderEpochResponseEpochEndOffset] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=OffsetForLeaderEpochResponseEpochEndOffset),
    )


@dataclass(kw_only=True, slots=True)
class OffsetForLeaderEpochResponse(Message):
    API_KEY: ClassVar[int] = 23
    VALID: ClassVar[Versions] = Versions(2, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    topics: list[OffsetForLeaderEpochResponseOffsetForLeaderTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(2), default=0),
        Field("topics", "array", Versions(0), struct=OffsetForLeaderEpochResponseOffsetForLeaderTopicResult),
    )
