"""CreateAcls request and response bodies (API key 30), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class CreateAclsRequestAclCreation(Struct):
    resource_type: int = 0
    resource_name: str = ""
    resource_pattern_type: int = 3
    principal: str = ""
    host: str = ""
    operation: int = 0
    permission_type: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("resource_pattern_type", "int8", Versions(1), default=3),
        Field("principal", "string", Versions(0), default=""),
        Field("host", "string", Versions(0), default=""),
        Field("operation", "int8", Versions(0), default=0),
        Field("permission_type", "int8", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class CreateAclsRequest(Message):
    API_KEY: ClassVar[int] = 30
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    creations: list[CreateAclsRequestAclCreation] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("creations", "array", Versions(0), struct=CreateAclsRequestAclCreation),
    )


@dataclass(kw_only=True, slots=True)
class CreateAclsResponseAclCreationResult(Struct):
    error_code: int = 0
    error_message: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class CreateAclsResponse(Message):
    API_KEY: ClassVar[int] = 30
    VALID: ClassVar[Versions] = Versions(0, 3)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    results: list[CreateAclsResponseAclCreationResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("results", "array", Versions(0), struct=CreateAclsResponseAclCreationResult),
    )
