"""GroupCoordinatorState: the whole state of one log partition (offsets, classic groups,
consumer groups, share groups), rebuilt by the one ``replay`` used both when loading and when writing.

Kafka keeps this in GroupMetadataManager and OffsetMetadataManager; the handlers over it are
``groupcoord.coordinator.group_shard.GroupCoordinatorShard``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.groups.consumer.state import MEMBER_RECORD_TYPES, ConsumerGroupsState, MemberNote
from groupcoord.coordinator.groups.group import Group
from groupcoord.coordinator.groups.group_config import GroupConfigsState
from groupcoord.coordinator.groups.share.state import SHARE_GROUP_RECORD_TYPES, ShareGroupsState
from groupcoord.coordinator.offsets.retention import GroupRetentionView
from groupcoord.coordinator.offsets.state import OffsetsState
from groupcoord.coordinator.offsets.transactions import TxnOffsetsState
from groupcoord.coordinator.share.shard_ops import SHARE_STATE_RECORD_TYPES, ShareDataState
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import OffsetCommitKey
from groupcoord.records.offset_commit_decoding import EncodedOffsets, OffsetsTable, decode_offset_value
from groupcoord.records.offset_commit_run import OffsetCommitRun

_type_of = operator.attrgetter("type")


class GroupCoordinatorState:
    def __init__(self) -> None:
        self.offsets = OffsetsState()
        self.classic = ClassicGroupsState()
        self.consumer = ConsumerGroupsState()
        self.share = ShareGroupsState()
        self.group_configs = GroupConfigsState()
        self.txn = TxnOffsetsState()
        # Share-partitions of this shard's share groups (ShareSnapshot/ShareUpdate records).
        self.share_data = ShareDataState()

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type == RecordType.OFFSET_COMMIT:
            self.offsets.replay(record)
            if self.txn.open_by_partition:  # a plain commit only matters to open transactions
                self.txn.replay(record)
        elif record.type in (RecordType.PENDING_TXN_OFFSETS, RecordType.TXN_PRODUCER):
            self.txn.replay(record)
        elif record.type == RecordType.GROUP_METADATA:
            self.classic.replay(record)
        elif record.type == RecordType.GROUP_CONFIG:
            self.group_configs.replay(record)
        elif record.type in SHARE_GROUP_RECORD_TYPES:
            self.share.replay(record)
        elif record.type in SHARE_STATE_RECORD_TYPES:
            self.share_data.replay(record)
        else:
            self.consumer.replay(record)

    def replay_all(self, records: Sequence[CoordinatorRecord]) -> None:
        """``replay`` of each record, in order, with a commit's OffsetCommit values placed in one
        loop (``OffsetsState.replay_values``)."""
        if self.txn.open_by_partition:  # a plain commit may overtake a staged one: one by one
            for record in records:
                self.replay(record)
            return
        if type(records) is OffsetCommitRun:  # a plain commit, as columns
            self.offsets.replay_run(records)
            return
        at, end = 0, len(records)
        while at < end:
            at = self.offsets.replay_values(records, at)
            if at < end:
                self.replay(records[at])
                at += 1
                if self.txn.open_by_partition:
                    for record in records[at:]:
                        self.replay(record)
                    return

    def replay_noting(self, records: Sequence[CoordinatorRecord]) -> list[MemberNote | None] | None:
        """``replay_all``, noting what each consumer member's record did (see
        ``ConsumerGroupsState.replay_noting``; None where no record is one)."""
        if type(records) is OffsetCommitRun or MEMBER_RECORD_TYPES.isdisjoint(map(_type_of, records)):
            self.replay_all(records)
            return None
        notes: list[MemberNote | None] = []
        consumer = self.consumer
        for record in records:  # what ``replay_all`` does: records of a join are no commit
            if record.type in MEMBER_RECORD_TYPES:
                notes.append(consumer.replay_noting(record))
            else:
                self.replay(record)
                notes.append(None)
        return notes

    def replay_noted(self, records: Sequence[CoordinatorRecord], notes: list[MemberNote | None]) -> None:
        """``replay_all`` of ``records``, which another state replayed noting ``notes``."""
        consumer = self.consumer
        for record, note in zip(records, notes, strict=True):
            if note is None:
                self.replay(record)
            else:
                consumer.replay_noted(record, note)

    def replay_encoded_offsets(self, runs: list[EncodedOffsets]) -> None:
        """Replay OffsetCommit records a load left encoded (``OffsetCommitRuns``), in order: what
        ``replay`` does with each. Only a staged transactional offset of the same partition needs
        the values (a plain commit overtakes it), so then they are decoded and replayed one by one."""
        if not self.txn.open_by_partition:
            self.offsets.replay_encoded(runs)
            return
        for group, topic, encoded in runs:
            for partition, value in encoded.items():
                key = OffsetCommitKey(group, topic, partition)
                self.replay(CoordinatorRecord(RecordType.OFFSET_COMMIT, key, decode_offset_value(value)))

    def replay_offsets_table(self, table: OffsetsTable) -> None:
        """Replay a load's OffsetCommit records placed in ``table`` (each key's last value): what
        ``replay`` does with each, one by one where a staged transactional offset needs them."""
        if not self.txn.open_by_partition:
            self.offsets.replay_table(table)
            return
        for group, topics in table.groups.items():
            for topic, partitions in topics.items():
                for partition, value in partitions.items():
                    key = OffsetCommitKey(group, topic, partition)
                    self.replay(CoordinatorRecord(RecordType.OFFSET_COMMIT, key, decode_offset_value(value)))

    def snapshot(self) -> Any:
        return {
            "offsets": self.offsets.snapshot(),
            "classic": self.classic.snapshot(),
            "consumer": self.consumer.snapshot(),
            "share": self.share.snapshot(),
            "group_configs": self.group_configs.snapshot(),
            "txn": self.txn.snapshot(),
            "share_data": self.share_data.snapshot(),
        }

    def group(self, group_id: str) -> Group | None:
        """The group a membership protocol manages under this id (None: unknown, or offsets only).
        Group ids are one namespace: an id names at most one group, of one type."""
        consumer = self.consumer.group(group_id)
        if consumer is not None:
            return consumer
        share = self.share.group(group_id)
        if share is not None:
            return share
        return self.classic.group(group_id)

    def group_type(self, group_id: str) -> str | None:
        group = self.group(group_id)
        return None if group is None else group.type

    def group_known(self, group_id: str) -> bool:
        return self.group(group_id) is not None or self.has_simple_group(group_id)

    def has_simple_group(self, group_id: str) -> bool:
        """A group of offsets only, committed or staged by a transaction: Kafka holds it as an
        empty classic group, which its OffsetCommit or TxnOffsetCommit created."""
        return self.offsets.has_group(group_id) or self.txn.group_has_pending(group_id)

    def retention_view(self, group_id: str) -> GroupRetentionView:
        group = self.group(group_id)
        return GroupRetentionView() if group is None else group.retention_view()
