"""Topic metadata handed to the group logic as data (the coordinator never looks it up itself).

The caller builds a ``TopicsImage`` from the backing cluster's metadata. Topic ids make a
deleted and re-created topic a different topic, exactly as Kafka's metadata image does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


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
    _topic_hash: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {t.topic_id: t for t in self.topics.values()})
        object.__setattr__(self, "_hash_cache", {})
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

    def topic_name(self, topic_id: str) -> str | None:
        t = self._by_id.get(topic_id)
        return None if t is None else t.name

    def partition_count(self, topic_id: str) -> int:
        t = self._by_id.get(topic_id)
        return 0 if t is None else t.partitions

    def has_racks(self) -> bool:
        return any(t.partition_racks for t in self.topics.values())

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
