"""AlterConfigs request and response bodies (API key 33), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class AlterConfigsRequestAlterableConfig(Struct):
    name: str = ""
    value: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("value", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class AlterConfigsResource(Struct):
    resource_type: int = 0
    resource_name: str = ""
    configs: list[AlterConfigsRequestAlterableConfig] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("configs", "array", Versions(0), struct=AlterConfigsRequestAlterableConfig),
    )


@dataclass(kw_only=True, slots=True)
class AlterConfigsRequest(Message):
    API_KEY: ClassVar[int] = 33
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    resources: list[AlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resources", "array", Versions(0), struct=AlterConfigsResource),
        Field("validate_only", "bool", Versions(0), default=False),
    )


@dataclass(kw_only=True, slots=True)
class AlterConfigsResourceResponse(Struct):
    error_code: int = 0
    error_message: str | None = ""
    resource_type: int = 0
    resource_name: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class AlterConfigsResponse(Message):
    API_KEY: ClassVar[int] = 33
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    responses: list[AlterConfigsResourceResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("responses", "array", Versions(0), struct=AlterConfigsResourceResponse),
    )
