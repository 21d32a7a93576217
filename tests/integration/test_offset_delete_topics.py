"""OffsetDelete of topics or partitions the cluster does not have, through the real edge, runtime,
metadata and broker: answered UNKNOWN_TOPIC_OR_PARTITION before the coordinator, as Kafka's
KafkaApis.handleOffsetDeleteRequest does, and never deleted."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import ConnectionContext
from groupcoord.coordinator.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from groupcoord.coordinator.service.gateway_handler import CoordinatorApiHandler
from groupcoord.coordinator.service.metadata_cache import MetadataCache
from tests.clients.support import create_topic
from tests.integration.runtime_helpers import commit_request, fetch_request, running_service
from tests.messages import delete_request, delete_topic

pytestmark = pytest.mark.integration

OFFSET_COMMIT, OFFSET_DELETE = 8, 47


def _context(api_key: int, version: int) -> ConnectionContext:
    return ConnectionContext(RequestHeader(api_key, version, 1, "test"), "127.0.0.1", 50_000, 9092)


def test_offset_delete_of_an_unknown_topic_or_partition(bootstrap: str, unique_name: str) -> None:
    topic, gone, group = f"{unique_name}-t", f"{unique_name}-never", f"{unique_name}-g"
    create_topic(bootstrap, topic, 2)

    async def main() -> None:
        metadata = MetadataCache({"bootstrap.servers": bootstrap})
        await metadata.refresh()
        async with running_service(bootstrap, unique_name) as service:
            handler = CoordinatorApiHandler(service, metadata)
            await handler.handle(_context(OFFSET_COMMIT, 9), commit_request(group, topic, {0: 5, 1: 6}))

            async def delete(request: OffsetDeleteRequest) -> OffsetDeleteResponse:
                answer = await handler.handle(_context(OFFSET_DELETE, 0), request)
                assert isinstance(answer, OffsetDeleteResponse)
                return answer

            answer = await delete(delete_request(group, [delete_topic(topic, [0, 99]), delete_topic(gone, [0])]))
            assert answer.error_code == ErrorCode.NONE
            # Kafka's merge: one entry per topic, the partitions answered before the coordinator first.
            assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.topics] == [
                (topic, [(99, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (0, ErrorCode.NONE)]),
                (gone, [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
            ]
            (fetched,) = await service.fetch_offsets(fetch_request(group, topic, [0, 1]))
            assert [p.committed_offset for p in fetched.topics[0].partitions] == [-1, 6]
            # A group-level error from the coordinator is the whole answer, as in Kafka.
            answer = await delete(delete_request(f"{group}-none", [delete_topic(gone, [0])]))
            assert (answer.error_code, answer.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])

    asyncio.run(main())
