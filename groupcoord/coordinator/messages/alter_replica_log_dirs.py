"""AlterReplicaLogDirs request and response bodies (API key 34), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsRequestAlterReplicaLogDirTopic(Struct):
    name: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsRequestAlterReplicaLogDir(Struct):
    path: str = ""
    topics: list[AlterReplicaLogDirsRequestAlterReplicaLogDirTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("path", "string", Versions(0), default=""),
        Field("topics", "array", Versions(0), struct=AlterReplicaLogDirsRequestAlterReplicaLogDirTopic),
    )


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsRequest(Message):
    API_KEY: ClassVar[int] = 34
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    dirs: list[AlterReplicaLogDirsRequestAlterReplicaLogDir] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("dirs", "array", Versions(0), struct=AlterReplicaLogDirsRequestAlterReplicaLogDir),
    )


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsResponseAlterReplicaLogDirPartitionResult(Struct):
    partition_index: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsResponseAlterReplicaLogDirTopicResult(Struct):
    topic_name: str = ""
    partitions: list[AlterReplicaLogDirsResponseAlterReplicaLogDirPartitionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=AlterReplicaLogDirsResponseAlterReplicaLogDirPartitionResult),
    )


@dataclass(kw_only=True, slots=True)
class AlterReplicaLogDirsResponse(Message):
    API_KEY: ClassVar[int] = 34
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    throttle_time_ms: int = 0
    results: list[AlterReplicaLogDirsResponseAlterReplicaLogDirTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("results", "array", Versions(0), struct=AlterReplicaLogDirsResponseAlterReplicaLogDirTopicResult),
    )
