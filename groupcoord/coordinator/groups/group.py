"""Group: the face every group type shows the shard (Kafka's ``Group.java``).

Offsets, retention, DeleteGroups and ListGroups ask a group these questions without knowing which
membership protocol manages it; ``ClassicGroup``, ``ConsumerGroup`` and ``ShareGroup`` answer them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.offsets.handlers import CommitVerdict
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.records import CoordinatorRecord

CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One row of ListGroups."""

    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


class Group(Protocol):
    """What the shard asks of a group, whichever protocol manages it."""

    @property
    def group_id(self) -> str: ...

    @property
    def type(self) -> str:
        """``classic``, ``consumer`` or ``share`` (Kafka's GroupType)."""
        ...

    def is_empty(self) -> bool: ...

    def subscribed_topic_names(self) -> frozenset[str]:
        """Topics the members consume now (their offsets do not expire)."""
        ...

    def is_subscribed_to_topic(self, topic: str) -> bool: ...

    def validate_offset_commit(self, request: OffsetCommitRequest, api_version: int) -> CommitVerdict: ...

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode: ...

    def validate_offset_delete(self) -> ErrorCode: ...

    def validate_delete(self) -> ErrorCode:
        """DeleteGroups (Kafka's validateGroupDelete)."""
        ...

    def tombstones(self) -> list[CoordinatorRecord]:
        """The records that delete the group (Kafka's createGroupTombstoneRecords)."""
        ...

    def listed(self) -> GroupSummary: ...

    def retention_view(self) -> GroupRetentionView:
        """What offset expiration needs (Kafka's offsetExpirationCondition and isSubscribedToTopic)."""
        ...
