"""DescribeConfigs request and response bodies (API key 32), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeConfigsResource(Struct):
    resource_type: int = 0
    resource_name: str = ""
    configuration_keys: list[str] | None = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("configuration_keys", "array", Versions(0), nullable=Versions(0), item="string"),
    )


@dataclass(kw_only=True, slots=True)
class DescribeConfigsRequest(Message):
    API_KEY: ClassVar[int] = 32
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    resources: list[DescribeConfigsResource] = field(default_factory=list)
    include_synonyms: bool = False
    include_documentation: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resources", "array", Versions(0), struct=DescribeConfigsResource),
        Field("include_synonyms", "bool", Versions(1), default=False),
        Field("include_documentation", "bool", Versions(3), default=False),
    )


@dataclass(kw_only=True, slots=True)
class DescribeConfigsSynonym(Struct):
    name: str = ""
    value: str | None = ""
    source: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(1), default=""),
        Field("value", "string", Versions(1), nullable=Versions(0), default=""),
        Field("source", "int8", Versions(1), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DescribeConfigsResourceResult(Struct):
    name: str = ""
    value: str | None = ""
    read_only: bool = False
    is_default: bool = False
    config_source: int = -1
    is_sensitive: bool = False
    synonyms: list[DescribeConfigsSynonym] = field(default_factory=list)
    config_type: int = 0
    documentation: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("value", "string", Versions(0), nullable=Versions(0), default=""),
        Field("read_only", "bool", Versions(0), default=False),
        Field("is_default", "bool", Versions(0, 0), default=False),
        Field("config_source", "int8", Versions(1), default=-1),
        Field("is_sensitive", "bool", Versions(0), default=False),
        Field("synonyms", "array", Versions(1), struct=DescribeConfigsSynonym),
        Field("config_type", "int8", Versions(3), default=0),
        Field("documentation", "string", Versions(3), nullable=Versions(0), default=""),
    )


@dataclass(kw_only=True, slots=True)
class DescribeConfigsResult(Struct):
    error_code: int = 0
    error_message: str | None = ""
    resource_type: int = 0
    resource_name: str = ""
    configs: list[DescribeConfigsResourceResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=""),
        Field("resource_type", "int8", Versions(0), default=0),
        Field("resource_name", "string", Versions(0), default=""),
        Field("configs", "array", Versions(0), struct=DescribeConfigsResourceResult),
    )


@dataclass(kw_only=True, slots=True)
class DescribeConfigsResponse(Message):
    API_KEY: ClassVar[int] = 32
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    results: list[DescribeConfigsResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("results", "array", Versions(0), struct=DescribeConfigsResult),
    )
