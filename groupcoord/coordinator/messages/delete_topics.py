"""DeleteTopics request and response bodies (API key 20), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DeleteTopicsRequestDeleteTopicState(Struct):
    name: str | None = None
    topic_id: uuid.UUID = ZERO_UUID
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(6), nullable=Versions(6), default=None),
        Field("topic_id", "uuid", Versions(6), default=ZERO_UUID),
    )


@dataclass(kw_only=True, slots=True)
class DeleteTopicsRequest(Message):
    API_KEY: ClassVar[int] = 20
    VALID: ClassVar[Versions] = Versions(1, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    topics: list[DeleteTopicsRequestDeleteTopicState] = field(default_factory=list)
    topic_names: list[str] = field(default_factory=list)
    timeout_ms: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topics", "array", Versions(6), struct=DeleteTopicsRequestDeleteTopicState),
        Field("topic_names", "array", Versions(0, 5), item="string"),
        Field("timeout_ms", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class DeleteTopicsResponseDeletableTopicResult(Struct):
    name: str | None = ""
    topic_id: uuid.UUID = ZERO_UUID
    error_code: int = 0
    error_message: str | None = None
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), nullable=Versions(6), default=""),
        Field("topic_id", "uuid", Versions(6), default=ZERO_UUID),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(5), nullable=Versions(5), default=None),
    )


@dataclass(kw_only=True, slots=True)
class DeleteTopicsResponse(Message):
    API_KEY: ClassVar[int] = 20
    VALID: ClassVar[Versions] = Versions(1, 6)
    FLEXIBLE: ClassVar[Versions] = Versions(4)
    throttle_time_ms: int = 0
    responses: list[DeleteTopicsResponseDeletableTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(1), default=0),
        Field("responses", "array", Versions(0), struct=DeleteTopicsResponseDeletableTopicResult),
    )
