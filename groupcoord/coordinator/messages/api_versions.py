"""ApiVersions request and response bodies (API key 18), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ApiVersionsRequest(Message):
    API_KEY: ClassVar[int] = 18
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    client_software_name: str = ""
    client_software_version: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("client_software_name", "string", Versions(3), default=""),
        Field("client_software_version", "string", Versions(3), default=""),
    )


@dataclass(kw_only=True, slots=True)
class ApiVersionsResponseApiVersion(Struct):
    api_key: int = 0
    min_version: int = 0
    max_version: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("api_key", "int16", Versions(0), default=0),
        Field("min_version", "int16", Versions(0), default=0),
        Field("max_version", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ApiVersionsResponseSupportedFeatureKey(Struct):
    name: str = ""
    min_version: int = 0
    max_version: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(3), default=""),
        Field("min_version", "int16", Versions(3), default=0),
        Field("max_version", "int16", Versions(3), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ApiVersionsResponseFinalizedFeatureKey(Struct):
    name: str = ""
    max_version_level: int = 0
    min_version_level: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(3), default=""),
        Field("max_version_level", "int16", Versions(3), default=0),
        Field("min_version_level", "int16", Versions(3), default=0),
    )


@dataclass(kw_only=True, slots=True)
class ApiVersionsResponse(Message):
    API_KEY: ClassVar[int] = 18
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    error_code: int = 0
    api_keys: list[ApiVersionsResponseApiVersion] = field(default_factory=list)
    throttle_time_ms: int = 0
    supported_features: list[ApiVersionsResponseSupportedFeatureKey] = field(default_factory=list)
    finalized_features_epoch: int = -1
    finalized_features: list[ApiVersionsResponseFinalizedFeatureKey] = field(default_factory=list)
    zk_migration_ready: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("api_keys", "array", Versions(0), struct=ApiVersionsResponseApiVersion),
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field(
            "supported_features",
            "array",
            Versions(3),
            tagged=Versions(3),
            tag=0,
            struct=ApiVersionsResponseSupportedFeatureKey,
        ),
        Field("finalized_features_epoch", "int64", Versions(3), tagged=Versions(3), tag=1, default=-1),
        Field(
            "finalized_features",
            "array",
            Versions(3),
            tagged=Versions(3),
            tag=2,
            struct=ApiVersionsResponseFinalizedFeatureKey,
        ),
        Field("zk_migration_ready", "bool", Versions(3), tagged=Versions(3), tag=3, default=False),
    )
