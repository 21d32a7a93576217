"""DeleteShareGroupOffsets request and response bodies (API key 92), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DeleteShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("topic_name", "string", Versions(0), default=""),)


@dataclass(kw_only=True, slots=True)
class DeleteShareGroupOffsetsRequest(Message):
    API_KEY: ClassVar[int] = 92
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_id: str = ""
    topics: list[DeleteShareGroupOffsetsRequestTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_id", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=DeleteShareGroupOffsetsRequestTopic),
    )


@dataclass(kw_only=True, slots=True)
class DeleteShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
    )


@dataclass(kw_only=True, slots=True)
class DeleteShareGroupOffsetsResponse(Message):
    API_KEY: ClassVar[int] = 92
    VALID: ClassVar[Versions] = Versions(0, 0)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    responses: list[DeleteShareGroupOffsetsResponseTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("responses", "array", Versions(0), struct=DeleteShareGroupOffsetsResponseTopic),
    )
