"""IncrementalAlterConfigs request and response bodies (API key 44), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class IncrementalAlterConfigsRequestAlterableConfig(Struct):
    name: str = ""
    config_operation: int = 0
    value: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("config_operation", "int8", Versions(0), default=0),
        Field("value", "string", Versions(0), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class IncrementalAlterConfigsRequestAlterConfigsResource(Struct):
    resource_type: int = 0
    resource_name: str = ""
    configs: list[IncrementalAlterConfigsRequestAlterableConfig] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("configs", "array", Versions(0), struct=IncrementalAlterConfigsRequestAlterableConfig),
    )


@dataclass(kw_only=True, slots=True)
class IncrementalAlterConfigsRequest(Message):
    API_KEY: ClassVar[int] = 44
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(1)
    resources: list[IncrementalAlterConfigsRequestAlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resources", "array", Versions(0), struct=IncrementalAlterConfigsRequestAlterConfigsResource),
        Field("validate_only", "bool", Versions(0), default=False),
    )


@dataclass(kw_only=True, slots=True)
class IncrementalAlterConfigsResponseAlterConfigsResourceResponse(Struct):
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
class IncrementalAlterConfigsResponse(Message):
    API_KEY: ClassVar[int] = 44
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(1)
    throttle_time_ms: int = 0
    responses: list[IncrementalAlterConfigsResponseAlterConfigsResourceResponse] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("responses", "array", Versions(0), struct=IncrementalAlterConfigsResponseAlterConfigsResourceResponse),
    )
