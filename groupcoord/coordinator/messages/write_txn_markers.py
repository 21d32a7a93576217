"""WriteTxnMarkers request and response bodies (API key 27), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersRequestWritableTxnMarkerTopic(Struct):
    name: str = ""
    partition_indexes: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partition_indexes", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersRequestWritableTxnMarker(Struct):
    producer_id: int = 0
    producer_epoch: int = 0
    transaction_result: bool = False
    topics: list[WriteTxnMarkersRequestWritableTxnMarkerTopic] = field(default_factory=list)
    coordinator_epoch: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("producer_id", "int64", Versions(0), default=0),
        Field("producer_epoch", "int16", Versions(0), default=0),
        Field("transaction_result", "bool", Versions(0), default=False),
        Field("topics", "array", Versions(0), struct=WriteTxnMarkersRequestWritableTxnMarkerTopic),
        Field("coordinator_epoch", "int32", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersRequest(Message):
    API_KEY: ClassVar[int] = 27
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(1)
    markers: list[WriteTxnMarkersRequestWritableTxnMarker] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("markers", "array", Versions(0), struct=WriteTxnMarkersRequestWritableTxnMarker),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersResponseWritableTxnMarkerPartitionResult(Struct):
    partition_index: int = 0
    error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersResponseWritableTxnMarkerTopicResult(Struct):
    name: str = ""
    partitions: list[WriteTxnMarkersResponseWritableTxnMarkerPartitionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), struct=WriteTxnMarkersResponseWritableTxnMarkerPartitionResult),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersResponseWritableTxnMarkerResult(Struct):
    producer_id: int = 0
    topics: list[WriteTxnMarkersResponseWritableTxnMarkerTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("producer_id", "int64", Versions(0), default=0),
        Field("topics", "array", Versions(0), struct=WriteTxnMarkersResponseWritableTxnMarkerTopicResult),
    )


@dataclass(kw_only=True, slots=True)
class WriteTxnMarkersResponse(Message):
    API_KEY: ClassVar[int] = 27
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(1)
    markers: list[WriteTxnMarkersResponseWritableTxnMarkerResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("markers", "array", Versions(0), struct=WriteTxnMarkersResponseWritableTxnMarkerResult),
    )
