"""What the gateway tells the coordinator of topics, from the cluster's answers to clients: the
topics a relayed CreateTopics created, and every Metadata answer; each answer is held until the
coordinator has taken it in (``serve`` wires both to its topic picture, ``MetadataCache``)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.gateway import GatewayConfig
from groupcoord.coordinator.messages.metadata import MetadataResponse
from tests.gateway.conftest import GatewayThread
from tests.gateway.fakes import FakeGroupHandler

pytestmark = pytest.mark.integration


def test_topic_changes_and_metadata_answers_are_taken_in_before_the_client_has_the_answer(bootstrap: str) -> None:
    topic = f"created-{uuid.uuid4().hex[:8]}"
    events: list[str] = []
    with GatewayThread(GatewayConfig(bootstrap_servers=bootstrap, listen_port=0), FakeGroupHandler()) as gateway:

        async def created(names: list[str]) -> None:
            await asyncio.sleep(0.3)  # the answer waits for this
            events.append(f"created {','.join(names)}")

        async def taken(answer: MetadataResponse) -> None:
            await asyncio.sleep(0.3)
            events.append(f"metadata {','.join(sorted(t.name or '' for t in answer.topics))}")

        def seen(answer: MetadataResponse) -> asyncio.Future[None] | None:
            if not any(t.name == topic for t in answer.topics) or any(e.startswith("metadata") for e in events):
                return None
            events.append("metadata seen")
            return asyncio.ensure_future(taken(answer))

        gateway.server.creation_listeners.append(created)
        gateway.server.metadata_seen = seen
        admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
        events.append("create answered")
        client = Consumer({"bootstrap.servers": gateway.bootstrap, "group.id": "g"})
        try:
            assert client.list_topics(topic, timeout=10).topics[topic].error is None
        finally:
            client.close()
        events.append("metadata answered")

        async def deleted(names: list[str], ids: list[uuid.UUID]) -> None:
            await asyncio.sleep(0.3)
            events.append(f"deleted {','.join(names)}")

        gateway.server.deletion_listeners.append(deleted)
        admin.delete_topics([topic])[topic].result(10)
        events.append("delete answered")
    assert events.index(f"created {topic}") < events.index("create answered")
    assert events.index(f"metadata {topic}") < events.index("metadata answered")
    assert events.index(f"deleted {topic}") < events.index("delete answered")
