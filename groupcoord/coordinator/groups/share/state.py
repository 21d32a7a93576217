"""ShareGroupsState: every share group of one shard, rebuilt only by ``replay``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.coordinator.groups.consumer.member import MemberState, member_state
from groupcoord.coordinator.groups.shard_groups import ShardGroups
from groupcoord.coordinator.groups.share.group import ShareGroup
from groupcoord.coordinator.groups.share.member import ShareGroupMember
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import TopicPartitions

SHARE_GROUP_RECORD_TYPES = frozenset(
    {
        RecordType.SHARE_GROUP_METADATA,
        RecordType.SHARE_GROUP_MEMBER_METADATA,
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    }
)


def _partitions(tps: list[TopicPartitions]) -> dict[str, frozenset[int]]:
    return {tp.topic_id: frozenset(tp.partitions) for tp in tps if tp.partitions}


class ShareGroupsState(ShardGroups[ShareGroup]):
    """All share groups of one shard. Implements ``groupcoord.coordinator.runtime.api.ShardState``."""

    def __init__(self) -> None:
        super().__init__(ShareGroup, SHARE_GROUP_RECORD_TYPES)

    def replay(self, record: CoordinatorRecord) -> None:
        t, key, value = record.type, record.key, record.value
        if t == RecordType.SHARE_GROUP_METADATA:
            self._replay_group_metadata(key.group, value)
        elif t == RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            if value is None:
                g0 = self.groups.get(key.group)
                if g0 is not None:
                    g0.assignment_epoch = 0
                return
            self._get_or_create(key.group).assignment_epoch = value.assignment_epoch
        elif t == RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                g0 = self.groups.get(key.group)
                if g0 is not None:
                    g0.target.pop(key.member_id, None)
                return
            self._get_or_create(key.group).target[key.member_id] = _partitions(value.topic_partitions)
        elif t == RecordType.SHARE_GROUP_MEMBER_METADATA:
            self._replay_member(key.group, key.member_id, value, metadata=True)
        elif t == RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            self._replay_member(key.group, key.member_id, value, metadata=False)

    def _replay_member(self, group_id: str, member_id: str, value: Any, metadata: bool) -> None:
        """A member lives while either of its two records does (as consumer-group members do)."""
        if value is None:
            g0 = self.groups.get(group_id)
            old = g0.members.get(member_id) if g0 is not None else None
            if g0 is None or old is None:
                return
            if old.has_assignment if metadata else old.has_metadata:
                blank = ShareGroupMember(member_id=member_id)
                keep = (
                    replace(blank, **_assignment_fields(old))
                    if metadata
                    else replace(
                        old,
                        member_epoch=0,
                        previous_member_epoch=0,
                        state=MemberState.STABLE,
                        assigned={},
                        has_assignment=False,
                    )
                )
                g0.put_member(keep)
            else:
                g0.drop_member(member_id)
            return
        g = self._get_or_create(group_id)
        old = g.members.get(member_id) or ShareGroupMember(member_id=member_id)
        if metadata:
            updated = replace(
                old,
                client_id=value.client_id,
                client_host=value.client_host,
                rack_id=value.rack_id,
                subscribed_topic_names=tuple(value.subscribed_topic_names),
                has_metadata=True,
            )
        else:
            updated = replace(
                old,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=member_state(value.state),
                assigned=_partitions(value.assigned_partitions),
                has_assignment=True,
            )
        g.put_member(updated)


def _assignment_fields(m: ShareGroupMember) -> dict[str, Any]:
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": m.state,
        "assigned": m.assigned,
        "has_assignment": m.has_assignment,
    }
