"""Committed offsets of one shard: group -> topic -> partition -> OffsetCommitValue."""

from __future__ import annotations

from typing import Any

from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue


class OffsetsState:
    def __init__(self) -> None:
        self.offsets: dict[str, dict[str, dict[int, OffsetCommitValue]]] = {}

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type != RecordType.OFFSET_COMMIT:
            return
        key: OffsetCommitKey = record.key
        if record.value is None:
            topics = self.offsets.get(key.group)
            if topics is None:
                return
            partitions = topics.get(key.topic)
            if partitions is None:
                return
            partitions.pop(key.partition, None)
            if not partitions:
                del topics[key.topic]
            if not topics:
                del self.offsets[key.group]
            return
        # Looked up before created: setdefault would build two empty dicts for every record.
        topics = self.offsets.get(key.group)
        if topics is None:
            topics = self.offsets[key.group] = {}
        partitions = topics.get(key.topic)
        if partitions is None:
            partitions = topics[key.topic] = {}
        partitions[key.partition] = record.value

    def group_offsets(self, group: str) -> dict[str, dict[int, OffsetCommitValue]]:
        return self.offsets.get(group, {})

    def get(self, group: str, topic: str, partition: int) -> OffsetCommitValue | None:
        return self.offsets.get(group, {}).get(topic, {}).get(partition)

    def has_group(self, group: str) -> bool:
        return group in self.offsets

    def snapshot(self) -> Any:
        return {g: {t: dict(ps) for t, ps in ts.items()} for g, ts in self.offsets.items()}
