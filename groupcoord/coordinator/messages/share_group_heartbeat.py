"""ShareGroupHeartbeat request and response bodies (API key 76), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ShareGroupHeartbeatRequest(Message):
    API_KEY: ClassVar[int] = 76
    VALID: ClassVar[Versions] = Versions(1, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_id: str = ""
    member_id: str = ""
    member_epoch: int = 0
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("member_id", "string", Versions(0), default=""),
        Field("member_epoch", "int32", Versions(0), default=0),
        Field("rack_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("subscribed_topic_names", "array", Versions(0), nullable=Versions(0), item="string"),
    )


@dataclass(kw_only=True, slots=True)
class ShareGroupHeartbeatResponseTopicPartitions(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ShareGroupHeartbeatResponseAssignment(Struct):
    topic_partitions: list[ShareGroupHeartbeatResponseTopicPartitions] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_partitions", "array", Versions(0), struct=ShareGroupHeartbeatResponseTopicPartitions),
    )


@dataclass(kw_only=True, slots=True)
class ShareGroupHeartbeatResponse(Message):
    API_KEY: ClassVar[int] = 76
    VALID: ClassVar[Versions] = Versions(1, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: ShareGroupHeartbeatResponseAssignment | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("member_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("member_epoch", "int32", Versions(0), default=0),
        Field("heartbeat_interval_ms", "int32", Versions(0), default=0),
        Field("assignment", "struct", Versions(0), nullable=Versions(0), struct=ShareGroupHeartbeatResponseAssignment),
    )
