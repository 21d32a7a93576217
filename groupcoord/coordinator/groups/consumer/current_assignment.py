"""CurrentAssignmentBuilder: moves one member one step towards its target assignment.

The safety of KIP-848 lives here (Kafka's CurrentAssignmentBuilder):

* revoke before assign: while the member still owns a partition it must give up, it stays on
  its epoch in UNREVOKED_PARTITIONS and gets nothing new;
* no double ownership: a target partition still held by another member (assigned or pending
  revocation) is withheld and the member waits in UNRELEASED_PARTITIONS;
* every partition carries the epoch at which the member got it (KIP-1251) so offset commits
  from a member on an older epoch can be checked partition by partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from groupcoord.coordinator.errors import ErrorCode, GroupError
from groupcoord.coordinator.groups.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    PartitionEpochs,
    TopicPartitionSet,
)
from groupcoord.coordinator.groups.consumer.requests import Owned

# (topic id, partition) -> member id of the current holder, or None.
OwnerLookup = Callable[[str, int], "str | None"]


class CurrentAssignmentBuilder:
    def __init__(
        self,
        member: ConsumerGroupMember,
        target_epoch: int,
        target: TopicPartitionSet,
        subscribed_topic_ids: frozenset[str],
        owner_of: OwnerLookup,
        owned: Owned,
        subscription_changed: bool = False,
    ) -> None:
        self.member = member
        self.target_epoch = target_epoch
        self.target = target
        self.subscribed = subscribed_topic_ids
        self.owner_of = owner_of
        self.owned = owned
        self.subscription_changed = subscription_changed

    def build(self) -> ConsumerGroupMember:
        m = self.member
        if m.state == MemberState.STABLE:
            if m.member_epoch != self.target_epoch:
                return self._compute_next_assignment(m.member_epoch)
            if self.subscription_changed:
                return self._drop_unsubscribed()
            return m
        if m.state == MemberState.UNREVOKED_PARTITIONS:
            if self._owns_any(m.pending_revocation):
                return self._drop_unsubscribed() if self.subscription_changed else m
            # Revocation acknowledged: if the target asks for more revocation the member stays on
            # its epoch (Kafka's computeNextAssignment(memberEpoch)); otherwise it reaches the target.
            return self._compute_next_assignment(m.member_epoch)
        if m.state == MemberState.UNRELEASED_PARTITIONS:
            return self._compute_next_assignment(m.member_epoch)
        # UNKNOWN: written by a newer coordinator we were downgraded from; start the member over.
        if self.owned is None or len(self.owned) > 0:
            raise GroupError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                "The consumer group member is in an unknown state. It must abandon all its partitions and rejoin.",
            )
        return self._compute_next_assignment(self.target_epoch)

    def _owns_any(self, partitions: PartitionEpochs) -> bool:
        """Whether the member still reports owning one of ``partitions``; unknown (null) counts as yes."""
        if self.owned is None:
            return True
        for topic_id, owned in self.owned:
            ps = partitions.get(topic_id)
            if ps and any(p in ps for p in owned):
                return True
        return False

    def _drop_unsubscribed(self) -> ConsumerGroupMember:
        m = self.member
        dropped = {t: ps for t, ps in m.assigned.items() if t not in self.subscribed}
        if not dropped:
            return m
        assigned = {t: ps for t, ps in m.assigned.items() if t in self.subscribed}
        pending: dict[str, dict[int, int]] = {t: dict(ps) for t, ps in m.pending_revocation.items()}
        for t, ps in dropped.items():
            pending.setdefault(t, {}).update(ps)
        # Kafka's updateCurrentAssignment: the epoch stays, and the previous epoch becomes it.
        if self._owns_any(pending):
            return m.with_epoch(
                m.member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=assigned,
                pending_revocation=pending,
            )
        return m.with_epoch(m.member_epoch, assigned=assigned)

    def _compute_next_assignment(self, member_epoch: int) -> ConsumerGroupMember:
        m = self.member
        me = m.member_id
        new_assigned: dict[str, dict[int, int]] = {}
        new_pending_revocation: dict[str, dict[int, int]] = {}
        pending_assignment: dict[str, list[int]] = {}
        has_unreleased = False
        empty: frozenset[int] = frozenset()
        for t in set(self.target) | set(m.assigned):
            target = self.target.get(t, empty) if t in self.subscribed else empty
            current: Mapping[int, int] = m.assigned.get(t, {})
            kept = {p: e for p, e in current.items() if p in target}
            revoked = {p: e for p, e in current.items() if p not in target}
            own_pending = m.pending_revocation.get(t, {})
            to_assign = []
            for p in target:
                if p in current:
                    continue
                owner = self.owner_of(t, p)
                if owner is not None and owner != me and p not in own_pending:
                    has_unreleased = True
                else:
                    to_assign.append(p)
            if kept:
                new_assigned[t] = kept
            if revoked:
                new_pending_revocation[t] = revoked
            if to_assign:
                pending_assignment[t] = to_assign

        if new_pending_revocation and self._owns_any(new_pending_revocation):
            return m.with_epoch(
                member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=new_assigned,
                pending_revocation=new_pending_revocation,
            )
        for t, ps in pending_assignment.items():
            slot = new_assigned.setdefault(t, {})
            for p in ps:
                # Every newly assigned partition, even one the member was revoking and gets back,
                # carries the target epoch (KIP-1251 commit checks compare against it).
                slot[p] = self.target_epoch
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        return m.with_epoch(
            self.target_epoch,
            state=state,
            assigned=new_assigned,
            pending_revocation={},
        )
