"""ClassicGroupsState: every classic group of one shard.

Hard state is the last GroupMetadata record of each group (``records``); it changes only in
``replay`` and is all ``snapshot`` shows. Soft state is the live protocol state per group
(``groups``: join barrier, pending syncs, parked requests) plus timer bookkeeping and the member
id counter; handlers mutate it and a reload rebuilds it from the records (Stable or Empty).

Replay must tell a record this state wrote itself (the live group already reflects it and may
have moved on, e.g. a brand-new group whose first record is the empty one while a member waits
in its join barrier) from a record being loaded: the group keeps the values it emitted in
``unreplayed_writes`` and replay only rebuilds a group from a record it did not emit.
"""

from __future__ import annotations

import uuid
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.group import ClassicGroup
from groupcoord.coordinator.groups.classic.group_state import ClassicGroupState
from groupcoord.coordinator.groups.classic.log_records import group_metadata_tombstone
from groupcoord.coordinator.groups.classic.timers import TimerBook
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import GroupMetadataKey, GroupMetadataValue


class ClassicGroupsState:
    def __init__(self) -> None:
        self.records: dict[str, GroupMetadataValue] = {}
        self.groups: dict[str, ClassicGroup] = {}
        self.timers = TimerBook()
        self._member_seq = 0

    # --- the replay path ----------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type != RecordType.GROUP_METADATA:
            return
        key: GroupMetadataKey = record.key
        group_id = key.group
        value: GroupMetadataValue | None = record.value
        group = self.groups.get(group_id)
        if value is None:
            self.records.pop(group_id, None)
            if group is not None:
                del self.groups[group_id]
                group.transition_to(ClassicGroupState.DEAD, group.current_state_timestamp or 0)
            return
        self.records[group_id] = value
        if group is not None and group.unreplayed_writes and group.unreplayed_writes[0] == value:
            group.unreplayed_writes.popleft()
            return
        self.groups[group_id] = ClassicGroup.from_record(group_id, value)

    def snapshot(self) -> Any:
        return {group_id: self.records[group_id] for group_id in sorted(self.records)}

    # --- member ids ---------------------------------------------------------------------------

    def new_member_id(
        self, group: ClassicGroup, client_id: str, group_instance_id: str | None, now_ms: int, nonce: bytes = b""
    ) -> str:
        """Kafka's ``<client id>-<uuid>``, the uuid made of the request's random ``nonce``, so ids
        cannot be guessed. Without one (simulations, tests): ``<instance id or client id>-<now>-<n>``,
        deterministic given the inputs; the counter restarts on reload, so the timestamp keeps an
        id handed out before a reload from being handed out again to someone else."""
        base = group_instance_id if group_instance_id is not None else client_id
        if len(nonce) >= 16:
            member_id = f"{base}-{uuid.UUID(bytes=nonce[:16])}"
            if not group.has_member(member_id) and not group.is_pending_member(member_id):
                return member_id
        while True:
            self._member_seq += 1
            member_id = f"{base}-{now_ms}-{self._member_seq}"
            if not group.has_member(member_id) and not group.is_pending_member(member_id):
                return member_id

    # --- accessors for offsets and admin ------------------------------------------------------

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        is_transactional: bool = False,
    ) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateOffsetCommit; None if no classic group has this id."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        return group.validate_commit_generation(member_id, group_instance_id, generation_id, is_transactional)

    def validate_offset_fetch(self, group_id: str) -> ErrorCode | None:
        group = self.groups.get(group_id)
        return None if group is None else group.validate_offset_fetch()

    def validate_offset_delete(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        return ErrorCode.GROUP_ID_NOT_FOUND if group is None else group.validate_offset_delete()

    def validate_delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        return ErrorCode.GROUP_ID_NOT_FOUND if group is None else group.validate_delete()

    def delete_group_records(self, group_id: str) -> list[CoordinatorRecord]:
        """The records that delete a group (call after ``validate_delete_group`` said NONE)."""
        return [group_metadata_tombstone(group_id)] if group_id in self.groups else []

    def is_empty(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and group.is_empty()

    def group_state_name(self, group_id: str) -> str | None:
        group = self.groups.get(group_id)
        return None if group is None else group.state.value

    def protocol_type(self, group_id: str) -> str | None:
        group = self.groups.get(group_id)
        return None if group is None else group.protocol_type

    def subscribed_topics(self, group_id: str) -> frozenset[str] | None:
        group = self.groups.get(group_id)
        return None if group is None else group.subscribed_topics

    def is_subscribed_to_topic(self, group_id: str, topic: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and group.is_subscribed_to_topic(topic)

    def offset_expiration_base_ms(self, group_id: str, commit_timestamp_ms: int) -> int | None:
        group = self.groups.get(group_id)
        return commit_timestamp_ms if group is None else group.offset_expiration_base_ms(commit_timestamp_ms)
