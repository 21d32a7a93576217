"""Topic metadata of the backing cluster, refreshed in the background.

Group logic receives it as data (names, ids, partition counts, racks); this module is the only
place that asks the cluster. Topic ids are kept both as ``uuid.UUID`` (wire form) and as Kafka's
string form (url-safe base64 without padding, what Kafka's tools print and what the log stores).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.logs import drain
from groupcoord.coordinator.messages.schema import topic_id_string, topic_id_uuid

__all__ = ["MetadataCache", "TopicInfo", "TopicNames", "topic_id_string", "topic_id_uuid"]

log = logging.getLogger(__name__)


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


_NO_TOPIC = TopicInfo("", uuid.UUID(int=0), 0)


def _image(topics: dict[str, TopicInfo], version: int) -> TopicsImage:
    return TopicsImage.of(
        (
            TopicImage(
                t.name,
                t.id_string,
                t.partitions,
                tuple(frozenset(r for r in racks if r) for racks in t.partition_racks),
            )
            for t in topics.values()
        ),
        version,
    )


class TopicNames(Protocol):
    async def lookup(self, name: str, topic_id: uuid.UUID | None) -> TopicInfo | None: ...

    def refresh_soon(self, names: Collection[str] = (), regex: bool = False) -> asyncio.Task[None]: ...

    def knows(self, name: str) -> bool: ...

    async def name_of(self, topic_id: uuid.UUID) -> str | None: ...

    async def id_of(self, name: str) -> str | None: ...

    async def uuid_of(self, name: str) -> uuid.UUID | None: ...


# Kafka's legal topic names (``Topic.validate``): at most 249 of these characters, neither "." nor
# "..". A name outside it can never be a topic, so it is never looked up.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def legal_topic_name(name: str) -> bool:
    return name not in (".", "..") and _LEGAL_TOPIC.fullmatch(name) is not None


# A Metadata answer's error for a topic the cluster does not have.
_UNKNOWN_TOPIC = 3

# What a listing shows of a topic: its partitions and their replicas' broker ids.
_Shape = tuple[tuple[int, tuple[int, ...]], ...]


def _shape(listed: Any) -> _Shape:
    return tuple(sorted((p.id, tuple(p.replicas)) for p in listed.partitions.values()))


class MetadataCache:
    """Implements ``TopicNames``; ``topics`` is the latest complete picture of the cluster.

    A refresh lists the topics, then describes them for what a listing lacks: each topic's id and
    its replicas' racks. Describing costs about 27 us of CPU a partition (librdkafka's admin
    thread turning the answer into Python objects: ~270 ms for a 10,000-partition topic, measured
    on the local broker), which every 10 s was a sixth of a 5,000-member group's steady heartbeat
    cost. So once the cluster holds ``DESCRIBE_CHANGED_FROM_PARTITIONS`` partitions, the periodic
    refresh describes only the topics that are new or whose listing changed (partitions, replicas)
    and keeps the rest as they were; every ``DESCRIBE_ALL_EVERY``-th one, and every refresh a
    request asks for by a topic id the picture lacks or a relayed DeleteTopics, describes them
    all. What the listing cannot show waits for that full refresh, up to a minute with the
    defaults: a topic deleted and re-created between two listings with the same partitions on the
    same brokers (its new id), and a broker's rack changed by its restart.

    What requests ask for is bounded by what they name, as a broker answers from the metadata it
    holds: a topic name the picture lacks is looked up alone (``learn``: one Metadata request for
    the names asked for meanwhile, at most every ``ON_DEMAND_GAP_S``), never by describing the
    whole cluster, which any client could otherwise make ten times a second by naming topics that
    do not exist (3,000 partitions kept `serve` at half a core that way). Only an unknown topic id
    (a name the listing gives, the id only a description) and a new regex subscription (any topic
    may match) refresh the whole picture on demand, at most every ``ON_DEMAND_WHOLE_GAP_S``; a
    regex's refresh describes only what its listing shows new or changed, whatever the cluster's
    size."""

    # Lookups of topic names the picture lacks happen at most this often.
    ON_DEMAND_GAP_S = 0.1
    # The most names one lookup describes: more wait for the next.
    MAX_NAMES_PER_LOOKUP = 1000
    # Whole refreshes a request asks for (an unknown topic id, a new regex, a relayed
    # DeleteTopics) happen at most this often.
    ON_DEMAND_WHOLE_GAP_S = 1.0
    DESCRIBE_CHANGED_FROM_PARTITIONS = 10_000
    DESCRIBE_ALL_EVERY = 6

    def __init__(
        self,
        client_config: dict[str, Any],
        refresh_interval_s: float = 10.0,
        hidden_topics: frozenset[str] = frozenset(),
    ) -> None:
        # The coordinator's own topics (its log, the placement directory) are left out of the
        # image groups see: no subscription, by name or regex, is ever assigned their partitions.
        self.hidden_topics = hidden_topics
        self._admin = AdminClient(dict(client_config))
        self.refresh_interval_s = refresh_interval_s
        self.topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._last_refresh = 0.0
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.version = 0  # bumped whenever the picture changes
        self.image = TopicsImage.empty()
        # Topics missing from the last refresh; declared deleted if still missing from the next.
        self._missing: dict[str, TopicInfo] = {}
        # Topics a DeleteTopics relayed by this process deleted: declared deleted by the first
        # refresh that misses them (the cluster said so; this is no bad answer).
        self._confirmed: set[str] = set()
        self._deletion_listeners: list[Callable[[list[TopicInfo]], Awaitable[None]]] = []
        self._rechecks = asyncio.Lock()
        self._last_recheck = 0.0  # when the latest recheck of topics a client was told of began
        self._on_demand = asyncio.Lock()
        self._last_start = 0.0  # when the latest refresh started
        self._completed_start = 0.0  # when the latest completed full refresh started
        self._listed_start = 0.0  # when the latest completed refresh of either kind started
        self._wanted: dict[str, None] = {}  # names asked for, not taken by a lookup yet (in order)
        self._lookups = asyncio.Lock()
        self._last_lookup = 0.0  # when the latest lookup of names began
        self._shapes: dict[str, _Shape] = {}  # each topic's listing as of the latest refresh
        # Periodic refreshes since the last full one completed: the first one is full.
        self._since_full = self.DESCRIBE_ALL_EVERY - 1

    def on_topics_deleted(self, listener: Callable[[list[TopicInfo]], Awaitable[None]]) -> None:
        self._deletion_listeners.append(listener)

    def _fetch(self, full: bool, small_whole: bool = True) -> tuple[dict[str, TopicInfo], dict[str, _Shape]]:
        try:
            return self._fetch_topics(full, small_whole)
        finally:
            drain(self._admin)  # its queued librdkafka log lines

    def _fetch_topics(self, full: bool, small_whole: bool) -> tuple[dict[str, TopicInfo], dict[str, _Shape]]:
        listed = {n: t for n, t in self._admin.list_topics(timeout=10).topics.items() if t.error is None}
        shapes = {n: _shape(t) for n, t in listed.items()}
        partitions = sum(len(t.partitions) for t in listed.values())
        if not full and small_whole and partitions < self.DESCRIBE_CHANGED_FROM_PARTITIONS:
            full = True  # describing them all costs little (once every interval)
        out: dict[str, TopicInfo] = {}
        names: list[str] = []
        for name, shape in shapes.items():
            known = self.topics.get(name)
            if full or known is None or self._shapes.get(name) != shape:
                names.append(name)
            else:
                out[name] = known
        if not names:
            return out, shapes
        for name, future in self._admin.describe_topics(TopicCollection(names)).items():
            try:
                d = future.result(timeout=10)
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue  # deleted between the listing and the description
                raise  # a partial picture would look like deleted topics
            racks = tuple(tuple(node.rack or "" for node in p.replicas) for p in d.partitions)
            out[name] = TopicInfo(name, _uuid_from_client(d.topic_id), len(d.partitions), racks)
        # The listing of a topic described with no answer is not taken as known: it is described
        # again next time, not kept as it is.
        return out, {n: shape for n, shape in shapes.items() if n in out}

    async def refresh(self, full: bool = True, small_whole: bool = True) -> None:
        """Refresh the picture; ``full=False`` (the periodic refresh): describe only the topics
        whose listing changed, where the cluster is large (see the class docstring), or whatever
        its size when not ``small_whole``."""
        async with self._lock:
            started = self._last_start = time.monotonic()
            try:
                topics, self._shapes = await asyncio.to_thread(self._fetch, full, small_whole)
            except KafkaException as exc:
                log.warning("topic metadata refresh failed: %s", exc)
                return
            self._listed_start = started
            if full:
                self._completed_start = started
                self._since_full = 0
            else:
                self._since_full += 1
            deleted, topics = self._settle(topics)
            self._publish(topics)
            self._last_refresh = time.monotonic()
        if deleted:
            log.info("topics deleted: %s", ", ".join(f"{t.name}({t.id_string})" for t in deleted))
            for listener in self._deletion_listeners:
                await listener(deleted)

    def _publish(self, topics: dict[str, TopicInfo]) -> None:
        if topics != self.topics:
            self.version += 1
            self.image = _image({n: t for n, t in topics.items() if n not in self.hidden_topics}, self.version)
        self.topics = topics
        self._by_id = {t.topic_id: t for t in topics.values()}

    def _settle(self, fetched: dict[str, TopicInfo]) -> tuple[list[TopicInfo], dict[str, TopicInfo]]:
        """(deleted incarnations, picture to publish).

        A topic incarnation missing from one refresh stays in the picture; missing from the next
        one too, it is declared deleted. One bad answer must neither rebalance groups nor wipe
        offsets. A re-created topic (same name, new id) replaces the old one at once.
        """
        published = dict(fetched)
        still_missing: dict[str, TopicInfo] = {}
        deleted: list[TopicInfo] = []
        for name, old in self.topics.items():
            now = fetched.get(name)
            if now is not None and now.topic_id == old.topic_id:
                continue
            if now is not None:
                deleted.append(old)  # re-created: the old incarnation is gone for sure
            elif name in self._missing or name in self._confirmed:
                deleted.append(old)
            else:
                still_missing[name] = old
                published[name] = old
        self._missing = still_missing
        # A confirmed deletion the cluster does not show yet waits for the next refresh.
        self._confirmed = {n for n in self._confirmed if n in fetched and n in self.topics}
        return deleted, published

    def seen(self, answered: Iterable[tuple[str | None, uuid.UUID, int]]) -> Awaitable[None] | None:
        """A client's Metadata answer from the cluster, passing through the gateway: (name, id,
        error) of each topic. Where it contradicts the picture (a known topic under another id,
        or unknown to the cluster), those topics are looked at again (``recheck``), which the
        caller may wait for before the client has the answer. Kafka's coordinator learns a
        deletion from its metadata image before any client can see the topic re-created; here
        the first client told of the new incarnation is, so its commits that follow name the
        new incarnation (a commit resolved against the old one would be dropped with it)."""
        topics = self.topics
        stale: list[str] = []
        for name, topic_id, error in answered:
            known = topics.get(name) if name else None
            if known is None:
                continue
            if error == _UNKNOWN_TOPIC or (error == 0 and topic_id.int != 0 and topic_id != known.topic_id):
                stale.append(known.name)
        if not stale:
            return None
        return asyncio.ensure_future(self.recheck(stale))

    async def recheck(self, names: Collection[str]) -> None:
        """Describe these known topics again: one re-created (another id) replaces the old
        incarnation at once, its deletion listeners run; one the cluster lacks now is taken as
        deleted by the next listing that misses it too (the client's answer was the first sign,
        this description the second: ``_settle`` wants two). One recheck at a time, at most every
        ``ON_DEMAND_GAP_S``."""
        async with self._rechecks:
            wanted = sorted(n for n in names if n in self.topics)
            if not wanted:
                return
            wait = self._last_recheck + self.ON_DEMAND_GAP_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_recheck = time.monotonic()
            described, unknown = await asyncio.to_thread(self._described, wanted)
            found = {t.name: t for t in described}
            deleted: list[TopicInfo] = []
            gone: list[str] = []
            async with self._lock:
                topics = dict(self.topics)
                for name in wanted:
                    old, now = topics.get(name), found.get(name)
                    if old is None or (now is not None and now.topic_id == old.topic_id):
                        continue
                    if now is None:
                        if name in unknown:  # not a failed description: the cluster said so
                            gone.append(name)
                        continue
                    deleted.append(old)
                    topics[name] = now
                    self._missing.pop(name, None)
                    self._shapes.pop(name, None)  # described again by the next refresh
                if deleted:
                    self._publish(topics)
            if deleted:
                log.info("topics re-created: %s", ", ".join(f"{t.name}({t.id_string})" for t in deleted))
                for listener in self._deletion_listeners:
                    await listener(deleted)
            if gone:
                self._confirmed.update(gone)
                await self._refreshed_since(time.monotonic(), full=False)

    async def created_by_request(self, names: list[str]) -> None:
        """A CreateTopics relayed by this process created these topics: learn them now (the name
        of one still in the picture was deleted past the sidecar: its new incarnation replaces it)."""
        known = [n for n in names if n in self.topics]
        await asyncio.gather(self.learn(n for n in names if n not in self.topics), self.recheck(known))

    async def deleted_by_request(self, names: list[str], topic_ids: list[uuid.UUID]) -> None:
        """A DeleteTopics relayed by this process deleted these topics (by name or id): refresh
        now, and drop those the cluster no longer shows at once, their deletion listeners run,
        rather than after two refreshes missing them (``_settle``)."""
        known = {n for n in names if n in self.topics}
        known |= {info.name for i in topic_ids if (info := self._by_id.get(i)) is not None}
        if not known:
            return
        self._confirmed |= known
        await self._refreshed_since(time.monotonic())

    def start(self) -> None:
        async def loop() -> None:
            while True:
                # A full refresh that failed is tried again by the next one.
                await self.refresh(full=self._since_full >= self.DESCRIBE_ALL_EVERY - 1)
                await asyncio.sleep(self.refresh_interval_s)

        self._task = asyncio.get_running_loop().create_task(loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def lookup(self, name: str, topic_id: uuid.UUID | None) -> TopicInfo | None:
        """The topic a request names, by id (OffsetCommit/OffsetFetch v10+) or by name. A miss
        waits for a refresh that started after the request arrived before it counts: the topic
        may be newer than the last periodic refresh (Kafka's brokers learn of it at once)."""
        by_id = topic_id is not None and topic_id != _NO_TOPIC.topic_id

        def find() -> TopicInfo | None:
            return self._by_id.get(topic_id) if by_id and topic_id is not None else self.topics.get(name)

        info = find()
        if info is None:
            if by_id:
                await self._refreshed_since(time.monotonic())
            else:
                await self.learn((name,))
            info = find()
        return info

    def refresh_soon(self, names: Collection[str] = (), regex: bool = False) -> asyncio.Task[None]:
        """A client subscribed to topics the picture lacks (``names``), or by a regex: learn of
        them now rather than at the next interval, so its first assignment does not wait up to
        ``refresh_interval_s``. Returns the lookup, which callers may wait for."""
        since = time.monotonic()

        async def learned() -> None:
            if names:
                await self.learn(names)
            if regex:
                await self._refreshed_since(since, full=False)

        return asyncio.get_running_loop().create_task(learned())

    async def learn(self, names: Iterable[str]) -> None:
        """Look up the named topics the picture lacks, and only those (a name no topic can have
        is not looked up). Returns once a lookup that began after this call has taken each of
        them. Lookups go one at a time, at most every ``ON_DEMAND_GAP_S``, each taking up to
        ``MAX_NAMES_PER_LOOKUP`` of the names asked for until it began, and the topics found join
        the picture at once; the next refresh describes them again (it has no listing of them)."""
        mine = {n for n in names if n not in self.topics and legal_topic_name(n)}
        if not mine:
            return
        self._wanted.update(dict.fromkeys(sorted(mine)))
        while not mine.isdisjoint(self._wanted):
            async with self._lookups:
                if mine.isdisjoint(self._wanted):
                    return  # taken by a lookup that began after this call
                wait = self._last_lookup + self.ON_DEMAND_GAP_S - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                batch = list(itertools.islice(self._wanted, self.MAX_NAMES_PER_LOOKUP))
                for name in batch:
                    del self._wanted[name]
                self._last_lookup = time.monotonic()
                # Shielded: others wait on these names too, and the caller may be cancelled.
                await asyncio.shield(self._look_up(batch))

    async def _look_up(self, names: list[str]) -> None:
        found = await asyncio.to_thread(self._describe, names)
        if found:
            async with self._lock:  # never inside a refresh: it publishes a whole picture
                self._publish({**self.topics, **{t.name: t for t in found}})

    def _describe(self, names: list[str]) -> list[TopicInfo]:
        """The named topics the cluster has (a name it lacks, or that this principal may not
        describe, is left out)."""
        return self._described(names)[0]

    def _described(self, names: list[str]) -> tuple[list[TopicInfo], set[str]]:
        """(the named topics the cluster has, the names it answered it does not have); a name
        that failed otherwise is in neither, and so is every name when the request failed."""
        out: list[TopicInfo] = []
        unknown: set[str] = set()
        try:
            futures = self._admin.describe_topics(TopicCollection(names))
            for name, future in futures.items():
                try:
                    d = future.result(timeout=10)
                except KafkaException as exc:
                    if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                        unknown.add(name)
                    continue  # no such topic here, or not to be told now
                racks = tuple(tuple(node.rack or "" for node in p.replicas) for p in d.partitions)
                out.append(TopicInfo(d.name, _uuid_from_client(d.topic_id), len(d.partitions), racks))
        except (KafkaException, ValueError) as exc:
            log.warning("topic lookup failed: %s", exc)
        finally:
            drain(self._admin)
        return out, unknown

    async def _refreshed_since(self, since: float, full: bool = True) -> None:
        """Return once a refresh that started at or after ``since`` has completed: a full one,
        or when not ``full`` one of either kind, itself describing only what its listing shows
        new or changed. Refreshes asked for go one at a time and at most every
        ``ON_DEMAND_WHOLE_GAP_S``, so requests cannot make the sidecar describe the cluster
        over and over."""
        async with self._on_demand:
            if (self._completed_start if full else self._listed_start) >= since:
                return
            wait = self._last_start + self.ON_DEMAND_WHOLE_GAP_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self.refresh(full=full, small_whole=full)

    def knows(self, name: str) -> bool:
        return name in self.topics

    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        info = self._by_id.get(topic_id)
        if info is None and time.monotonic() - self._last_refresh >= 1.0:
            await self._refreshed_since(time.monotonic())
            info = self._by_id.get(topic_id)
        return info.name if info else None

    async def uuid_of(self, name: str) -> uuid.UUID | None:
        # Cache only: this runs on every OffsetCommit, and a topic too new to be known yet is
        # committed without an id (the background refresh learns it within one interval).
        info = self.topics.get(name)
        return info.topic_id if info else None

    async def id_of(self, name: str) -> str | None:
        found = await self.uuid_of(name)
        return topic_id_string(found) if found else None
