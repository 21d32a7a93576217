"""Committed offsets of one shard: group -> topic -> partition -> OffsetCommitValue.

A load leaves most values encoded (``replay_encoded``; see
``groupcoord/records/offset_commit_decoding.py``): a shard of many groups holds mostly offsets
nobody reads until OffsetFetch, a describe or the retention sweep asks, and a value's bytes take
a third of the memory of the decoded value. ``PartitionOffsets`` decodes them as they are read
(never keeping the decoded object), so what any reader sees is the value the record holds,
whichever way it was replayed.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from itertools import chain, repeat
from typing import Any

from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue
from groupcoord.records.offset_commit_decoding import EncodedOffsets, OffsetsTable, decode_offset_value
from groupcoord.records.offset_commit_run import OffsetCommitRun

_KIND = RecordType.OFFSET_COMMIT


class PartitionOffsets(MutableMapping[int, OffsetCommitValue]):
    """partition -> committed value of one group's topic; values replayed by a load may be held
    as their record's value bytes, decoded on each read."""

    __slots__ = ("slots",)

    def __init__(self, slots: dict[int, OffsetCommitValue | bytes] | None = None) -> None:
        self.slots = {} if slots is None else slots

    def __getitem__(self, partition: int) -> OffsetCommitValue:
        value = self.slots[partition]
        return decode_offset_value(value) if type(value) is bytes else value  # type: ignore[return-value]

    def __setitem__(self, partition: int, value: OffsetCommitValue) -> None:
        self.slots[partition] = value

    def __delitem__(self, partition: int) -> None:
        del self.slots[partition]

    def __iter__(self) -> Iterator[int]:
        return iter(self.slots)

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, partition: object) -> bool:
        return partition in self.slots

    def __repr__(self) -> str:
        return f"PartitionOffsets({dict(self)!r})"


class SharedTopics(dict[str, PartitionOffsets]):
    """One group's topics as a load made them, shared by the states the load replayed into (a
    shard's committed and live states): read as they are, copied by a state before it changes
    them (``OffsetsState._own``). Sharing halves what a load builds and keeps for its groups."""


def shared_view(table: OffsetsTable) -> dict[str, SharedTopics]:
    """``table``'s groups as the offsets states keep them, made once for all of them (with map
    and zip in C: a step per group in Python cost a tenth of a load of 100k groups)."""
    if table.view is None:
        groups = table.groups
        partitions = map(map, repeat(PartitionOffsets), map(dict.values, groups.values()))  # type: ignore[arg-type]  # (the slots' value type is invariant)
        topics = map(zip, map(dict.keys, groups.values()), partitions)
        table.view = dict(zip(groups, map(SharedTopics, topics), strict=True))
    view: dict[str, SharedTopics] = table.view
    return view


def table_size(table: OffsetsTable) -> int:
    """How many offsets ``table`` holds (its partitions' dicts counted in C)."""
    return sum(map(len, chain.from_iterable(map(dict.values, table.groups.values()))))


