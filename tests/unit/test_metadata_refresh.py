"""The topic-metadata refresh describes only what its listing shows changed, on a large cluster.

A fake admin client stands for librdkafka's: ``list_topics`` gives names, partitions and replicas;
``describe_topics`` gives ids and racks, and counts what it was asked to describe.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from groupcoord.coordinator.service.metadata_cache import MetadataCache, TopicInfo


@dataclass
class _Topic:
    id: uuid.UUID
    partitions: int
    replicas: tuple[int, ...] = (1,)


class _ClientUuid:
    def __init__(self, value: uuid.UUID) -> None:
        self.value = value

    def get_most_significant_bits(self) -> int:
        return self.value.int >> 64

    def get_least_significant_bits(self) -> int:
        return self.value.int & (2**64 - 1)


@dataclass
class _Node:
    id: int
    rack: str | None = None


@dataclass
class _Listed:
    topic: str
    partitions: dict[int, Any]
    error: Any = None


@dataclass
class _ListedPartition:
    id: int
    replicas: list[int]


@dataclass
class _Described:
    name: str
    topic_id: _ClientUuid
    partitions: list[Any]


@dataclass
class _DescribedPartition:
    id: int
    replicas: list[_Node]


@dataclass
class _Cluster:
    topics: dict[str, _Listed]


@dataclass
class FakeAdmin:
    topics: dict[str, _Topic] = field(default_factory=dict)
    described: list[list[str]] = field(default_factory=list)
    listings: int = 0
    described_at: list[int] = field(default_factory=list)  # the listing each description followed
    missing_on_describe: set[str] = field(default_factory=set)  # deleted between listing and describing
    timing_out: set[str] = field(default_factory=set)  # described with an error other than "unknown"

    def list_topics(self, timeout: float) -> _Cluster:
        self.listings += 1
        return _Cluster(
            {
                name: _Listed(name, {p: _ListedPartition(p, list(t.replicas)) for p in range(t.partitions)})
                for name, t in self.topics.items()
            }
        )

    def describe_topics(self, collection: Any) -> dict[str, Future[_Described]]:
        names = list(collection.topic_names)
        self.described.append(sorted(names))
        self.described_at.append(self.listings)
        out: dict[str, Future[_Described]] = {}
        for name in names:
            t = self.topics.get(name)
            future: Future[_Described] = Future()
            if name in self.timing_out:
                future.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
                out[name] = future
                continue
            if t is None or name in self.missing_on_describe:
                future.set_exception(KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)))
                out[name] = future
                continue
            assert t is not None
            parts = [_DescribedPartition(p, [_Node(b, f"rack-{b}") for b in t.replicas]) for p in range(t.partitions)]
            future.set_result(_Described(name, _ClientUuid(t.id), parts))
            out[name] = future
        return out

    def poll(self, timeout: float) -> int:  # what drain() calls
        return 0


def _cache(admin: FakeAdmin) -> MetadataCache:
    # A 1 ms interval for the tests of the periodic refresh (``_periodic``).
    cache = MetadataCache({"bootstrap.servers": "127.0.0.1:1"}, refresh_interval_s=0.001)
    cache._admin = admin  # type: ignore[assignment]
    return cache


def _big() -> tuple[FakeAdmin, MetadataCache]:
    """A cluster of DESCRIBE_CHANGED_FROM_PARTITIONS partitions and more, and a cache of it."""
    admin = FakeAdmin()
    admin.topics["big"] = _Topic(uuid.uuid4(), MetadataCache.DESCRIBE_CHANGED_FROM_PARTITIONS)
    admin.topics["small"] = _Topic(uuid.uuid4(), 3)
    return admin, _cache(admin)


async def _periodic(admin: FakeAdmin, cache: MetadataCache, descriptions: int) -> None:
    """The periodic refresh run until it has described ``descriptions`` times."""
    cache.start()
    try:
        while len(admin.described) < descriptions:
            await asyncio.sleep(0.001)
    finally:
        await cache.stop()


def test_a_large_cluster_is_described_only_where_the_listing_changed() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh(full=False)  # nothing known yet: all of them
        assert admin.described == [["big", "small"]]
        big = cache.topics["big"]

        await cache.refresh(full=False)  # nothing changed: nothing described
        assert admin.described[1:] == []
        assert cache.topics["big"] is big and cache.version == 1

        admin.topics["small"].partitions = 5  # partitions added
        admin.topics["new"] = _Topic(uuid.uuid4(), 1)
        admin.topics["big"].replicas = (2,)  # reassigned: the racks may differ
        await cache.refresh(full=False)
        assert admin.described[1:] == [["big", "new", "small"]]
        assert cache.topics["small"].partitions == 5
        assert cache.topics["big"].partition_racks[0] == ("rack-2",)
        assert cache.topics["new"].topic_id == admin.topics["new"].id

    asyncio.run(main())


def test_a_topic_recreated_alike_is_found_by_the_next_full_refresh() -> None:
    async def main() -> None:
        admin, cache = _big()
        deleted: list[TopicInfo] = []

        async def on_deleted(topics: list[TopicInfo]) -> None:
            deleted.extend(topics)

        cache.on_topics_deleted(on_deleted)
        await cache.refresh()
        old = admin.topics["small"].id
        admin.topics["small"].id = uuid.uuid4()  # deleted and re-created between two listings

        await cache.refresh(full=False)  # the listing cannot tell
        assert cache.topics["small"].topic_id == old and deleted == []

        await cache.refresh()
        assert cache.topics["small"].topic_id == admin.topics["small"].id
        assert [(t.name, t.topic_id) for t in deleted] == [("small", old)]

    asyncio.run(main())


def test_a_lookup_by_an_unknown_id_describes_every_topic() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        admin.topics["small"].id = new = uuid.uuid4()
        await cache.refresh(full=False)  # a partial refresh since does not answer the lookup
        found = await cache.lookup("", new)
        assert found is not None and found.name == "small"
        assert admin.described[-1] == ["big", "small"]

    asyncio.run(main())


def test_a_small_cluster_is_described_whole_every_time() -> None:
    async def main() -> None:
        admin = FakeAdmin()
        admin.topics["a"] = _Topic(uuid.uuid4(), 3)
        cache = _cache(admin)
        await cache.refresh(full=False)
        admin.topics["a"].id = new = uuid.uuid4()
        await cache.refresh(full=False)
        assert admin.described == [["a"], ["a"]]
        assert cache.topics["a"].topic_id == new

    asyncio.run(main())


def test_the_periodic_refresh_describes_all_every_so_often() -> None:
    async def main() -> None:
        admin, cache = _big()
        await _periodic(admin, cache, 2)
        # The first refresh and the DESCRIBE_ALL_EVERY-th one after it describe everything;
        # the partial ones in between find nothing changed and describe nothing.
        assert admin.described[:2] == [["big", "small"], ["big", "small"]]
        assert admin.described_at[:2] == [1, 1 + MetadataCache.DESCRIBE_ALL_EVERY]

    asyncio.run(main())


def test_a_topic_described_with_no_answer_is_described_again() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        old = cache.topics["small"].topic_id
        admin.topics["small"].partitions = 4  # listed changed (re-created with 4 partitions)...
        admin.missing_on_describe = {"small"}  # ...and gone again when described
        await cache.refresh(full=False)
        assert cache.topics["small"].topic_id == old  # kept as missing once (``_settle``)
        admin.topics["small"].id = new = uuid.uuid4()  # there again, the listing as just before
        admin.missing_on_describe = set()
        await cache.refresh(full=False)
        assert admin.described[-1] == ["small"] and cache.topics["small"].topic_id == new

    asyncio.run(main())


def test_a_full_refresh_that_failed_is_tried_again_by_the_next() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()  # listing 1, full
        every = MetadataCache.DESCRIBE_ALL_EVERY
        original = admin.list_topics

        def failing_when_full_is_due(timeout: float) -> _Cluster:
            if admin.listings + 1 == 1 + every:  # the periodic full one
                admin.listings += 1
                raise KafkaException(KafkaError(KafkaError._TRANSPORT, "down"))
            return original(timeout)

        admin.list_topics = failing_when_full_is_due  # type: ignore[method-assign]
        await _periodic(admin, cache, 2)
        # Partial refreshes (nothing changed, nothing described) until the full one, which
        # failed; the next refresh is full.
        assert admin.described_at[:2] == [1, 2 + every]

    asyncio.run(main())


# --- what requests ask for is bounded by what they name (a client cannot make the sidecar
# describe the whole cluster over and over) ---


def test_a_lookup_of_an_unknown_name_describes_that_name_alone() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        admin.topics["new"] = _Topic(uuid.uuid4(), 2)
        found = await cache.lookup("new", None)
        assert found is not None and found.topic_id == admin.topics["new"].id and found.partitions == 2
        assert await cache.lookup("made-up", None) is None
        # Neither lookup listed or described the cluster: each asked for its own name only.
        assert admin.listings == 1
        assert admin.described[1:] == [["new"], ["made-up"]]
        assert cache.knows("new") and cache.image.topic("new") is not None
        # The next partial refresh has no listing of "new": it describes it once more.
        await cache.refresh(full=False)
        assert admin.described[-1] == ["new"]

    asyncio.run(main())


def test_lookups_asked_for_together_are_one_description_of_the_names() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        names = [f"nope-{i}" for i in range(50)]
        found = await asyncio.gather(*(cache.lookup(n, None) for n in names))
        assert found == [None] * 50
        assert admin.listings == 1
        # The first lookup takes its own name; the other 49, asked for while it ran, go in one.
        assert len(admin.described) - 1 <= 2
        assert sorted(n for d in admin.described[1:] for n in d) == sorted(names)

    asyncio.run(main())


def test_a_name_no_topic_can_have_is_not_looked_up() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        for name in ("", ".", "..", "a/b", "x" * 250, "caf\u00e9"):
            assert await cache.lookup(name, None) is None
        await cache.refresh_soon(["", "a b"])
        assert admin.described[1:] == [] and admin.listings == 1

    asyncio.run(main())


def test_a_heartbeat_naming_unknown_topics_learns_them_without_listing_the_cluster() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        admin.topics["orders"] = _Topic(uuid.uuid4(), 4)
        await cache.refresh_soon(["orders", "made-up"])
        assert cache.topics["orders"].partitions == 4
        assert admin.listings == 1 and admin.described[1:] == [["made-up", "orders"]]

    asyncio.run(main())


def test_a_regex_subscription_lists_the_cluster_and_describes_only_what_changed() -> None:
    async def main() -> None:
        admin = FakeAdmin()  # a small cluster: the periodic refresh would describe it whole
        admin.topics["a"] = _Topic(uuid.uuid4(), 3)
        cache = _cache(admin)
        await cache.refresh()
        admin.topics["events-1"] = _Topic(uuid.uuid4(), 1)
        await cache.refresh_soon((), regex=True)
        assert cache.knows("events-1")
        assert admin.listings == 2 and admin.described[1:] == [["events-1"]]

    asyncio.run(main())


def test_refreshes_asked_for_by_unknown_ids_are_shared() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        ids = [uuid.uuid4() for _ in range(20)]
        found = await asyncio.gather(*(cache.lookup("", i) for i in ids))
        assert found == [None] * 20
        # Twenty requests naming ids the cluster lacks: one whole refresh (the first lookup's),
        # perhaps a second for those that asked while it ran; never one each.
        assert admin.listings - 1 <= 2

    asyncio.run(main())


def test_names_asked_for_unknown_ids_share_one_refresh() -> None:
    async def main() -> None:
        admin, cache = _big()
        await cache.refresh()
        cache._last_refresh -= 2  # older than the second name_of waits for
        names = await asyncio.gather(*(cache.name_of(uuid.uuid4()) for _ in range(20)))
        assert names == [None] * 20
        assert admin.listings == 2  # one refresh for all twenty, not one each

    asyncio.run(main())


def _recorded(cache: MetadataCache) -> list[TopicInfo]:
    deleted: list[TopicInfo] = []

    async def on_deleted(topics: list[TopicInfo]) -> None:
        deleted.extend(topics)

    cache.on_topics_deleted(on_deleted)
    return deleted


def test_a_clients_metadata_answer_showing_a_topic_re_created_replaces_it_before_the_answer() -> None:
    """Deleted and re-created past the sidecar: the first client told of the new incarnation
    (a Metadata answer through the gateway) has the picture updated, and the old incarnation's
    offsets dropped, before it could commit against the old one."""

    async def main() -> None:
        admin = FakeAdmin()
        admin.topics["a"] = _Topic(uuid.uuid4(), 3)
        admin.topics["b"] = _Topic(uuid.uuid4(), 1)
        cache = _cache(admin)
        deleted = _recorded(cache)
        await cache.refresh()
        old = admin.topics["a"].id
        # Agreeing answers (and answers by id alone, unknown names, v9- answers without ids) cost nothing.
        assert cache.seen([("a", old, 0), ("b", admin.topics["b"].id, 0), (None, uuid.uuid4(), 0)]) is None
        assert cache.seen([("a", uuid.UUID(int=0), 0), ("zzz", uuid.uuid4(), 3)]) is None
        admin.topics["a"].id = new = uuid.uuid4()
        taken = cache.seen([("a", new, 0), ("b", admin.topics["b"].id, 0)])
        assert taken is not None
        await taken
        assert cache.topics["a"].topic_id == new
        assert [(t.name, t.topic_id) for t in deleted] == [("a", old)]
        assert admin.described[-1] == ["a"]  # only the contradicted topic described

    asyncio.run(main())


def test_a_clients_answer_that_a_known_topic_is_unknown_deletes_it_once_a_listing_agrees() -> None:
    async def main() -> None:
        admin = FakeAdmin()
        admin.topics["a"] = _Topic(uuid.uuid4(), 3)
        cache = _cache(admin)
        deleted = _recorded(cache)
        await cache.refresh()
        old = admin.topics["a"].id
        # A lagging broker's answer: the cluster still has it, nothing changes.
        taken = cache.seen([("a", uuid.UUID(int=0), 3)])
        assert taken is not None
        await taken
        assert cache.topics["a"].topic_id == old and deleted == []
        # A description that fails for another reason is no sign of anything.
        admin.timing_out = {"a"}
        taken = cache.seen([("a", uuid.UUID(int=0), 3)])
        assert taken is not None
        await taken
        assert cache.topics["a"].topic_id == old and deleted == [] and not cache._confirmed
        admin.timing_out = set()
        # Deleted past the sidecar: the client's answer, the description and the listing agree.
        del admin.topics["a"]
        taken = cache.seen([("a", uuid.UUID(int=0), 3)])
        assert taken is not None
        await taken
        assert "a" not in cache.topics
        assert [(t.name, t.topic_id) for t in deleted] == [("a", old)]

    asyncio.run(main())


def test_topics_created_through_the_sidecar_are_known_at_once() -> None:
    async def main() -> None:
        admin = FakeAdmin()
        admin.topics["kept"] = _Topic(uuid.uuid4(), 1)
        cache = _cache(admin)
        deleted = _recorded(cache)
        await cache.refresh()
        old = admin.topics["kept"].id
        admin.topics["new"] = _Topic(uuid.uuid4(), 2)
        admin.topics["kept"].id = uuid.uuid4()  # deleted past the sidecar, re-created through it
        await cache.created_by_request(["new", "kept"])
        assert cache.topics["new"].partitions == 2
        assert cache.topics["kept"].topic_id == admin.topics["kept"].id
        assert [(t.name, t.topic_id) for t in deleted] == [("kept", old)]

    asyncio.run(main())
