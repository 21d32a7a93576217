"""Answers the gateway's group APIs with the coordinator service.

Converts the gateway's wire messages to the service's models and back; holds no group rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.gateway.handler import RequestContext
from coordinator.gateway.messages import alter_configs as wire_alter_configs
from coordinator.gateway.messages import consumer_group_describe as wire_cgd
from coordinator.gateway.messages import consumer_group_heartbeat as wire_cgh
from coordinator.gateway.messages import delete_groups as wire_delete
from coordinator.gateway.messages import describe_configs as wire_describe_configs
from coordinator.gateway.messages import describe_groups as wire_describe
from coordinator.gateway.messages import heartbeat as wire_heartbeat
from coordinator.gateway.messages import incremental_alter_configs as wire_iac
from coordinator.gateway.messages import join_group as wire_join
from coordinator.gateway.messages import leave_group as wire_leave
from coordinator.gateway.messages import list_groups as wire_list
from coordinator.gateway.messages import offset_commit as wire_commit
from coordinator.gateway.messages import offset_delete as wire_offset_delete
from coordinator.gateway.messages import offset_fetch as wire_fetch
from coordinator.gateway.messages import sync_group as wire_sync
from coordinator.gateway.messages import txn_offset_commit as wire_txn
from coordinator.gateway.schema import ZERO_UUID, Message
from coordinator.groups import classic, group_config
from coordinator.groups import consumer as cg
from coordinator.offsets import messages as m
from coordinator.service.convert import convert
from coordinator.service.metadata_cache import TopicNames
from coordinator.service.service import GroupCoordinatorService

log = logging.getLogger(__name__)

# How long a heartbeat naming a topic the metadata lacks waits for a fresh picture.
SUBSCRIPTION_REFRESH_WAIT_S = 1.0


class CoordinatorApiHandler:
    """``GroupApiHandler`` over a ``GroupCoordinatorService``."""

    def __init__(self, service: GroupCoordinatorService, topics: TopicNames) -> None:
        self.service = service
        self.topics = topics
        self._routes: dict[type[Message], Callable[[RequestContext, Any], Awaitable[Message]]] = {
            wire_commit.OffsetCommitRequest: self.offset_commit,
            wire_fetch.OffsetFetchRequest: self.offset_fetch,
            wire_offset_delete.OffsetDeleteRequest: self.offset_delete,
            wire_txn.TxnOffsetCommitRequest: self.txn_offset_commit,
            wire_join.JoinGroupRequest: self.join_group,
            wire_sync.SyncGroupRequest: self.sync_group,
            wire_heartbeat.HeartbeatRequest: self.heartbeat,
            wire_leave.LeaveGroupRequest: self.leave_group,
            wire_list.ListGroupsRequest: self.list_groups,
            wire_describe.DescribeGroupsRequest: self.describe_groups,
            wire_delete.DeleteGroupsRequest: self.delete_groups,
            wire_cgh.ConsumerGroupHeartbeatRequest: self.consumer_group_heartbeat,
            wire_cgd.ConsumerGroupDescribeRequest: self.consumer_group_describe,
            wire_describe_configs.DescribeConfigsRequest: self.describe_configs,
            wire_iac.IncrementalAlterConfigsRequest: self.incremental_alter_configs,
            wire_alter_configs.AlterConfigsRequest: self.alter_configs,
        }

    async def handle(self, context: RequestContext, request: Message) -> Message:
        route = self._routes.get(type(request))
        if route is None:
            raise LookupError(f"no coordinator route for {type(request).__name__}")
        return await route(context, request)

    # --- OffsetCommit --------------------------------------------------------------------

    async def offset_commit(
        self, context: RequestContext, request: wire_commit.OffsetCommitRequest
    ) -> wire_commit.OffsetCommitResponse:
        """Topic identity is resolved once per request topic (by id from v10, by name before);
        the answer is built against the request's own topic objects, so a v10 client gets its
        topic ids back. As in Kafka's KafkaApis, partitions of topics (or partition indexes) the
        cluster does not have are answered before the coordinator and never stored."""
        by_id = context.api_version >= 10
        answers: list[list[tuple[int, int] | None]] = []  # per request topic, per partition: (index, error) or None
        topics: list[m.OffsetCommitRequestTopic] = []
        for t in request.topics:
            info = await self.topics.lookup(t.name, t.topic_id if by_id else None)
            if info is None:
                missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                answers.append([(p.partition_index, missing) for p in t.partitions])
                continue
            local: list[tuple[int, int] | None] = []
            valid = []
            for p in t.partitions:
                if 0 <= p.partition_index < info.partitions:
                    local.append(None)
                    valid.append(
                        m.OffsetCommitRequestPartition(
                            p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata
                        )
                    )
                else:
                    local.append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            answers.append(local)
            if valid:
                topics.append(m.OffsetCommitRequestTopic(info.name, valid, info.id_string))
        coordinator_answers: Iterator[tuple[int, int]] = iter(())
        if topics:
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
            # The service answers the topics it was given, in order: one answer per valid partition.
            coordinator_answers = iter([(p.partition_index, p.error_code) for t in answer.topics for p in t.partitions])
        out = []
        for t, local in zip(request.topics, answers, strict=True):
            partitions = []
            for partition in local:
                index, code = partition if partition is not None else next(coordinator_answers)
                partitions.append(wire_commit.OffsetCommitResponsePartition(partition_index=index, error_code=code))
            out.append(wire_commit.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=partitions))
        return wire_commit.OffsetCommitResponse(topics=out)

    async def _resolve(self, name: str, topic_id: Any) -> tuple[str | None, str | None]:
        """(name, topic id in the log's string form) of a request topic named by name (v0-9) or by id (v10+)."""
        info = await self.topics.lookup(name, topic_id)
        if info is None:
            return (None, None) if topic_id is not None and topic_id != ZERO_UUID else (name, None)
        return info.name, info.id_string

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
        # Per group: the topics named by an id the cluster does not know (v10+): UNKNOWN_TOPIC_ID.
        unknown: list[list[Any]] = []
        for g in request.groups:
            topics = None
            unknown.append([])
            if g.topics is not None:
                topics = []
                for t in g.topics:
                    name, _ = await self._resolve(t.name, t.topic_id if context.api_version >= 10 else None)
                    if name is None:
                        unknown[-1].append(t)
                        continue
                    ids[name] = t.topic_id
                    topics.append(m.OffsetFetchRequestTopic(name, list(t.partition_indexes)))
            wanted.append(m.OffsetFetchRequestGroup(g.group_id, topics, g.member_id, g.member_epoch))
        groups = await self.service.fetch_offsets(wanted)
        out = []
        for group, missing in zip(groups, unknown, strict=True):
            topics_out = [
                wire_fetch.OffsetFetchResponseTopics(
                    name=t.name,
                    topic_id=t.topic_id,
                    partitions=[
                        wire_fetch.OffsetFetchResponsePartitions(
                            partition_index=p, committed_offset=-1, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                        )
                        for p in t.partition_indexes
                    ],
                )
                for t in missing
            ]
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

    # --- OffsetDelete / TxnOffsetCommit ------------------------------------------------------

    async def offset_delete(
        self, context: RequestContext, request: wire_offset_delete.OffsetDeleteRequest
    ) -> wire_offset_delete.OffsetDeleteResponse:
        answer = await self.service.delete_offsets(
            m.OffsetDeleteRequest(
                request.group_id,
                [m.OffsetDeleteRequestTopic(t.name, [p.partition_index for p in t.partitions]) for t in request.topics],
            )
        )
        return convert(answer, wire_offset_delete.OffsetDeleteResponse)

    async def txn_offset_commit(
        self, context: RequestContext, request: wire_txn.TxnOffsetCommitRequest
    ) -> wire_txn.TxnOffsetCommitResponse:
        # Transactional offsets become visible on the transaction's commit marker, which is
        # written to the cluster's own __consumer_offsets and never seen by this sidecar. Rather
        # than pretend, every partition is refused, so the producer fails the transaction.
        return wire_txn.TxnOffsetCommitResponse(
            topics=[
                wire_txn.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        wire_txn.TxnOffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=ErrorCode.UNSUPPORTED_VERSION
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )

    # --- classic protocol --------------------------------------------------------------------

    async def join_group(self, context: RequestContext, request: wire_join.JoinGroupRequest) -> Message:
        answer = await self.service.join_group(
            convert(
                request,
                classic.JoinGroupRequest,
                api_version=context.api_version,
                client_id=context.header.client_id or "",
                client_host=f"/{context.client_host}",
                # Member ids must not be guessable: the pure logic derives them from these bytes.
                nonce=secrets.token_bytes(16),
                may_describe_topic=context.may_describe_topic,
            )
        )
        response = convert(answer, wire_join.JoinGroupResponse)
        if response.protocol_name is None and context.api_version < 7:
            response.protocol_name = ""  # not nullable before v7
        return response

    async def sync_group(self, context: RequestContext, request: wire_sync.SyncGroupRequest) -> Message:
        answer = await self.service.sync_group(
            convert(request, classic.SyncGroupRequest, api_version=context.api_version)
        )
        return convert(answer, wire_sync.SyncGroupResponse)

    async def heartbeat(self, context: RequestContext, request: wire_heartbeat.HeartbeatRequest) -> Message:
        answer = await self.service.heartbeat(
            convert(request, classic.HeartbeatRequest, api_version=context.api_version)
        )
        return convert(answer, wire_heartbeat.HeartbeatResponse)

    async def leave_group(self, context: RequestContext, request: wire_leave.LeaveGroupRequest) -> Message:
        answer = await self.service.leave_group(
            convert(request, classic.LeaveGroupRequest, api_version=context.api_version)
        )
        return convert(answer, wire_leave.LeaveGroupResponse)

    # --- group administration ----------------------------------------------------------------

    async def list_groups(self, context: RequestContext, request: wire_list.ListGroupsRequest) -> Message:
        error, groups = await self.service.list_groups(request.states_filter, request.types_filter)
        return wire_list.ListGroupsResponse(
            error_code=error, groups=[convert(g, wire_list.ListGroupsResponseListedGroup) for g in groups]
        )

    async def describe_groups(self, context: RequestContext, request: wire_describe.DescribeGroupsRequest) -> Message:
        described = await self.service.describe_groups(list(request.groups), context.api_version)
        return wire_describe.DescribeGroupsResponse(
            groups=[convert(d, wire_describe.DescribeGroupsResponseDescribedGroup) for d in described]
        )

    async def delete_groups(self, context: RequestContext, request: wire_delete.DeleteGroupsRequest) -> Message:
        results = await self.service.delete_groups(list(request.groups_names))
        return wire_delete.DeleteGroupsResponse(
            results=[
                wire_delete.DeleteGroupsResponseDeletableGroupResult(group_id=g, error_code=code) for g, code in results
            ]
        )

    # --- consumer protocol -------------------------------------------------------------------

    async def consumer_group_heartbeat(
        self, context: RequestContext, request: wire_cgh.ConsumerGroupHeartbeatRequest
    ) -> Message:
        names = request.subscribed_topic_names or ()
        if request.subscribed_topic_regex or any(not self.topics.knows(name) for name in names):
            # A topic created a moment ago (or one a new regex may match) must not wait for the
            # next periodic refresh to be assigned: learn about it now, so that this very
            # heartbeat can be answered with an assignment as a broker would (bounded wait).
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.topics.refresh_soon()), SUBSCRIPTION_REFRESH_WAIT_S)
        answer = await self.service.consumer_group_heartbeat(
            convert(request, cg.ConsumerGroupHeartbeatRequest),
            cg.RequestContext(
                api_version=context.api_version,
                client_id=context.header.client_id or "",
                client_host=f"/{context.client_host}",
                nonce=secrets.token_bytes(16),
                may_describe_topic=context.may_describe_topic,
            ),
        )
        return convert(answer, wire_cgh.ConsumerGroupHeartbeatResponse)

    async def consumer_group_describe(
        self, context: RequestContext, request: wire_cgd.ConsumerGroupDescribeRequest
    ) -> Message:
        described = await self.service.consumer_group_describe(list(request.group_ids))
        return wire_cgd.ConsumerGroupDescribeResponse(
            groups=[convert(d, wire_cgd.ConsumerGroupDescribeResponseDescribedGroup) for d in described]
        )

    # --- group configs (the gateway passes only the GROUP resources) ----------------------------

    async def describe_configs(
        self, context: RequestContext, request: wire_describe_configs.DescribeConfigsRequest
    ) -> Message:
        results = []
        for r in request.resources:
            result = wire_describe_configs.DescribeConfigsResult(
                resource_type=r.resource_type, resource_name=r.resource_name, error_message=None
            )
            if not r.resource_name:
                result.error_code, result.error_message = ErrorCode.INVALID_REQUEST, "Group name must not be empty."
            else:
                code, described = await self.service.describe_group_configs(r.resource_name, r.configuration_keys)
                result.error_code = code
                result.configs = [
                    _described_config(d, context.api_version, request.include_synonyms, request.include_documentation)
                    for d in described
                ]
            results.append(result)
        return wire_describe_configs.DescribeConfigsResponse(results=results)

    async def incremental_alter_configs(
        self, context: RequestContext, request: wire_iac.IncrementalAlterConfigsRequest
    ) -> Message:
        out = []
        for r in request.resources:
            refusal = _malformed_config_resource(r.resource_name, [c.name for c in r.configs])
            if refusal is not None:
                code, message = refusal
            else:
                changes = [group_config.ConfigChange(c.name, c.config_operation, c.value) for c in r.configs]
                code, message = await self.service.alter_group_config(
                    r.resource_name, changes, None, request.validate_only
                )
            out.append(
                wire_iac.IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                    error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name
                )
            )
        return wire_iac.IncrementalAlterConfigsResponse(responses=out)

    async def alter_configs(self, context: RequestContext, request: wire_alter_configs.AlterConfigsRequest) -> Message:
        """The legacy AlterConfigs: the group's overrides become exactly the given set."""
        out = []
        for r in request.resources:
            refusal = _malformed_config_resource(r.resource_name, [c.name for c in r.configs])
            if refusal is not None:
                code, message = refusal
            else:
                replacement = [(c.name, c.value) for c in r.configs]
                code, message = await self.service.alter_group_config(
                    r.resource_name, None, replacement, request.validate_only
                )
            out.append(
                wire_alter_configs.AlterConfigsResourceResponse(
                    error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name
                )
            )
        return wire_alter_configs.AlterConfigsResponse(responses=out)


def _malformed_config_resource(name: str, keys: list[str]) -> tuple[int, str | None] | None:
    """Kafka's refusals of an alter request's GROUP resource before anything is validated."""
    if not name:
        return int(ErrorCode.INVALID_REQUEST), "Group name must not be empty."
    if len(set(keys)) != len(keys):
        return int(ErrorCode.INVALID_REQUEST), "Error due to duplicate config keys"
    return None


def _described_config(
    d: group_config.DescribedConfig, api_version: int, synonyms: bool, documentation: bool
) -> wire_describe_configs.DescribeConfigsResourceResult:
    return wire_describe_configs.DescribeConfigsResourceResult(
        name=d.name,
        value=d.value,
        read_only=False,
        is_default=d.is_default,
        config_source=d.source,
        is_sensitive=False,
        synonyms=[
            wire_describe_configs.DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source)
            for s in d.synonyms
        ]
        if synonyms
        else [],
        config_type=group_config.CONFIG_TYPE_INT,
        documentation=d.documentation if documentation else None,
    )
