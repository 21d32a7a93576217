"""Topic metadata of the backing cluster, refreshed in the background.

Group logic receives it as data (names, ids, partition counts, racks); this module is the only
place that asks the cluster. Topic ids are kept both as ``uuid.UUID`` (wire form) and as Kafka's
string form (url-safe base64 without padding, what Kafka's tools print and what the log stores).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

log = logging.getLogger(__name__)


def topic_id_string(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def topic_id_uuid(value: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))


def _uuid_from_client(client_uuid: Any) -> uuid.UUID:
    msb = client_uuid.get_most_significant_bits() & (2**64 - 1)
    lsb = client_uuid.get_least_significant_bits() & (2**64 - 1)
    return uuid.UUID(int=(msb << 64) | lsb)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    # Racks of the replicas of each partition (empty strings where the broker has no rack).
    partition_racks: tuple[tuple[str, ...], ...] = ()

    @property
    def id_string(self) -> str:
        return topic_id_string(self.topic_id)


class TopicNames(Protocol):
    async def name_of(self, topic_id: uuid.UUID) -> str | None: ...

    async def id_of(self, name: str) -> str | None: ...

    async def uuid_of(self, name: str) -> uuid.UUID | None: ...


class MetadataCache:
    """Implements ``TopicNames``; ``topics`` is the latest complete picture of the cluster."""

    def __init__(self, client_config: dict[str, Any], refresh_interval_s: float = 10.0) -> None:
        self._admin = AdminClient(dict(client_config))
        self.refresh_interval_s = refresh_interval_s
        self.topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._last_refresh = 0.0
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.version = 0  # bumped whenever the picture changes

    def _fetch(self) -> dict[str, TopicInfo]:
        names = [n for n, t in self._admin.list_topics(timeout=10).topics.items() if t.error is None]
        if not names:
            return {}
        out: dict[str, TopicInfo] = {}
        for name, future in self._admin.describe_topics(TopicCollection(names)).items():
            try:
                d = future.result(timeout=10)
            except KafkaException as exc:
                log.debug("describe %s failed: %s", name, exc)
                continue
            racks = tuple(tuple(node.rack or "" for node in p.replicas) for p in d.partitions)
            out[name] = TopicInfo(name, _uuid_from_client(d.topic_id), len(d.partitions), racks)
        return out

    async def refresh(self) -> None:
        async with self._lock:
            try:
                topics = await asyncio.to_thread(self._fetch)
            except KafkaException as exc:
                log.warning("topic metadata refresh failed: %s", exc)
                return
            if topics != self.topics:
                self.version += 1
            self.topics = topics
            self._by_id = {t.topic_id: t for t in topics.values()}
            self._last_refresh = time.monotonic()

    async def _refresh_if_stale(self, min_age_s: float = 1.0) -> None:
        if time.monotonic() - self._last_refresh >= min_age_s:
            await self.refresh()

    def start(self) -> None:
        async def loop() -> None:
            while True:
                await self.refresh()
                await asyncio.sleep(self.refresh_interval_s)

        self._task = asyncio.get_running_loop().create_task(loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        info = self._by_id.get(topic_id)
        if info is None:
            await self._refresh_if_stale()
            info = self._by_id.get(topic_id)
        return info.name if info else None

    async def uuid_of(self, name: str) -> uuid.UUID | None:
        info = self.topics.get(name)
        if info is None:
            await self._refresh_if_stale()
            info = self.topics.get(name)
        return info.topic_id if info else None

    async def id_of(self, name: str) -> str | None:
        found = await self.uuid_of(name)
        return topic_id_string(found) if found else None
