"""JoinGroup request and response bodies (API key 11), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class JoinGroupRequestProtocol(Struct):
    name: str = ""
    metadata: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("metadata", "bytes", Versions(0), default=b""),
    )


@dataclass(kw_only=True, slots=True)
class JoinGroupRequest(Message):
    API_KEY: ClassVar[int] = 11
    VALID: ClassVar[Versions] = Versions(0, 9)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    group_id: str = ""
    session_timeout_ms: int = 0
    rebalance_timeout_ms: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str = ""
    protocols: list[JoinGroupRequestProtocol] = field(default_factory=list)
    reason: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("session_timeout_ms", "int32", Versions(0), default=0),
        Field("rebalance_timeout_ms", "int32", Versions(1), default=-1),
        Field("member_id", "string", Versions(0), default=""),
        Field("group_instance_id", "string", Versions(5), nullable=Versions(5), default=None),
        Field("protocol_type", "string", Versions(0), default=""),
        Field("protocols", "array", Versions(0), struct=JoinGroupRequestProtocol),
        Field("reason", "string", Versions(8), nullable=Versions(8), default=None),
    )


@dataclass(kw_only=True, slots=True)
class JoinGroupResponseMember(Struct):
    member_id: str = ""
    group_instance_id: str | None = None
    metadata: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(0), default=""),
        Field("group_instance_id", "string", Versions(5), nullable=Versions(5), default=None),
        Field("metadata", "bytes", Versions(0), default=b""),
    )


@dataclass(kw_only=True, slots=True)
class JoinGroupResponse(Message):
    API_KEY: ClassVar[int] = 11
    VALID: ClassVar[Versions] = Versions(0, 9)
    FLEXIBLE: ClassVar[Versions] = Versions(6)
    throttle_time_ms: int = 0
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = ""
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: list[JoinGroupResponseMember] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(2), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("generation_id", "int32", Versions(0), default=-1),
        Field("protocol_type", "string", Versions(7), nullable=Versions(7), default=None),
        Field("protocol_name", "string", Versions(0), nullable=Versions(7), default=""),
        Field("leader", "string", Versions(0), default=""),
        Field("skip_assignment", "bool", Versions(9), default=False),
        Field("member_id", "string", Versions(0), default=""),
        Field("members", "array", Versions(0), struct=JoinGroupResponseMember),
    )
