"""Request validation, in the order Kafka applies it (GroupCoordinatorService/GroupMetadataManager)."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember
from groupcoord.coordinator.groups.consumer.regex import throw_if_regex_invalid
from groupcoord.coordinator.groups.consumer.requests import (
    CLIENT_GENERATED_MEMBER_ID_VERSION,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Owned,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_REQUEST, message)


def validate_heartbeat_request(
    request: ConsumerGroupHeartbeatRequest, api_version: int, config: ConsumerGroupConfig
) -> None:
    if not request.group_id:
        raise _invalid("GroupId can't be empty.")
    if request.instance_id is not None and not request.instance_id:
        raise _invalid("InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id:
        raise _invalid("RackId can't be empty.")
    if api_version >= CLIENT_GENERATED_MEMBER_ID_VERSION and not request.member_id:
        raise _invalid("MemberId can't be empty.")

    epoch = request.member_epoch
    has_names = bool(request.subscribed_topic_names)
    has_regex = bool(request.subscribed_topic_regex)
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not request.member_id:
            raise _invalid("MemberId can't be empty.")
    elif epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not has_names and not has_regex:
            raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not request.member_id:
            raise _invalid("MemberId can't be empty.")
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    else:
        raise _invalid(f"MemberEpoch {epoch} is invalid.")

    if request.server_assignor is not None and request.server_assignor not in config.assignors:
        raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported.")
    if has_regex:
        assert request.subscribed_topic_regex is not None
        throw_if_regex_invalid(request.subscribed_topic_regex)


def is_subset(owned: Owned, member: ConsumerGroupMember) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        ps = member.assigned.get(topic_id)
        if ps is None:
            if partitions:
                return False
            continue
        if any(p not in ps for p in partitions):
            return False
    return True


def throw_if_member_epoch_invalid(member: ConsumerGroupMember, received_epoch: int, owned: Owned) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch matches, or is the previous one with owned partitions
    still inside the assignment (the response that bumped the epoch was lost)."""
    if received_epoch == 0:
        # A member that lost its state (it was told it is fenced, or restarted with the same
        # client-generated id) rejoins from zero without partitions; that is always safe.
        return
    if received_epoch > member.member_epoch:
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The member epoch {received_epoch} is greater than the coordinator's {member.member_epoch}; "
            "the member must abandon all its partitions and rejoin.",
        )
    if received_epoch < member.member_epoch and (
        received_epoch != member.previous_member_epoch or not is_subset(owned, member)
    ):
        raise GroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The member epoch {received_epoch} is smaller than the coordinator's {member.member_epoch}; "
            "the member must abandon all its partitions and rejoin.",
        )
