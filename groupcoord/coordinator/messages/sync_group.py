"""SyncGroup request and response bodies (API key 14), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class SyncGroupRequestAssignment(Struct):
    member_id: str = ""
    assignment: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(0), default=""),
        Field("assignment", "bytes", Versions(0), default=b""),
    )


@dataclass(kw_only=True, slots=True)
class SyncGroupRequest(Message):
    API_KEY: ClassVar[int] = 14
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    group_id: str = ""
    generation_id: int = 0
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupRequestAssignment] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("generation_id", "int32", Versions(0), default=0),
        Field("member_id", "string", Versions(0), default=""),
        Field("group_instance_id", "string", Versions(3), nullable=Versions(3), default=None),
        Field("protocol_type", "string", Versions(5), nullable=Versions(5), default=None),
        Field("protocol_name", "string", Versions(5), nullable=Versions(5), default=None),
        Field("assignments", "array", Versions(0), struct=SyncGroupRequestAssignment),
    )


@dataclass(kw_only=True, slots=True)
class SyncGroupResponse(Message):
    API_KEY: ClassVar[int] = 14
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("protocol_type", "string", Versions(5), nullable=Versions(5), default=None),
        Field("protocol_name", "string", Versions(5), nullable=Versions(5), default=None),
        Field("assignment", "bytes", Versions(0), default=b""),
    )
