"""ListGroups request and response bodies (API key 16), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ListGroupsRequest(Message):
    API_KEY: ClassVar[int] = 16
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    states_filter: list[str] = field(default_factory=list)
    types_filter: list[str] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("states_filter", "array", Versions(4), item="string"),
        Field("types_filter", "array", Versions(5), item="string"),
    )


@dataclass(kw_only=True, slots=True)
class ListGroupsResponseListedGroup(Struct):
    group_id: str = ""
    protocol_type: str = ""
    group_state: str = ""
    group_type: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("protocol_type", "string", Versions(0), default=""),
        Field("group_state", "string", Versions(4), default=""),
        Field("group_type", "string", Versions(5), default=""),
    )


@dataclass(kw_only=True, slots=True)
class ListGroupsResponse(Message):
    API_KEY: ClassVar[int] = 16
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    throttle_time_ms: int = 0
    error_code: int = 0
    groups: list[ListGroupsResponseListedGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("groups", "array", Versions(0), struct=ListGroupsResponseListedGroup),
    )
