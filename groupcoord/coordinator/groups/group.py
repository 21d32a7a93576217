"""Group: the face every group type shows the shard (Kafka's ``Group.java``).

Offsets, retention, DeleteGroups and ListGroups ask a group these questions without knowing which
membership protocol manages it; ``ClassicGroup``, ``ConsumerGroup`` and ``ShareGroup`` answer them.
"""

from __future__ import annotations

from typing import Protocol

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.list_groups import ListGroupsResponseListedGroup
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.offsets.handlers import CommitVerdict
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.records import CoordinatorRecord

CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"


# Shared by every GroupSummary: a row of ListGroups never carries tagged fields of its own.
_NO_TAGGED_FIELDS: dict[int, bytes] = {}


class GroupSummary(ListGroupsResponseListedGroup):
    """One row of ListGroups, made as the wire answer's own entry: a listing of 100,000 groups
    is answered without a second object per group (a conversion took ~0.2 s of the event loop
    in slices, and the 200,000 objects it kept alive, each with its own empty dict of unknown
    tagged fields, made every young collection meanwhile walk them: 25-38 ms a collection, three
    collections a listing; 6 ms with these rows alone). Not to be changed once made."""

    __slots__ = ()
    # The base's per-object dict, shadowed by one empty dict that nothing writes to (only a
    # decoder fills it, and no row is decoded).
    unknown_tagged_fields = _NO_TAGGED_FIELDS

    def __init__(self, group_id: str, protocol_type: str, group_state: str, group_type: str) -> None:
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.group_state = group_state
        self.group_type = group_type


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
