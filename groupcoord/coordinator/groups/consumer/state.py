"""ConsumerGroupsState: every consumer group of one shard, rebuilt only by ``replay``."""

from __future__ import annotations

from typing import Any

from groupcoord.coordinator.groups.consumer.group import ConsumerGroup, ResolvedRegularExpression
from groupcoord.coordinator.groups.consumer.member import ConsumerGroupMember, MemberState, member_state
from groupcoord.coordinator.groups.shard_groups import ShardGroups
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import TopicPartitionsWithEpochs

CONSUMER_GROUP_RECORD_TYPES = frozenset(
    {
        RecordType.CONSUMER_GROUP_METADATA,
        RecordType.CONSUMER_GROUP_MEMBER_METADATA,
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
    }
)


# The records whose replay builds a member (``replay_noting``): a join writes one of each.
MEMBER_RECORD_TYPES = frozenset(
    {RecordType.CONSUMER_GROUP_MEMBER_METADATA, RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT}
)

# What replaying a member's record did (``replay_noting``): the member before (None: there was
# none) and the member kept after, the one object the group holds.
MemberNote = tuple[ConsumerGroupMember | None, ConsumerGroupMember]


def _epochs(tps: list[TopicPartitionsWithEpochs], default_epoch: int) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for tp in tps:
        if not tp.partitions:
            continue
        epochs = tp.assignment_epochs
        # Records written before assignment epochs existed carry none: the member epoch is the
        # safe stand-in (it only ever makes the commit check stricter).
        if len(epochs) == len(tp.partitions):
            out.setdefault(tp.topic_id, {}).update(zip(tp.partitions, epochs, strict=True))
        else:
            out.setdefault(tp.topic_id, {}).update(dict.fromkeys(tp.partitions, default_epoch))
    return out


class ConsumerGroupsState(ShardGroups[ConsumerGroup]):
    """All consumer groups of one shard. Implements ``groupcoord.coordinator.runtime.api.ShardState``."""

    def __init__(self) -> None:
        super().__init__(ConsumerGroup, CONSUMER_GROUP_RECORD_TYPES)
        # Soft state (never persisted, not in ``snapshot``): the join deadline armed for a classic
        # member told to rejoin (REBALANCE_IN_PROGRESS), so repeated heartbeats do not push it.
        self.classic_join_deadlines: dict[tuple[str, str], int] = {}
        # Soft state: counts member ids handed to classic members (MEMBER_ID_REQUIRED), so two
        # clients alike in every request field still get different ids.
        self.classic_member_seq = 0

    def replay(self, record: CoordinatorRecord) -> None:
        t = record.type
        key = record.key
        value = record.value
        if t == RecordType.CONSUMER_GROUP_METADATA:
            self._replay_group_metadata(key.group, value)
        elif t == RecordType.CONSUMER_GROUP_MEMBER_METADATA:
            self._replay_member_metadata(key.group, key.member_id, value)
        elif t == RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            if value is None:
                g0 = self.groups.get(key.group)
                if g0 is not None:
                    g0.assignment_epoch = 0
                    g0.assignment_timestamp = 0
                return
            g = self._get_or_create(key.group)
            g.assignment_epoch = value.assignment_epoch
            g.assignment_timestamp = value.assignment_timestamp
        elif t == RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                g0 = self.groups.get(key.group)
                if g0 is not None:
                    g0.drop_target(key.member_id)
                return
            g = self._get_or_create(key.group)
            g.put_target(
                key.member_id, {tp.topic_id: frozenset(tp.partitions) for tp in value.topic_partitions if tp.partitions}
            )
        elif t == RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            self._replay_current_assignment(key.group, key.member_id, value)
        elif t == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
            if value is None:
                g0 = self.groups.get(key.group)
                if g0 is not None:
                    g0.put_regex(key.regex, None)
                return
            g = self._get_or_create(key.group)
            g.put_regex(key.regex, ResolvedRegularExpression(frozenset(value.topics), value.version, value.timestamp))

    def replay_noting(self, record: CoordinatorRecord) -> MemberNote | None:
        """``replay`` of a record of ``MEMBER_RECORD_TYPES``, and what it did to the member (None
        for a tombstone): for ``replay_noted`` of the same record into another state."""
        if record.value is None:
            self.replay(record)
            return None
        group_id, member_id = record.key.group, record.key.member_id
        g = self.groups.get(group_id)
        old = None if g is None else g.members.get(member_id)
        self.replay(record)
        return old, self.groups[group_id].members[member_id]

    def replay_noted(self, record: CoordinatorRecord, note: MemberNote) -> None:
        """``replay`` of a record that ``replay_noting`` replayed into another state, noting
        ``note``: where this state's member is the one that state had before (the very object,
        or an equal one), replaying the record here builds a member equal to the one built
        there, so that one is kept as it is (an immutable value, shared by both states) and
        only this group's indexes are updated; anywhere else the record is replayed. The read
        back of the shard's own writes builds each member once instead of twice."""
        before, after = note
        group_id, member_id = record.key.group, record.key.member_id
        g = self.groups.get(group_id)
        current = None if g is None else g.members.get(member_id)
        if current is not before and (current is None or before is None or current != before):
            self.replay(record)
            return
        if g is None:
            g = self._get_or_create(group_id)
        # As built there: its subscribed names are that state's shared tuple, equal to this one's.
        g.put_member(after, share_names=False)

    def _replay_member_metadata(self, group_id: str, member_id: str, value: Any) -> None:
        if value is None:
            g0 = self.groups.get(group_id)
            if g0 is None or member_id not in g0.members:
                return
            old = g0.members[member_id]
            if not old.has_assignment:
                g0.drop_member(member_id)
            else:
                g0.put_member(ConsumerGroupMember(member_id=member_id, **_assignment_fields(old)))
            return
        g = self._get_or_create(group_id)
        old = g.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
        g.put_member(
            old.evolve(
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                subscribed_topic_names=g.shared_names(tuple(value.subscribed_topic_names)),
                subscribed_topic_regex=value.subscribed_topic_regex,
                server_assignor=value.server_assignor,
                classic_member_metadata=value.classic_member_metadata,
                has_metadata=True,
            )
        )

    def _replay_current_assignment(self, group_id: str, member_id: str, value: Any) -> None:
        if value is None:
            g0 = self.groups.get(group_id)
            if g0 is None or member_id not in g0.members:
                return
            old = g0.members[member_id]
            if not old.has_metadata:
                g0.drop_member(member_id)
            else:
                g0.put_member(
                    old.evolve(
                        member_epoch=0,
                        previous_member_epoch=0,
                        state=MemberState.STABLE,
                        assigned={},
                        pending_revocation={},
                        has_assignment=False,
                    )
                )
            return
        g = self._get_or_create(group_id)
        old = g.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
        state = member_state(value.state)
        assigned = _epochs(value.assigned_partitions, value.member_epoch)
        pending = _epochs(value.partitions_pending_revocation, value.member_epoch)
        # Maps equal to the member's own are kept as they are: an epoch move then leaves the
        # group's indexes alone (``ConsumerGroup.put_member``) and answers compare by identity.
        g.put_member(
            old.evolve(
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=state,
                assigned=old.assigned if assigned == old.assigned else assigned,
                pending_revocation=old.pending_revocation if pending == old.pending_revocation else pending,
                has_assignment=True,
            )
        )


def _assignment_fields(m: ConsumerGroupMember) -> dict[str, Any]:
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": m.state,
        "assigned": m.assigned,
        "pending_revocation": m.pending_revocation,
        "has_assignment": m.has_assignment,
    }
