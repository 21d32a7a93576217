"""A topic name the sidecar's picture lacks is looked up alone, on the real broker: a topic
created after the last refresh is learned with its id and partitions, and a name the cluster
lacks is neither learned nor created by the lookup."""

from __future__ import annotations

import asyncio

from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.service.metadata_cache import MetadataCache
from tests.clients.support import create_topic


def test_a_new_topic_is_learned_by_name_and_a_missing_one_is_not_created(bootstrap: str, unique_name: str) -> None:
    topic, missing = f"{unique_name}-new", f"{unique_name}-missing"

    async def main() -> None:
        cache = MetadataCache({"bootstrap.servers": bootstrap})
        await cache.refresh()
        assert not cache.knows(topic)
        create_topic(bootstrap, topic, 3)
        listed_before = cache._listed_start
        await cache.learn([topic, missing, "not/a topic"])
        assert cache.knows(topic) and cache.topics[topic].partitions == 3
        assert not cache.knows(missing)
        assert cache._listed_start == listed_before  # no refresh of the whole picture
        # The id is the cluster's: the next full refresh finds the same topic, not a new one.
        learned = cache.topics[topic].topic_id
        await cache.refresh()
        assert cache.topics[topic].topic_id == learned

    asyncio.run(main())
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert topic in listed and missing not in listed
