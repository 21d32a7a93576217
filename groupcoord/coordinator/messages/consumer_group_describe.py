"""ConsumerGroupDescribe request and response bodies (API key 69), generated from the published Kafka schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import ZERO_UUID, Field, Message, Struct, Versions


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeRequest(Message):
    API_KEY: ClassVar[int] = 69
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    group_ids: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("group_ids", "array", Versions(0), item="string"),
        Field("include_authorized_operations", "bool", Versions(0), default=False),
    )


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeResponseTopicPartitions(Struct):
    topic_id: uuid.UUID = ZERO_UUID
    topic_name: str = ""
    partitions: list[int] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_id", "uuid", Versions(0), default=ZERO_UUID),
        Field("topic_name", "string", Versions(0), default=""),
        Field("partitions", "array", Versions(0), item="int32"),
    )


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeResponseAssignment(Struct):
    topic_partitions: list[ConsumerGroupDescribeResponseTopicPartitions] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("topic_partitions", "array", Versions(0), struct=ConsumerGroupDescribeResponseTopicPartitions),
    )


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeResponseMember(Struct):
    member_id: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    member_epoch: int = 0
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    assignment: ConsumerGroupDescribeResponseAssignment = field(default_factory=ConsumerGroupDescribeResponseAssignment)
    target_assignment: ConsumerGroupDescribeResponseAssignment = field(
        default_factory=ConsumerGroupDescribeResponseAssignment
    )
    member_type: int = -1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("member_id", "string", Versions(0), default=""),
        Field("instance_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("rack_id", "string", Versions(0), nullable=Versions(0), default=None),
        Field("member_epoch", "int32", Versions(0), default=0),
        Field("client_id", "string", Versions(0), default=""),
        Field("client_host", "string", Versions(0), default=""),
        Field("subscribed_topic_names", "array", Versions(0), item="string"),
        Field("subscribed_topic_regex", "string", Versions(0), nullable=Versions(0), default=None),
        Field("assignment", "struct", Versions(0), struct=ConsumerGroupDescribeResponseAssignment),
        Field("target_assignment", "struct", Versions(0), struct=ConsumerGroupDescribeResponseAssignment),
        Field("member_type", "int8", Versions(1), default=-1),
    )


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeResponseDescribedGroup(Struct):
    error_code: int = 0
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[ConsumerGroupDescribeResponseMember] = field(default_factory=list)
    authorized_operations: int = -2147483648
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("group_id", "string", Versions(0), default=""),
        Field("group_state", "string", Versions(0), default=""),
        Field("group_epoch", "int32", Versions(0), default=0),
        Field("assignment_epoch", "int32", Versions(0), default=0),
        Field("assignor_name", "string", Versions(0), default=""),
        Field("members", "array", Versions(0), struct=ConsumerGroupDescribeResponseMember),
        Field("authorized_operations", "int32", Versions(0), default=-2147483648),
    )


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribeResponse(Message):
    API_KEY: ClassVar[int] = 69
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions(0)
    throttle_time_ms: int = 0
    groups: list[ConsumerGroupDescribeResponseDescribedGroup] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("throttle_time_ms", "int32", Versions(0), default=0),
        Field("groups", "array", Versions(0), struct=ConsumerGroupDescribeResponseDescribedGroup),
    )
