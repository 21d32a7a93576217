"""Builders for the consumer-group records (GroupCoordinatorRecordHelpers in Kafka)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, PartitionEpochs
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicPartitions,
    TopicPartitionsWithEpochs,
)


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_METADATA,
        ConsumerGroupMetadataKey(group_id),
        ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash),
    )


def group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey(group_id), None)


def member_metadata_record(group_id: str, m: ConsumerGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_MEMBER_METADATA,
        ConsumerGroupMemberKey(group_id, m.member_id),
        ConsumerGroupMemberMetadataValue(
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            server_assignor=m.server_assignor,
            classic_member_metadata=m.classic_member_metadata,
        ),
    )


def member_metadata_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_MEMBER_METADATA, ConsumerGroupMemberKey(group_id, member_id), None
    )


def target_member_record(group_id: str, member_id: str, partitions: Mapping[str, Iterable[int]]) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        ConsumerGroupMemberKey(group_id, member_id),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(partitions[t]))
                for t in sorted(partitions)
                if partitions[t]
            ]
        ),
    )


def target_member_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, ConsumerGroupMemberKey(group_id, member_id), None
    )


def target_metadata_record(group_id: str, epoch: int, timestamp: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        ConsumerGroupTargetAssignmentMetadataKey(group_id),
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp),
    )


def target_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, ConsumerGroupTargetAssignmentMetadataKey(group_id), None
    )


def _with_epochs(epochs: PartitionEpochs) -> list[TopicPartitionsWithEpochs]:
    out = []
    for t in sorted(epochs):
        ps = epochs[t]
        if not ps:
            continue
        order = sorted(ps)
        out.append(TopicPartitionsWithEpochs(topic_id=t, partitions=order, assignment_epochs=[ps[p] for p in order]))
    return out


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        ConsumerGroupMemberKey(group_id, m.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch,
            previous_member_epoch=m.previous_member_epoch,
            state=int(m.state),
            assigned_partitions=_with_epochs(m.assigned),
            partitions_pending_revocation=_with_epochs(m.pending_revocation),
        ),
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, ConsumerGroupMemberKey(group_id, member_id), None
    )


def regex_record(group_id: str, regex: str, topics: Iterable[str], version: int, timestamp: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
        ConsumerGroupRegularExpressionKey(group_id, regex),
        ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version, timestamp=timestamp),
    )


def regex_tombstone(group_id: str, regex: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, ConsumerGroupRegularExpressionKey(group_id, regex), None
    )
