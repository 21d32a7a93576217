"""ShardGroups: one shard's groups of one type by id, as consumer groups and share groups keep them.

Both types write the same group-level metadata record (epoch and metadata hash; a tombstone
deletes the group) and are looked up, created on first record and pictured (``snapshot``) the
same way; the member and assignment records stay each type's own (``consumer.state``,
``share.state``). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from groupcoord.records import CoordinatorRecord, RecordType


class _Group(Protocol):
    group_epoch: int
    metadata_hash: int

    def snapshot(self) -> dict[str, Any]: ...


G = TypeVar("G", bound=_Group)


class ShardGroups(Generic[G]):
    def __init__(self, new_group: Callable[[str], G], record_types: frozenset[RecordType]) -> None:
        self.groups: dict[str, G] = {}
        self._new_group = new_group
        self._record_types = record_types

    def group(self, group_id: str) -> G | None:
        return self.groups.get(group_id)

    def _get_or_create(self, group_id: str) -> G:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = self._new_group(group_id)
        return g

    def handles(self, record: CoordinatorRecord) -> bool:
        return record.type in self._record_types

    def _replay_group_metadata(self, group_id: str, value: Any) -> None:
        if value is None:
            self.groups.pop(group_id, None)
            return
        g = self._get_or_create(group_id)
        g.group_epoch = value.epoch
        g.metadata_hash = value.metadata_hash

    def snapshot(self) -> dict[str, Any]:
        return {gid: self.groups[gid].snapshot() for gid in sorted(self.groups)}
