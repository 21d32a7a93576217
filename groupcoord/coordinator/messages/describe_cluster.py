"""DescribeCluster request and response bodies (API key 60), generated from the published Kafka schema."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class DescribeClusterRequest(Message):
    API_KEY: ClassVar[int] = 60
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    include_cluster_authorized_operations: bool = False
    endpoint_type: int = 1
    include_fenced_brokers: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("include_cluster_authorized_operations", "bool", Versions(0), default=False),
        Field("endpoint_type", "int8", Versions(1), default=1),
        Field("include_fenced_brokers", "bool", Versions(2), default=False),
    )


@dataclass(kw_only=True, slots=True)
class DescribeClusterBroker(Struct):
    broker_id: int = 0
    host: str = ""
    port: int = 0
    rack: str | None = None
    is_fenced: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("broker_id", "int32", Versions(0), default=0),
        Field("host", "string", Versions(0), default=""),
        Field("port", "int32", Versions(0), default=0),
        Field("rack", "string", Versions(0), nullable=Versions(0), default=None),
        Field("is_fenced", "bool", Versions(2), default=False),
    )


@dataclass(kw_only=True, slots=True)
class DescribeClusterResponse(Message):
    API_KEY: ClassVar[int] = 60
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    endpoint_type: int = 1
    cluster_id: str = ""
    controller_id: int = -1
    brokers: list[DescribeClusterBroker] = field(default_factory=list)
    cluster_authorized_operations: int = -2147483648
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("endpoint_type", "int8", Versions(1), default=1),
        Field("cluster_id", "string", Versions(0), default=""),
        Field("controller_id", "int32", Versions(0), default=-1),
        Field("brokers", "array", Versions(0), struct=DescribeClusterBroker),
        Field("cluster_authorized_operations", "int32", Versions(0), default=-2147483648),
    )
