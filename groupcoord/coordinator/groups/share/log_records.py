"""Builders for the share-group records (Kafka's GroupCoordinatorRecordHelpers, newShareGroup*)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.coordinator.groups.share.member import ShareGroupMember
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TopicPartitions,
)


def _topic_partitions(partitions: Mapping[str, Iterable[int]]) -> list[TopicPartitions]:
    return [TopicPartitions(topic_id=t, partitions=sorted(partitions[t])) for t in sorted(partitions) if partitions[t]]


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_METADATA,
        ShareGroupMetadataKey(group_id),
        ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash),
    )


def group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.SHARE_GROUP_METADATA, ShareGroupMetadataKey(group_id), None)


def member_metadata_record(group_id: str, m: ShareGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_MEMBER_METADATA,
        ShareGroupMemberKey(group_id, m.member_id),
        ShareGroupMemberMetadataValue(
            client_id=m.client_id,
            client_host=m.client_host,
            rack_id=m.rack_id,
            subscribed_topic_names=list(m.subscribed_topic_names),
        ),
    )


def member_metadata_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(RecordType.SHARE_GROUP_MEMBER_METADATA, ShareGroupMemberKey(group_id, member_id), None)


def target_member_record(group_id: str, member_id: str, partitions: Mapping[str, Iterable[int]]) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        ShareGroupMemberKey(group_id, member_id),
        ShareGroupTargetAssignmentMemberValue(topic_partitions=_topic_partitions(partitions)),
    )


def target_member_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, ShareGroupMemberKey(group_id, member_id), None
    )


def target_metadata_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        ShareGroupTargetAssignmentMetadataKey(group_id),
        ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch),
    )


def target_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, ShareGroupTargetAssignmentMetadataKey(group_id), None
    )


def current_assignment_record(group_id: str, m: ShareGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        ShareGroupMemberKey(group_id, m.member_id),
        ShareGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch,
            previous_member_epoch=m.previous_member_epoch,
            state=int(m.state),
            assigned_partitions=_topic_partitions(m.assigned),
        ),
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(
        RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, ShareGroupMemberKey(group_id, member_id), None
    )


def member_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """A member's three records, in Kafka's order (shareGroupFenceMember)."""
    return [
        current_assignment_tombstone(group_id, member_id),
        target_member_tombstone(group_id, member_id),
        member_metadata_tombstone(group_id, member_id),
    ]
