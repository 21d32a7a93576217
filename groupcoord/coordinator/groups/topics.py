"""Topic metadata handed to the group logic as data (the coordinator never looks it up itself).

The caller builds a ``TopicsImage`` from the backing cluster's metadata. Topic ids make a
deleted and re-created topic a different topic, exactly as Kafka's metadata image does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# Distinct subscriptions whose topic ids and partition counts one image remembers (a bound).
_COUNTS_CACHE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: int
    # partition_racks[p] = racks of the replicas of partition p; empty when racks are unknown.
    partition_racks: tuple[frozenset[str], ...] = ()

    def racks_of(self, partition: int) -> frozenset[str]:
        if partition < len(self.partition_racks):
            return self.partition_racks[partition]
        return frozenset()


def _signed64(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "big", signed=True)


@dataclass(frozen=True)
class TopicsImage:
    """An immutable picture of the cluster's topics at one metadata ``version``."""

    topics: Mapping[str, TopicImage]
    version: int = 0
    _by_id: dict[str, TopicImage] = field(init=False, repr=False, compare=False)
    _hash_cache: dict[frozenset[str], int] = field(init=False, repr=False, compare=False)
    _counts_cache: dict[frozenset[str], Mapping[str, int]] = field(init=False, repr=False, compare=False)
    _racked: frozenset[str] = field(init=False, repr=False, compare=False)
    _ids_cache: dict[tuple[str, ...], frozenset[str]] = field(init=False, repr=False, compare=False)
    _topic_hash: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {t.topic_id: t for t in self.topics.values()})
        object.__setattr__(self, "_hash_cache", {})
        object.__setattr__(self, "_counts_cache", {})
        object.__setattr__(self, "_ids_cache", {})
        object.__setattr__(self, "_racked", frozenset(t.topic_id for t in self.topics.values() if t.partition_racks))
        object.__setattr__(self, "_topic_hash", {})

    @classmethod
    def of(cls, topics: Iterable[TopicImage], version: int = 0) -> TopicsImage:
        return cls({t.name: t for t in topics}, version)

    @classmethod
    def empty(cls) -> TopicsImage:
        return cls({}, 0)

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: str) -> TopicImage | None:
        return self._by_id.get(topic_id)

    def topic_id(self, name: str) -> str | None:
        t = self.topics.get(name)
        return None if t is None else t.topic_id

    def topic_ids_of(self, names: tuple[str, ...]) -> frozenset[str]:
        """Ids of the existing topics among ``names``; remembered per tuple, so a subscription seen
        again (every member of a big group, every assignment) costs one tuple hash."""
        cached = self._ids_cache.get(names)
        if cached is None:
            topics = self.topics
            cached = frozenset(t.topic_id for n in names if (t := topics.get(n)) is not None)
            if len(self._ids_cache) >= _COUNTS_CACHE_SIZE:
                self._ids_cache.clear()
            self._ids_cache[names] = cached
        return cached

    def topic_name(self, topic_id: str) -> str | None:
        t = self._by_id.get(topic_id)
        return None if t is None else t.name

    def partition_count(self, topic_id: str) -> int:
        t = self._by_id.get(topic_id)
        return 0 if t is None else t.partitions

    def partition_counts(self, topic_ids: frozenset[str]) -> Mapping[str, int]:
        """Topic id -> partition count of those of ``topic_ids`` that exist and have partitions.

        Remembered per set (the image never changes): a group's assignments ask for the same
        subscription again and again, 1,000 topics at a time. Treat the result as read-only."""
        cached = self._counts_cache.get(topic_ids)
        if cached is None:
            by_id = self._by_id
            cached = {t: img.partitions for t in topic_ids if (img := by_id.get(t)) is not None and img.partitions > 0}
            if len(self._counts_cache) >= _COUNTS_CACHE_SIZE:
                self._counts_cache.clear()
            self._counts_cache[topic_ids] = cached
        return cached

    def has_racks(self) -> bool:
        return bool(self._racked)

    def any_racks(self, topic_ids: frozenset[str]) -> bool:
        """Whether any of ``topic_ids`` knows its partitions' replica racks."""
        return not self._racked.isdisjoint(topic_ids)

    def topic_hash(self, name: str) -> int:
        """Hash of one topic's metadata (id, partition count, racks); 0 if the topic does not exist."""
        cached = self._topic_hash.get(name)
        if cached is not None:
            return cached
        t = self.topics.get(name)
        if t is None:
            value = 0
        else:
            h = hashlib.blake2b(digest_size=8)
            h.update(f"{t.name}\0{t.topic_id}\0{t.partitions}".encode())
            for racks in t.partition_racks:
                h.update(("\1" + ",".join(sorted(racks))).encode())
            value = _signed64(h.digest())
        self._topic_hash[name] = value
        return value

    def metadata_hash(self, subscribed: frozenset[str]) -> int:
        """Hash of the metadata of a set of subscribed topic names (ConsumerGroupMetadata.metadata_hash).

        Any change that matters to an assignment (a topic appears, disappears, is re-created
        with a new id, gains partitions or moves racks) changes the hash, which bumps the group
        epoch. Deterministic across processes, unlike Python's ``hash``.
        """
        cached = self._hash_cache.get(subscribed)
        if cached is not None:
            return cached
        if not subscribed:
            value = 0
        else:
            h = hashlib.blake2b(digest_size=8)
            for name in sorted(subscribed):
                h.update(name.encode())
                h.update(self.topic_hash(name).to_bytes(8, "big", signed=True))
            value = _signed64(h.digest())
        self._hash_cache[subscribed] = value
        return value
