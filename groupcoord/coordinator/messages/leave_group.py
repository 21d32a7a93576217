"""LeaveGroup request and response bodies (API key 13), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class LeaveGroupRequestMemberIdentity(Struct):
    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(3), default=""),
        Field("group_instance_id", "string", Versions(3), nullable=Versions(3), default=None),
        Field("reason", "string", Versions(5), nullable=Versions(5), default=None),
    )


@dataclass(kw_only=True, slots=True)
class LeaveGroupRequest(Message):
    API_KEY: ClassVar[int] = 13
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    group_id: str = ""
    member_id: str = ""
    members: list[LeaveGroupRequestMemberIdentity] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("member_id", "string", Versions(0, 2), default=""),
        Field("members", "array", Versions(3), struct=LeaveGroupRequestMemberIdentity),
    )


@dataclass(kw_only=True, slots=True)
class LeaveGroupResponseMemberResponse(Struct):
    member_id: str = ""
    group_instance_id: str | None = ""
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(3), default=""),
        Field("group_instance_id", "string", Versions(3), nullable=Versions(3), default=""),
        Field("error_code", "int16", Versions(3), default=0),
    )


@dataclass(kw_only=True, slots=True)
class LeaveGroupResponse(Message):
    API_KEY: ClassVar[int] = 13
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    error_code: int = 0
    members: list[LeaveGroupResponseMemberResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("members", "array", Versions(3), struct=LeaveGroupResponseMemberResponse),
    )
