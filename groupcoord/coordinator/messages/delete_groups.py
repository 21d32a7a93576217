"""DeleteGroups request and response bodies (API key 42), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DeleteGroupsRequest(Message):
    API_KEY: ClassVar[int] = 42
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    groups_names: list[str] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("groups_names", "array", Versions(0), item="string"),)


@dataclass(kw_only=True, slots=True)
class DeleteGroupsResponseDeletableGroupResult(Struct):
    group_id: str = ""
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteGroupsResponse(Message):
    API_KEY: ClassVar[int] = 42
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    results: list[DeleteGroupsResponseDeletableGroupResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("results", "array", Versions(0), struct=DeleteGroupsResponseDeletableGroupResult),
    )
