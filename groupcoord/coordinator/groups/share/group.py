"""ShareGroup: the hard state of one share group (KIP-932) plus indexes derived from it, and the
``Group`` face it shows offsets and admin (Kafka's ShareGroup).

Only ``ShareGroupsState.replay`` mutates a group; handlers read it and describe changes as
records.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer.group import partitions_snapshot
from groupcoord.coordinator.groups.group import SHARE, GroupSummary
from groupcoord.coordinator.groups.share import log_records
from groupcoord.coordinator.groups.share.member import ShareGroupMember
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.offsets.handlers import CommitVerdict
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.records import CoordinatorRecord

# ListGroups' protocol type of a share group (Kafka's ShareGroup.PROTOCOL_TYPE).
PROTOCOL_TYPE = "share"


class ShareGroupState(Enum):
    """Kafka's ShareGroupState: a share group has no reconciliation, so it is Empty or Stable."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


class ShareGroup:
    """Implements ``groupcoord.coordinator.groups.group.Group``."""

    type = SHARE

    __slots__ = ("group_id", "group_epoch", "metadata_hash", "assignment_epoch", "members", "target", "_topic_counts")

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        # member id -> topic id -> partitions: the simple assignor's last answer.
        self.target: dict[str, dict[str, frozenset[int]]] = {}
        # subscribed topic name -> how many members subscribe to it.
        self._topic_counts: dict[str, int] = {}

    # --- mutation, replay only ---------------------------------------------------------------

    def put_member(self, member: ShareGroupMember) -> None:
        self.drop_member(member.member_id)
        self.members[member.member_id] = member
        for name in member.subscribed_topic_names:
            self._topic_counts[name] = self._topic_counts.get(name, 0) + 1

    def drop_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        for name in old.subscribed_topic_names:
            left = self._topic_counts[name] - 1
            if left:
                self._topic_counts[name] = left
            else:
                del self._topic_counts[name]

    # --- queries -------------------------------------------------------------------------------

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(self._topic_counts)

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def topic_ids(self, names: tuple[str, ...] | frozenset[str], image: TopicsImage) -> frozenset[str]:
        return frozenset(tid for name in names if (tid := image.topic_id(name)) is not None)

    # --- the Group face (offsets, retention, admin) ---------------------------------------------

    def is_empty(self) -> bool:
        return not self.members

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self._topic_counts

    # A share group keeps no committed offsets (its progress is share-partition state): Kafka's
    # ShareGroup answers every offset API "not a consumer group".

    def _not_consumer_group(self) -> ErrorCode:
        return ErrorCode.GROUP_ID_NOT_FOUND

    def validate_offset_commit(self, request: OffsetCommitRequest, api_version: int) -> CommitVerdict:
        return CommitVerdict(self._not_consumer_group())

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode:
        return self._not_consumer_group()

    def validate_offset_delete(self) -> ErrorCode:
        return self._not_consumer_group()

    def validate_delete(self) -> ErrorCode:
        return ErrorCode.NON_EMPTY_GROUP if self.members else ErrorCode.NONE

    def tombstones(self) -> list[CoordinatorRecord]:
        """Kafka's ShareGroup.createGroupTombstoneRecords (only an empty group is deleted, so the
        member records are already gone; any left are tombstoned all the same)."""
        gid = self.group_id
        records = [log_records.current_assignment_tombstone(gid, m) for m in sorted(self.members)]
        records += [log_records.target_member_tombstone(gid, m) for m in sorted(set(self.members) | set(self.target))]
        records.append(log_records.target_metadata_tombstone(gid))
        records += [log_records.member_metadata_tombstone(gid, m) for m in sorted(self.members)]
        records.append(log_records.group_epoch_tombstone(gid))
        return records

    def listed(self) -> GroupSummary:
        return GroupSummary(self.group_id, PROTOCOL_TYPE, self.state().value, SHARE)

    def retention_view(self) -> GroupRetentionView:
        return GroupRetentionView(
            subscribed_topics=self.subscribed_topic_names(), is_empty=self.is_empty(), managed=True
        )

    def snapshot(self) -> dict[str, Any]:
        return {
            "group_epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "members": {mid: _member_snapshot(self.members[mid]) for mid in sorted(self.members)},
            "target": {mid: partitions_snapshot(self.target[mid]) for mid in sorted(self.target)},
        }


def _member_snapshot(m: ShareGroupMember) -> tuple[Any, ...]:
    return (
        m.rack_id,
        m.client_id,
        m.client_host,
        m.subscribed_topic_names,
        m.member_epoch,
        m.previous_member_epoch,
        int(m.state),
        partitions_snapshot(m.assigned),
        m.has_metadata,
        m.has_assignment,
    )
