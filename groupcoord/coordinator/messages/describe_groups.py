"""DescribeGroups request and response bodies (API key 15), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeGroupsRequest(Message):
    API_KEY: ClassVar[int] = 15
    VALID: ClassVar[Versions] = Versions(0, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(5)
    groups: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("groups", "array", Versions(0), item="string"),
        Field("include_authorized_operations", "bool", Versions(3), default=False),
    )


@dataclass(kw_only=True, slots=True)
class DescribeGroupsResponseDescribedGroupMember(Struct):
    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_metadata: bytes = b""
    member_assignment: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(0), default=""),
        Field("group_instance_id", "string", Versions(4), nullable=Versions(4), default=None),
        Field("client_id", "string", Versions(0), default=""),
        Field("client_host", "string", Versions(0), default=""),
        Field("member_metadata", "bytes", Versions(0), default=b""),
        Field("member_assignment", "bytes", Versions(0), default=b""),
    )


@dataclass(kw_only=True, slots=True)
class DescribeGroupsResponseDescribedGroup(Struct):
    error_code: int = 0
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribeGroupsResponseDescribedGroupMember] = field(default_factory=list)
    authorized_operations: int = -2147483648
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(6), nullable=Versions(6), default=None),
        Field("group_id", "string", Versions(0), default=""),
        Field("group_state", "string", Versions(0), default=""),
        Field("protocol_type", "string", Versions(0), default=""),
        Field("protocol_data", "string", Versions(0), default=""),
        Field("members", "array", Versions(0), struct=DescribeGroupsResponseDescribedGroupMember),
        Field("authorized_operations", "int32", Versions(3), default=-2147483648),
    )


@dataclass(kw_only=True, slots=True)
class DescribeGroupsResponse(Message):
    API_KEY: ClassVar[int] = 15
    VALID: ClassVar[Versions] = Versions(0, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(5)
    throttle_time_ms: int = 0
    groups: list[DescribeGroupsResponseDescribedGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("groups", "array", Versions(0), struct=DescribeGroupsResponseDescribedGroup),
    )