class OffsetsState:
    def __init__(self) -> None:
        self.offsets: dict[str, dict[str, PartitionOffsets]] = {}
        # How many (group, topic, partition) offsets ``offsets`` holds, kept as each replay
        # changes it: /metrics reads it (offset-count) without a walk over every group, which
        # took a scrape 173 ms of the event loop with 100,000 groups.
        self.count = 0

    def replay(self, record: CoordinatorRecord) -> None:
        if record.type != RecordType.OFFSET_COMMIT:
            return
        key: OffsetCommitKey = record.key
        if record.value is None:
            topics = self.offsets.get(key.group)
            if topics is None:
                return
            if type(topics) is SharedTopics:
                if key.topic not in topics or key.partition not in topics[key.topic]:
                    return
                topics = self._own(key.group, topics)
            partitions = topics.get(key.topic)
            if partitions is None or key.partition not in partitions.slots:
                return
            del partitions.slots[key.partition]
            self.count -= 1
            if not partitions:
                del topics[key.topic]
            if not topics:
                del self.offsets[key.group]
            return
        slots = self._partitions(key.group, key.topic).slots
        self.count += key.partition not in slots
        slots[key.partition] = record.value

    def replay_values(self, records: Sequence[CoordinatorRecord], start: int) -> int:
        """Replay the OffsetCommit values (no tombstones) of ``records`` from ``start`` on, while
        they last: what ``replay`` does with each, with the partitions of one group and topic
        looked up once (a commit's records share them). The index of the first record left."""
        at, end = start, len(records)
        group = topic = None
        slots: dict[int, OffsetCommitValue | bytes] = {}
        had = 0  # the size of ``slots`` when it was looked up
        while at < end:
            record = records[at]
            value = record.value
            if record.type is not _KIND or value is None:
                break
            key = record.key
            if key.group != group or key.topic != topic:
                self.count += len(slots) - had
                group, topic = key.group, key.topic
                slots = self._partitions(key.group, key.topic).slots
                had = len(slots)
            slots[key.partition] = value
            at += 1
        self.count += len(slots) - had
        return at

    def replay_run(self, run: OffsetCommitRun) -> None:
        """Replay a plain commit's records (``OffsetCommitRun``): what ``replay`` does with each,
        its values held as a load keeps them (the run's ``kept``, shared with the other states
        it is replayed into) and placed with one dict update per topic."""
        kept, at = run.kept(), 0
        for name, _, partitions, _, _ in run.topics:
            if partitions:  # a topic named with no partition writes nothing
                end = at + len(partitions)
                slots = self._partitions(run.group, name).slots
                had = len(slots)
                slots.update(zip(partitions, kept[at:end], strict=True))
                self.count += len(slots) - had
                at = end

    def replay_encoded(self, runs: list[EncodedOffsets]) -> None:
        """Replay OffsetCommit records whose values are left encoded: the same as replaying
        each, decoded, in order (none is a tombstone)."""
        offsets = self.offsets
        added = 0
        for group, topic, encoded in runs:
            topics = offsets.get(group)
            if topics is None:
                placed = PartitionOffsets(dict(encoded))
                offsets[group] = {topic: placed}
                added += len(placed.slots)
                continue
            if type(topics) is SharedTopics:
                topics = self._own(group, topics)
            partitions = topics.get(topic)
            if partitions is None:
                placed = topics[topic] = PartitionOffsets(dict(encoded))
                added += len(placed.slots)
            else:
                had = len(partitions.slots)
                partitions.slots.update(encoded)
                added += len(partitions.slots) - had
        self.count += added

    def replay_table(self, table: OffsetsTable) -> None:
        """Replay a load's ``OffsetsTable``: each of its values as replaying its record does (it
        holds no tombstone; what a tombstone removed is not in it). Its groups are shared with
        the other states replaying it until one of them changes a group."""
        view = shared_view(table)
        offsets = self.offsets
        if not offsets:
            offsets.update(view)
            self.count += table_size(table)
            return
        for group, topics in view.items():
            mine = offsets.get(group)
            if mine is None:
                offsets[group] = topics
                self.count += sum(map(len, topics.values()))
                continue
            if type(mine) is SharedTopics:
                mine = self._own(group, mine)
            for topic, partitions in topics.items():
                have = mine.get(topic)
                if have is None:
                    mine[topic] = PartitionOffsets(dict(partitions.slots))
                    self.count += len(partitions.slots)
                else:
                    had = len(have.slots)
                    have.slots.update(partitions.slots)
                    self.count += len(have.slots) - had

    def _own(self, group: str, topics: SharedTopics) -> dict[str, PartitionOffsets]:
        """This state's own copy of a group a load shared, to change."""
        own = self.offsets[group] = {topic: PartitionOffsets(dict(p.slots)) for topic, p in topics.items()}
        return own

    def _partitions(self, group: str, topic: str) -> PartitionOffsets:
        topics = self.offsets.get(group)
        if topics is None:
            topics = self.offsets[group] = {}
        elif type(topics) is SharedTopics:
            topics = self._own(group, topics)
        partitions = topics.get(topic)
        if partitions is None:
            partitions = topics[topic] = PartitionOffsets()
        return partitions

    def group_offsets(self, group: str) -> dict[str, PartitionOffsets]:
        return self.offsets.get(group, {})

    def get(self, group: str, topic: str, partition: int) -> OffsetCommitValue | None:
        partitions = self.offsets.get(group, {}).get(topic)
        return None if partitions is None else partitions.get(partition)

    def has_group(self, group: str) -> bool:
        return group in self.offsets

    def snapshot(self) -> Any:
        return {g: {t: dict(ps) for t, ps in ts.items()} for g, ts in self.offsets.items()}
