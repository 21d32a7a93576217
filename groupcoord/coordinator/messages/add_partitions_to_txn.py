"""AddPartitionsToTxn request and response bodies (API key 24), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnTopic(Struct):
    name: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnTransaction(Struct):
    transactional_id: str = ""
    producer_id: int = 0
    producer_epoch: int = 0
    verify_only: bool = False
    topics: list[AddPartitionsToTxnTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("transactional_id", "string", Versions(4), default=""),
        Field("producer_id", "int64", Versions(4), default=0),
        Field("producer_epoch", "int16", Versions(4), default=0),
        Field("verify_only", "bool", Versions(4), default=False),
        Field("topics", "array", Versions(4), struct=AddPartitionsToTxnTopic),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnRequest(Message):
    API_KEY: ClassVar[int] = 24
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    transactions: list[AddPartitionsToTxnTransaction] = field(default_factory=list)
    v3_and_below_transactional_id: str = ""
    v3_and_below_producer_id: int = 0
    v3_and_below_producer_epoch: int = 0
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("transactions", "array", Versions(4), struct=AddPartitionsToTxnTransaction),
        Field("v3_and_below_transactional_id", "string", Versions(0, 3), default=""),
        Field("v3_and_below_producer_id", "int64", Versions(0, 3), default=0),
        Field("v3_and_below_producer_epoch", "int16", Versions(0, 3), default=0),
        Field("v3_and_below_topics", "array", Versions(0, 3), struct=AddPartitionsToTxnTopic),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = 0
    partition_error_code: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_index", "int32", Versions(0), default=0),
        Field("partition_error_code", "int16", Versions(0), default=0),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnTopicResult(Struct):
    name: str = ""
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", "string", Versions(0), default=""),
        Field("results_by_partition", "array", Versions(0), struct=AddPartitionsToTxnPartitionResult),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnResult(Struct):
    transactional_id: str = ""
    topic_results: list[AddPartitionsToTxnTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("transactional_id", "string", Versions(4), default=""),
        Field("topic_results", "array", Versions(4), struct=AddPartitionsToTxnTopicResult),
    )


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxnResponse(Message):
    API_KEY: ClassVar[int] = 24
    VALID: ClassVar[Versions] = Versions(0, 5)
    FLEXIBLE: ClassVar[Versions] = Versions(3)
    throttle_time_ms: int = 0
    error_code: int = 0
    results_by_transaction: list[AddPartitionsToTxnResult] = field(default_factory=list)
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(4), default=0),
        Field("results_by_transaction", "array", Versions(4), struct=AddPartitionsToTxnResult),
        Field("results_by_topic_v3_and_below", "array", Versions(0, 3), struct=AddPartitionsToTxnTopicResult),
    )
