"""Answers the gateway's group APIs with the coordinator service.

Converts the gateway's wire messages to the service's models and back; holds no group rules.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.gateway.handler import RequestContext
from coordinator.gateway.messages import offset_commit as wire_commit
from coordinator.gateway.messages import offset_fetch as wire_fetch
from coordinator.gateway.schema import ZERO_UUID, Message
from coordinator.offsets import messages as m
from coordinator.service.metadata_cache import TopicNames
from coordinator.service.service import GroupCoordinatorService

log = logging.getLogger(__name__)


class CoordinatorApiHandler:
    """``GroupApiHandler`` over a ``GroupCoordinatorService``."""

    def __init__(self, service: GroupCoordinatorService, topics: TopicNames) -> None:
        self.service = service
        self.topics = topics
        self._routes: dict[type[Message], Callable[[RequestContext, Any], Awaitable[Message]]] = {
            wire_commit.OffsetCommitRequest: self.offset_commit,
            wire_fetch.OffsetFetchRequest: self.offset_fetch,
        }

    def serves(self, request_type: type[Message]) -> bool:
        return request_type in self._routes

    async def handle(self, context: RequestContext, request: Message) -> Message:
        route = self._routes.get(type(request))
        if route is None:
            raise LookupError(f"no coordinator route for {type(request).__name__}")
        return await route(context, request)

    # --- OffsetCommit --------------------------------------------------------------------

    async def offset_commit(
        self, context: RequestContext, request: wire_commit.OffsetCommitRequest
    ) -> wire_commit.OffsetCommitResponse:
        topics = []
        unknown: list[wire_commit.OffsetCommitRequestTopic] = []
        for t in request.topics:
            name, topic_id = await self._resolve(t.name, t.topic_id)
            if name is None:
                unknown.append(t)
                continue
            topics.append(
                m.OffsetCommitRequestTopic(
                    name,
                    [
                        m.OffsetCommitRequestPartition(
                            p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata
                        )
                        for p in t.partitions
                    ],
                    topic_id,
                )
            )
        answer = await self.service.commit_offsets(
            m.OffsetCommitRequest(
                group_id=request.group_id,
                topics=topics,
                generation_id_or_member_epoch=request.generation_id_or_member_epoch,
                member_id=request.member_id,
                group_instance_id=request.group_instance_id,
                retention_time_ms=request.retention_time_ms,
                api_version=context.api_version,
            )
        )
        by_name = {t.name: t for t in request.topics}
        out = [
            wire_commit.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=by_name.get(t.name, wire_commit.OffsetCommitRequestTopic()).topic_id,
                partitions=[
                    wire_commit.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=p.error_code
                    )
                    for p in t.partitions
                ],
            )
            for t in answer.topics
        ]
        out += [
            wire_commit.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=[
                    wire_commit.OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                    for p in t.partitions
                ],
            )
            for t in unknown
        ]
        return wire_commit.OffsetCommitResponse(topics=out)

    async def _resolve(self, name: str, topic_id: Any) -> tuple[str | None, str | None]:
        """(name, topic id) of a request topic named by name (v0-9) or by id (v10+)."""
        if topic_id is not None and topic_id != ZERO_UUID:
            resolved = await self.topics.name_of(topic_id)
            return resolved, str(topic_id)
        return name, await self.topics.id_of(name)

    # --- OffsetFetch ---------------------------------------------------------------------

    async def offset_fetch(
        self, context: RequestContext, request: wire_fetch.OffsetFetchRequest
    ) -> wire_fetch.OffsetFetchResponse:
        if context.api_version < 8:
            topics = None
            if request.topics is not None:
                topics = [m.OffsetFetchRequestTopic(t.name, list(t.partition_indexes)) for t in request.topics]
            (group,) = await self.service.fetch_offsets([m.OffsetFetchRequestGroup(request.group_id, topics)])
            return wire_fetch.OffsetFetchResponse(
                error_code=group.error_code,
                topics=[
                    wire_fetch.OffsetFetchResponseTopic(
                        name=t.name,
                        partitions=[
                            wire_fetch.OffsetFetchResponsePartition(
                                partition_index=p.partition_index,
                                committed_offset=p.committed_offset,
                                committed_leader_epoch=p.committed_leader_epoch,
                                metadata=p.metadata,
                                error_code=p.error_code,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in group.topics
                ],
            )
        wanted = []
        ids: dict[str, Any] = {}
        for g in request.groups:
            topics = None
            if g.topics is not None:
                topics = []
                for t in g.topics:
                    name, _ = await self._resolve(t.name, t.topic_id)
                    if name is None:
                        continue
                    ids[name] = t.topic_id
                    topics.append(m.OffsetFetchRequestTopic(name, list(t.partition_indexes)))
            wanted.append(m.OffsetFetchRequestGroup(g.group_id, topics, g.member_id, g.member_epoch))
        groups = await self.service.fetch_offsets(wanted)
        out = []
        for group in groups:
            topics_out = []
            for answered in group.topics:
                topic_id = ids.get(answered.name)
                if topic_id is None and context.api_version >= 10:
                    topic_id = await self.topics.uuid_of(answered.name)
                topics_out.append(
                    wire_fetch.OffsetFetchResponseTopics(
                        name=answered.name,
                        topic_id=topic_id or ZERO_UUID,
                        partitions=[
                            wire_fetch.OffsetFetchResponsePartitions(
                                partition_index=p.partition_index,
                                committed_offset=p.committed_offset,
                                committed_leader_epoch=p.committed_leader_epoch,
                                metadata=p.metadata,
                                error_code=p.error_code,
                            )
                            for p in answered.partitions
                        ],
                    )
                )
            out.append(
                wire_fetch.OffsetFetchResponseGroup(
                    group_id=group.group_id, topics=topics_out, error_code=group.error_code
                )
            )
        return wire_fetch.OffsetFetchResponse(groups=out)
