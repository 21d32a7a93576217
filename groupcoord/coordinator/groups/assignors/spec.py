"""What a server-side assignor sees (GroupSpec) and returns (a target assignment per member)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from groupcoord.coordinator.groups.topics import TopicsImage

# member id -> topic id -> partitions. An assignor may hand back a member's input mapping
# itself when that member keeps exactly what it had (no copy for the unchanged majority).
GroupAssignment = dict[str, Mapping[str, frozenset[int]]]


@dataclass(frozen=True, slots=True)
class MemberSubscriptionSpec:
    member_id: str
    subscribed_topic_ids: frozenset[str]
    # The member's current *target* assignment: what stickiness preserves.
    assigned: Mapping[str, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    members: Mapping[str, MemberSubscriptionSpec]

    def is_homogeneous(self) -> bool:
        first: frozenset[str] | None = None
        for m in self.members.values():
            if first is None:
                first = m.subscribed_topic_ids
            # ``is`` first: the builder hands equal subscriptions over as one shared object, and
            # ``!=`` on two frozensets never short-cuts on identity (O(topics) per member).
            elif m.subscribed_topic_ids is not first and m.subscribed_topic_ids != first:
                return False
        return True


class PartitionAssignorError(Exception):
    """The assignor cannot produce an assignment for this input."""


class PartitionAssignor(Protocol):
    name: str

    def assign(self, group: GroupSpec, topics: TopicsImage) -> GroupAssignment: ...
