"""Version rules of ConsumerGroupHeartbeat (apiKey 68) and ConsumerGroupDescribe (apiKey 69),
and the one place their topic ids change form.

The requests and answers are the generated classes of ``groupcoord.coordinator.messages``. The wire carries
topic ids as 16 bytes (``uuid.UUID``); the group logic, its records and the metadata image keep
Kafka's string form. ``owned_partitions`` reads a heartbeat's owned partitions into that form
once, and ``assignment`` / ``described_assignment`` write it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeResponseAssignment,
    ConsumerGroupDescribeResponseTopicPartitions,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from groupcoord.coordinator.messages.schema import topic_id_string, topic_id_uuid

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# KIP-1082: from version 1 the client generates its own member id.
CLIENT_GENERATED_MEMBER_ID_VERSION = 1
# Describe v1 adds MemberType; 1 = a member speaking the consumer protocol.
MEMBER_TYPE_CONSUMER = 1

# What a member says it owns: (topic id in the log's string form, partitions) per topic, in the
# request's order; ``None`` when the request does not say (a heartbeat without TopicPartitions).
Owned = list[tuple[str, list[int]]] | None


def owned_partitions(request: ConsumerGroupHeartbeatRequest) -> Owned:
    if request.topic_partitions is None:
        return None
    return [(topic_id_string(tp.topic_id), tp.partitions) for tp in request.topic_partitions]


def assignment(partitions: Mapping[str, Iterable[int]]) -> ConsumerGroupHeartbeatResponseAssignment:
    """A heartbeat's assignment: the topics with partitions, by id, in id order."""
    return ConsumerGroupHeartbeatResponseAssignment(
        topic_partitions=[
            ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=topic_id_uuid(t), partitions=sorted(ps))
            for t, ps in sorted(partitions.items())
            if ps
        ]
    )


def described_assignment(
    partitions: Mapping[str, Iterable[int]], topic_name: Callable[[str], str | None]
) -> ConsumerGroupDescribeResponseAssignment:
    """A described assignment: topics with partitions, by id and name, in id order. As Kafka's
    topicPartitionsFromMap, a topic that no longer exists (no name) is left out."""
    return ConsumerGroupDescribeResponseAssignment(
        topic_partitions=[
            ConsumerGroupDescribeResponseTopicPartitions(
                topic_id=topic_id_uuid(t), topic_name=name, partitions=sorted(ps)
            )
            for t, ps in sorted(partitions.items())
            if ps and (name := topic_name(t)) is not None
        ]
    )


def heartbeat_error_response(error: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    """The answer for a heartbeat the group logic never saw (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS ...)."""
    return ConsumerGroupHeartbeatResponse(error_code=int(error), error_message=message)
