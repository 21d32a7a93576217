"""ShareGroupMember: one member of a share group, its subscription and its current assignment
(Kafka's ShareGroupMember)."""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.coordinator.groups.consumer.member import MemberState, TopicPartitionSet


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    # Always STABLE once assigned: a share-partition is never revoked before it moves, so a
    # member takes its whole target in one step.
    state: MemberState = MemberState.STABLE
    assigned: TopicPartitionSet = field(default_factory=dict)
    # Which of the member's two records the log holds; the member goes when both are tombstoned.
    has_metadata: bool = False
    has_assignment: bool = False

    def metadata_equals(self, other: ShareGroupMember) -> bool:
        return (
            self.rack_id == other.rack_id
            and self.client_id == other.client_id
            and self.client_host == other.client_host
            and self.subscribed_topic_names == other.subscribed_topic_names
        )

    def assignment_equals(self, other: ShareGroupMember) -> bool:
        return (
            self.member_epoch == other.member_epoch
            and self.previous_member_epoch == other.previous_member_epoch
            and self.state == other.state
            and _nonempty(self.assigned) == _nonempty(other.assigned)
        )

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch


def _nonempty(ps: TopicPartitionSet) -> dict[str, frozenset[int]]:
    return {t: frozenset(p) for t, p in ps.items() if p}
