"""DeleteAcls request and response bodies (API key 31), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DeleteAclsFilter(Struct):
    resource_type_filter: int = 0
    resource_name_filter: str | None = ""
    pattern_type_filter: int = 3
    principal_filter: str | None = ""
    host_filter: str | None = ""
    operation: int = 0
    permission_type: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type_filter", "int8", Versions(0), default=0),
        Field("resource_name_filter", "string", Versions(0), nullable=Versions(0), default=""),
        Field("pattern_type_filter", "int8", Versions(1), default=3),
        Field("principal_filter", "string", Versions(0), nullable=Versions(0), default=""),
        Field("host_filter", "string", Versions(0), nullable=Versions(0), default=""),
        Field("operation", "int8", Versions(0), default=0),
        Field("permission_type", "int8", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteAclsRequest(Message):
    API_KEY: ClassVar[int] = 31
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    filters: list[DeleteAclsFilter] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("filters", "array", Versions(0), struct=DeleteAclsFilter),)


@dataclass(kw_only=True, slots=True)
class DeleteAclsMatchingAcl(Struct):
    error_code: int = 0
    error_message: str | None = ""
    resource_type: int = 0
    resource_name: str = ""
    pattern_type: int = 3
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("pattern_type", "int8", Versions(1), default=3),
        Field("principal", "string", Versions(0), default=""),
        Field("host", "string", Versions(0), default=""),
        Field("operation", "int8", Versions(0), default=0),
        Field("permission_type", "int8", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteAclsFilterResult(Struct):
    error_code: int = 0
    error_message: str | None = ""
    matching_acls: list[DeleteAclsMatchingAcl] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("matching_acls", "array", Versions(0), struct=DeleteAclsMatchingAcl),
    )


@dataclass(kw_only=True, slots=True)
class DeleteAclsResponse(Message):
    API_KEY: ClassVar[int] = 31
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    filter_results: list[DeleteAclsFilterResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("filter_results", "array", Versions(0), struct=DeleteAclsFilterResult),
    )
