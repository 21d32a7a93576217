"""FindCoordinator request and response bodies (API key 10), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class FindCoordinatorRequest(Message):
    API_KEY: ClassVar[int] = 10
    VALID: ClassVar[Versions] = Versions(0, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    key: str = ""
    key_type: int = 0
    coordinator_keys: list[str] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("key", "string", Versions(0, 3), default=""),
        Field("key_type", "int8", Versions(1), default=0),
        Field("coordinator_keys", "array", Versions(4), item="string"),
    )


@dataclass(kw_only=True, slots=True)
class FindCoordinatorResponseCoordinator(Struct):
    key: str = ""
    node_id: int = 0
    host: str = ""
    port: int = 0
    error_code: int = 0
    error_message: str | None = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("key", "string", Versions(4), default=""),
        Field("node_id", "int32", Versions(4), default=0),
        Field("host", "string", Versions(4), default=""),
        Field("port", "int32", Versions(4), default=0),
        Field("error_code", "int16", Versions(4), default=0),
        Field("error_message", "string", Versions(4), nullable=Versions(4), default=""),
    )


@dataclass(kw_only=True, slots=True)
class FindCoordinatorResponse(Message):
    API_KEY: ClassVar[int] = 10
    VALID: ClassVar[Versions] = Versions(0, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = ""
    node_id: int = 0
    host: str = ""
    port: int = 0
    coordinators: list[FindCoordinatorResponseCoordinator] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(0, 3), default=0),
        Field("error_message", "string", Versions(1, 3), nullable=Versions(1, 3), default=""),
        Field("node_id", "int32", Versions(0, 3), default=0),
        Field("host", "string", Versions(0, 3), default=""),
        Field("port", "int32", Versions(0, 3), default=0),
        Field("coordinators", "array", Versions(4), struct=FindCoordinatorResponseCoordinator),
    )
