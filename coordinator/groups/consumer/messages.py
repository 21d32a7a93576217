"""ConsumerGroupHeartbeat (apiKey 68) and ConsumerGroupDescribe (apiKey 69) as dataclasses.

Field names are the Kafka schema field names in snake_case so a gateway converts mechanically;
nested structs are named after their role because two schemas both call theirs TopicPartitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.errors import ErrorCode
from coordinator.groups.context import RequestContext as RequestContext  # re-exported

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# KIP-1082: from version 1 the client generates its own member id.
CLIENT_GENERATED_MEMBER_ID_VERSION = 1
# Describe v1 adds MemberType; 1 = a member speaking the consumer protocol.
MEMBER_TYPE_CONSUMER = 1


@dataclass(frozen=True, slots=True)
class HeartbeatTopicPartitions:
    topic_id: str
    partitions: list[int]


@dataclass(slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str = ""
    member_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list[HeartbeatTopicPartitions] | None = None


@dataclass(slots=True)
class HeartbeatAssignment:
    topic_partitions: list[HeartbeatTopicPartitions] = field(default_factory=list)


@dataclass(slots=True)
class ConsumerGroupHeartbeatResponse:
    throttle_time_ms: int = 0
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: HeartbeatAssignment | None = None


def heartbeat_error_response(error: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    """The answer for a heartbeat the group logic never saw (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS ...)."""
    return ConsumerGroupHeartbeatResponse(error_code=int(error), error_message=message)


@dataclass(slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    topic_id: str
    topic_name: str
    partitions: list[int]


@dataclass(slots=True)
class DescribedAssignment:
    topic_partitions: list[DescribedTopicPartitions] = field(default_factory=list)


@dataclass(slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: DescribedAssignment
    target_assignment: DescribedAssignment
    member_type: int = MEMBER_TYPE_CONSUMER


@dataclass(slots=True)
class DescribedGroup:
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedMember] = field(default_factory=list)
    authorized_operations: int = -(2**31)


@dataclass(slots=True)
class ConsumerGroupDescribeResponse:
    throttle_time_ms: int = 0
    groups: list[DescribedGroup] = field(default_factory=list)
