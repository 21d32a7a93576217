"""Heartbeat request and response bodies (API key 12), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Versions


@dataclass(kw_only=True, slots=True)
class HeartbeatRequest(Message):
    API_KEY: ClassVar[int] = 12
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    group_id: str = ""
    generation_id: int = 0
    member_id: str = ""
    group_instance_id: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("generation_id", "int32", Versions(0), default=0),
        Field("member_id", "string", Versions(0), default=""),
        Field("group_instance_id", "string", Versions(3), nullable=Versions(3), default=None),
    )


@dataclass(kw_only=True, slots=True)
class HeartbeatResponse(Message):
    API_KEY: ClassVar[int] = 12
    VALID: ClassVar[Versions] = Versions(0, 4)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )
