"""Answers the gateway's group APIs with the coordinator service.

The group logic takes the gateway's messages as they are (``groupcoord.coordinator.messages``); what this
edge adds is what came with the request rather than in it (``ConnectionContext``: version, client,
a nonce) and, for the offset APIs, each topic's identity (name and id), resolved once.
Holds no group rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.handler import AnswerNow, ConnectionContext
from groupcoord.coordinator.group_shard import txn_commit_response
from groupcoord.coordinator.groups import context as group_context
from groupcoord.coordinator.groups import group_config
from groupcoord.coordinator.messages import alter_configs as wire_alter_configs
from groupcoord.coordinator.messages import alter_share_group_offsets as wire_asgo
from groupcoord.coordinator.messages import consumer_group_describe as wire_cgd
from groupcoord.coordinator.messages import consumer_group_heartbeat as wire_cgh
from groupcoord.coordinator.messages import delete_groups as wire_delete
from groupcoord.coordinator.messages import delete_share_group_offsets as wire_dsgo
from groupcoord.coordinator.messages import describe_configs as wire_describe_configs
from groupcoord.coordinator.messages import describe_groups as wire_describe
from groupcoord.coordinator.messages import describe_share_group_offsets as wire_desc_sgo
from groupcoord.coordinator.messages import heartbeat as wire_heartbeat
from groupcoord.coordinator.messages import incremental_alter_configs as wire_iac
from groupcoord.coordinator.messages import join_group as wire_join
from groupcoord.coordinator.messages import leave_group as wire_leave
from groupcoord.coordinator.messages import list_groups as wire_list
from groupcoord.coordinator.messages import offset_commit as wire_commit
from groupcoord.coordinator.messages import offset_delete as wire_offset_delete
from groupcoord.coordinator.messages import offset_fetch as wire_fetch
from groupcoord.coordinator.messages import share_acknowledge as wire_share_ack
from groupcoord.coordinator.messages import share_fetch as wire_share_fetch
from groupcoord.coordinator.messages import share_group_describe as wire_sgd
from groupcoord.coordinator.messages import share_group_heartbeat as wire_sgh
from groupcoord.coordinator.messages import sync_group as wire_sync
from groupcoord.coordinator.messages import txn_offset_commit as wire_txn
from groupcoord.coordinator.messages.offset_commit_columns import (
    OffsetCommitColumnsAnswerTopic,
    OffsetCommitColumnsTopic,
    answer_columns,
    request_columns,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message
from groupcoord.coordinator.service import offset_delete_answers
from groupcoord.coordinator.service.metadata_cache import TopicInfo, TopicNames
from groupcoord.coordinator.service.service import GroupCoordinatorService
from groupcoord.coordinator.service.share_data import ShareDataPath
from groupcoord.coordinator.service.share_offsets import ShareOffsetsAdmin

log = logging.getLogger(__name__)

# How long a heartbeat naming a topic the metadata lacks waits for a fresh picture.
SUBSCRIPTION_REFRESH_WAIT_S = 1.0
# OffsetCommit v10+ and OffsetFetch v10+ name topics by id (KIP-848), before by name.
COMMIT_BY_TOPIC_ID_VERSION = 10
FETCH_BY_TOPIC_ID_VERSION = 10
# OffsetFetch v8+ asks for several groups at once.
FETCH_GROUPS_VERSION = 8


class NoncePool:
    """Unguessable bytes for requests, read from the OS's random source 4 KiB at a time:
    ``secrets.token_bytes`` is one getrandom call per request, 3% of a steady heartbeat's serve
    CPU (profiled, 5,000 members), and every request takes a nonce although only joins use it.
    Used on the event loop's thread only."""

    def __init__(self, chunk: int = 4096) -> None:
        self._chunk = chunk
        self._pool = b""
        self._at = 0

    def take(self, size: int = 16) -> bytes:
        at = self._at
        if at + size > len(self._pool):
            self._pool, at = secrets.token_bytes(max(self._chunk, size)), 0
        self._at = at + size
        return self._pool[at : at + size]


_NONCES = NoncePool()


def _facts(context: ConnectionContext) -> group_context.RequestContext:
    """What the group logic takes from the request header and the connection."""
    return group_context.RequestContext(
        api_version=context.api_version,
        client_id=context.header.client_id or "",
        client_host=f"/{context.client_host}",
        # Member ids must not be guessable: the pure logic derives them from these bytes.
        nonce=_NONCES.take(),
        # The sender's DESCRIBE rights on topics: regex subscriptions resolve only to those.
        may_describe_topic=context.may_describe_topic,
    )


class CoordinatorApiHandler:
    """``GroupApiHandler`` over a ``GroupCoordinatorService``."""

    def __init__(self, service: GroupCoordinatorService, topics: TopicNames) -> None:
        self.service = service
        self.topics = topics
        # ShareFetch/ShareAcknowledge, set by ``groupcoord serve`` when share groups are served.
        self.share_data: ShareDataPath | None = None
        self._routes: dict[type[Message], Callable[[ConnectionContext, Any], Awaitable[Message]]] = {
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
            wire_sgh.ShareGroupHeartbeatRequest: self.share_group_heartbeat,
            wire_sgd.ShareGroupDescribeRequest: self.share_group_describe,
            wire_share_fetch.ShareFetchRequest: self.share_fetch,
            wire_share_ack.ShareAcknowledgeRequest: self.share_acknowledge,
            wire_desc_sgo.DescribeShareGroupOffsetsRequest: self.describe_share_group_offsets,
            wire_asgo.AlterShareGroupOffsetsRequest: self.alter_share_group_offsets,
            wire_dsgo.DeleteShareGroupOffsetsRequest: self.delete_share_group_offsets,
            wire_describe_configs.DescribeConfigsRequest: self.describe_configs,
            wire_iac.IncrementalAlterConfigsRequest: self.incremental_alter_configs,
            wire_alter_configs.AlterConfigsRequest: self.alter_configs,
        }

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        route = self._routes.get(type(request))
        if route is None:
            raise LookupError(f"no coordinator route for {type(request).__name__}")
        return await route(context, request)

    # --- OffsetCommit ---------------------------------------------------------------------

    async def _topic(self, name: str, topic_id: uuid.UUID, api_version: int, by_id_from: int) -> TopicInfo | None:
        """The one place a request topic's identity is resolved: by id from ``by_id_from`` (v10
        of OffsetCommit/OffsetFetch), by name before. ``None``: the cluster has no such topic."""
        return await self.topics.lookup(name, topic_id if api_version >= by_id_from else None)

    async def offset_commit(
        self, context: ConnectionContext, request: wire_commit.OffsetCommitRequest
    ) -> wire_commit.OffsetCommitResponse:
        """Topic identity is resolved once per request topic; the logic gets each topic with its
        name and id and answers it by both, and the answer is built against the request's own
        topic objects, so a v10 client gets its topic ids back. As in Kafka's KafkaApis,
        partitions of topics (or partition indexes) the cluster does not have are answered
        before the coordinator and never stored."""
        by_id = context.api_version >= COMMIT_BY_TOPIC_ID_VERSION
        answers: list[list[tuple[int, int] | None]] = []  # per request topic, per partition: (index, error) or None
        topics: list[wire_commit.OffsetCommitRequestTopic] = []
        whole = True  # every partition of every request topic goes on to the coordinator
        for t in request.topics:
            info = await self._topic(t.name, t.topic_id, context.api_version, COMMIT_BY_TOPIC_ID_VERSION)
            columns = request_columns(t)
            if info is not None and columns is not None and _all_known(info, columns.indexes):
                # Every partition goes on (the usual commit): as columns, unlike the rest.
                answers.append([None] * len(columns.indexes))
                topics.append(OffsetCommitColumnsTopic(name=info.name, topic_id=info.topic_id, columns=columns))
                continue
            if info is None:
                missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                answers.append([(p.partition_index, missing) for p in t.partitions])
                whole = False
                continue
            local, valid = _known_partitions(info, t.partitions)
            answers.append(local)
            whole = whole and len(valid) == len(local) and bool(valid)
            if valid:
                topics.append(
                    wire_commit.OffsetCommitRequestTopic(name=info.name, topic_id=info.topic_id, partitions=valid)
                )
        coordinator_answers: Iterator[tuple[int, int]] = iter(())
        if topics:
            answer = await self.service.commit_offsets(replace(request, topics=topics), _facts(context))
            if whole and len(answer.topics) == len(topics):
                # Each request topic went on whole (and is answered, in order, by one topic):
                # its answer as the coordinator gave it, named as the request named it.
                return wire_commit.OffsetCommitResponse(
                    topics=[_renamed(a, t) for t, a in zip(request.topics, answer.topics, strict=True)]
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

    # --- OffsetFetch ---------------------------------------------------------------------

    async def offset_fetch(
        self, context: ConnectionContext, request: wire_fetch.OffsetFetchRequest
    ) -> wire_fetch.OffsetFetchResponse:
        if context.api_version < FETCH_GROUPS_VERSION:
            # v0-7 name one group at the top level: asked and answered as a one-group batch.
            topics = None
            if request.topics is not None:
                topics = [
                    wire_fetch.OffsetFetchRequestTopics(name=t.name, partition_indexes=list(t.partition_indexes))
                    for t in request.topics
                ]
            (group,) = await self.service.fetch_offsets(
                [wire_fetch.OffsetFetchRequestGroup(group_id=request.group_id, topics=topics)],
                request.require_stable,
            )
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
        # Per group: the topics named by an id the cluster does not know (v10+): UNKNOWN_TOPIC_ID.
        unknown: list[list[wire_fetch.OffsetFetchRequestTopics]] = []
        for g in request.groups:
            unknown.append([])
            topics = None
            if g.topics is not None:
                topics = []
                for t in g.topics:
                    info = await self._topic(t.name, t.topic_id, context.api_version, FETCH_BY_TOPIC_ID_VERSION)
                    if info is not None:
                        topics.append(replace(t, name=info.name, topic_id=info.topic_id))
                    elif context.api_version >= FETCH_BY_TOPIC_ID_VERSION:
                        unknown[-1].append(t)
                    else:
                        topics.append(t)  # offsets of a topic the cluster lacks are still answered by name
            wanted.append(replace(g, topics=topics))
        groups = await self.service.fetch_offsets(wanted, request.require_stable)
        out = []
        for group, missing in zip(groups, unknown, strict=True):
            if context.api_version >= FETCH_BY_TOPIC_ID_VERSION:
                for answered in group.topics:
                    if answered.topic_id == ZERO_UUID:  # all-topics fetch: the log answered by name
                        answered.topic_id = await self.topics.uuid_of(answered.name) or ZERO_UUID
            # A copy: entries asking the same are answered with one shared answer.
            out.append(
                replace(
                    group,
                    topics=[
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
                    + group.topics,
                )
            )
        return wire_fetch.OffsetFetchResponse(groups=out)

    # --- OffsetDelete / TxnOffsetCommit ------------------------------------------------------

    async def offset_delete(
        self, context: ConnectionContext, request: wire_offset_delete.OffsetDeleteRequest
    ) -> wire_offset_delete.OffsetDeleteResponse:
        """As Kafka's KafkaApis: partitions of topics (or partition indexes) the cluster does not
        have are answered UNKNOWN_TOPIC_OR_PARTITION here and none of their offsets is deleted;
        the coordinator gets the rest, possibly nothing (it still answers for the group)."""
        local: list[wire_offset_delete.OffsetDeleteResponseTopic] = []
        known: list[wire_offset_delete.OffsetDeleteRequestTopic] = []
        for t in request.topics:
            info = await self.topics.lookup(t.name, None)  # OffsetDelete names topics by name only
            valid = [p for p in t.partitions if _has_partition(info, p.partition_index)]
            unknown = [p.partition_index for p in t.partitions if not _has_partition(info, p.partition_index)]
            if unknown:
                local.append(offset_delete_answers.refused(t.name, unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            if valid:
                known.append(replace(t, partitions=valid))
        if not local:
            return await self.service.delete_offsets(request)
        answered = await self.service.delete_offsets(replace(request, topics=known))
        return offset_delete_answers.merge(local, answered)

    async def txn_offset_commit(
        self, context: ConnectionContext, request: wire_txn.TxnOffsetCommitRequest
    ) -> wire_txn.TxnOffsetCommitResponse:
        """As Kafka's KafkaApis: partitions of topics the cluster does not have are answered
        UNKNOWN_TOPIC_OR_PARTITION here and never staged; the rest go to the transaction bridge
        (``groupcoord.coordinator.txn``), which joins them to the client's transaction."""
        bridge = self.service.txn
        if bridge is None:
            # Served only with a bridge to the cluster's transactions (``groupcoord serve`` has one).
            return txn_commit_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        answers: list[list[tuple[int, int] | None]] = []
        topics: list[wire_txn.TxnOffsetCommitRequestTopic] = []
        topic_ids: dict[str, str | None] = {}
        for t in request.topics:
            info = await self.topics.lookup(t.name, None)  # TxnOffsetCommit names topics by name only
            local, valid = _known_partitions(info, t.partitions)
            answers.append(local)
            if valid and info is not None:
                topics.append(wire_txn.TxnOffsetCommitRequestTopic(name=t.name, partitions=valid))
                topic_ids[t.name] = info.id_string
        staged: Iterator[tuple[int, int]] = iter(())
        if topics:
            answer = await bridge.commit(replace(request, topics=topics), topic_ids, context.api_version)
            staged = iter([(p.partition_index, p.error_code) for t in answer.topics for p in t.partitions])
        return wire_txn.TxnOffsetCommitResponse(
            topics=[
                wire_txn.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        wire_txn.TxnOffsetCommitResponsePartition(partition_index=index, error_code=code)
                        for index, code in (p if p is not None else next(staged) for p in local)
                    ],
                )
                for t, local in zip(request.topics, answers, strict=True)
            ]
        )

    # --- classic protocol --------------------------------------------------------------------

    async def join_group(self, context: ConnectionContext, request: wire_join.JoinGroupRequest) -> Message:
        response = await self.service.join_group(request, _facts(context))
        if response.protocol_name is None and context.api_version < 7:
            response.protocol_name = ""  # not nullable before v7
        return response

    async def sync_group(self, context: ConnectionContext, request: wire_sync.SyncGroupRequest) -> Message:
        return await self.service.sync_group(request, _facts(context))

    async def heartbeat(self, context: ConnectionContext, request: wire_heartbeat.HeartbeatRequest) -> Message:
        return await self.service.heartbeat(request, _facts(context))

    async def leave_group(self, context: ConnectionContext, request: wire_leave.LeaveGroupRequest) -> Message:
        return await self.service.leave_group(request, _facts(context))

    # --- group administration ----------------------------------------------------------------

    async def list_groups(self, context: ConnectionContext, request: wire_list.ListGroupsRequest) -> Message:
        error, groups = await self.service.list_groups(request.states_filter, request.types_filter)
        # The rows are the answer's entries already (``GroupSummary``): nothing to convert.
        listed: list[wire_list.ListGroupsResponseListedGroup] = list(groups)
        return wire_list.ListGroupsResponse(error_code=error, groups=listed)

    async def describe_groups(
        self, context: ConnectionContext, request: wire_describe.DescribeGroupsRequest
    ) -> Message:
        described = await self.service.describe_groups(list(request.groups), context.api_version)
        return wire_describe.DescribeGroupsResponse(groups=described)

    async def delete_groups(self, context: ConnectionContext, request: wire_delete.DeleteGroupsRequest) -> Message:
        results = await self.service.delete_groups(list(request.groups_names))
        return wire_delete.DeleteGroupsResponse(
            results=[
                wire_delete.DeleteGroupsResponseDeletableGroupResult(group_id=g, error_code=code) for g, code in results
            ]
        )

    # --- consumer protocol -------------------------------------------------------------------

    async def consumer_group_heartbeat(
        self, context: ConnectionContext, request: wire_cgh.ConsumerGroupHeartbeatRequest
    ) -> Message:
        await self._learn_new_topics(request.subscribed_topic_names or (), bool(request.subscribed_topic_regex))
        return await self.service.consumer_group_heartbeat(request, _facts(context))

    def answer_now(self, context: ConnectionContext, request: Message) -> AnswerNow:
        """A ConsumerGroupHeartbeat that waits for no topic refresh, or a classic Heartbeat:
        answered at once when it changes nothing (a steady heartbeat), else taken and answered
        once its records are read back (``GroupCoordinatorService.consumer_group_heartbeat_now``,
        ``heartbeat_now``). Anything else: None."""
        if type(request) is wire_heartbeat.HeartbeatRequest:
            return self.service.heartbeat_now(request, _facts(context))
        if type(request) is not wire_cgh.ConsumerGroupHeartbeatRequest:
            return None
        names = request.subscribed_topic_names or ()
        if self._needs_refresh(names, bool(request.subscribed_topic_regex)):
            return None
        answer = self.service.consumer_group_heartbeat_now(request, _facts(context))
        if names:  # a repeat names the same topics: each must still be known
            steady_answers.vouch(answer, lambda: not self._needs_refresh(names, False))
        return answer

    def _needs_refresh(self, names: Iterable[str], regex: bool) -> bool:
        if not names:  # a steady heartbeat names no topic: no generator for it
            return regex
        return regex or any(not self.topics.knows(name) for name in names)

    async def _learn_new_topics(self, names: Iterable[str], regex: bool) -> None:
        """A topic created a moment ago (or one a new regex may match) must not wait for the next
        periodic refresh to be assigned: learn about it now, so that this very heartbeat can be
        answered with an assignment as a broker would (bounded wait)."""
        if self._needs_refresh(names, regex):
            unknown = [n for n in names if not self.topics.knows(n)]
            with contextlib.suppress(asyncio.TimeoutError):
                learned = self.topics.refresh_soon(unknown, regex)
                await asyncio.wait_for(asyncio.shield(learned), SUBSCRIPTION_REFRESH_WAIT_S)

    async def consumer_group_describe(
        self, context: ConnectionContext, request: wire_cgd.ConsumerGroupDescribeRequest
    ) -> Message:
        described = await self.service.consumer_group_describe(list(request.group_ids))
        return wire_cgd.ConsumerGroupDescribeResponse(groups=described)

    # --- share groups ------------------------------------------------------------------------

    async def share_group_heartbeat(
        self, context: ConnectionContext, request: wire_sgh.ShareGroupHeartbeatRequest
    ) -> Message:
        await self._learn_new_topics(request.subscribed_topic_names or (), False)
        # A leave keeps the member's share session (see GroupCoordinatorShard.share_group_heartbeat).
        return await self.service.share_group_heartbeat(request, _facts(context))

    async def share_fetch(self, context: ConnectionContext, request: wire_share_fetch.ShareFetchRequest) -> Message:
        if self.share_data is None:
            return wire_share_fetch.ShareFetchResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        return await self.share_data.share_fetch(request, context)

    async def share_acknowledge(
        self, context: ConnectionContext, request: wire_share_ack.ShareAcknowledgeRequest
    ) -> Message:
        if self.share_data is None:
            return wire_share_ack.ShareAcknowledgeResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        return await self.share_data.share_acknowledge(request, context)

    def _share_offsets(self) -> ShareOffsetsAdmin | None:
        data = self.share_data
        return None if data is None else ShareOffsetsAdmin(self.service, self.topics, data.fetcher)

    async def describe_share_group_offsets(
        self, context: ConnectionContext, request: wire_desc_sgo.DescribeShareGroupOffsetsRequest
    ) -> Message:
        admin = self._share_offsets()
        if admin is None:
            return wire_desc_sgo.DescribeShareGroupOffsetsResponse(
                groups=[
                    wire_desc_sgo.DescribeShareGroupOffsetsResponseGroup(
                        group_id=g.group_id, error_code=ErrorCode.UNSUPPORTED_VERSION
                    )
                    for g in request.groups
                ]
            )
        return await admin.describe(request, context.api_version)

    async def alter_share_group_offsets(
        self, context: ConnectionContext, request: wire_asgo.AlterShareGroupOffsetsRequest
    ) -> Message:
        admin = self._share_offsets()
        if admin is None:
            return wire_asgo.AlterShareGroupOffsetsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        return await admin.alter(request)

    async def delete_share_group_offsets(
        self, context: ConnectionContext, request: wire_dsgo.DeleteShareGroupOffsetsRequest
    ) -> Message:
        admin = self._share_offsets()
        if admin is None:
            return wire_dsgo.DeleteShareGroupOffsetsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        return await admin.delete(request)

    async def share_group_describe(
        self, context: ConnectionContext, request: wire_sgd.ShareGroupDescribeRequest
    ) -> Message:
        described = await self.service.share_group_describe(list(request.group_ids))
        return wire_sgd.ShareGroupDescribeResponse(groups=described)

    # --- group configs (the gateway passes only the GROUP resources) ----------------------------

    async def describe_configs(
        self, context: ConnectionContext, request: wire_describe_configs.DescribeConfigsRequest
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
        self, context: ConnectionContext, request: wire_iac.IncrementalAlterConfigsRequest
    ) -> Message:
        out = []
        for r in request.resources:
            changes = [group_config.ConfigChange(c.name, c.config_operation, c.value) for c in r.configs]
            code, message = await self._alter_group_config(r, changes, None, request.validate_only)
            out.append(
                wire_iac.IncrementalAlterConfigsResponseAlterConfigsResourceResponse(
                    error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name
                )
            )
        return wire_iac.IncrementalAlterConfigsResponse(responses=out)

    async def alter_configs(
        self, context: ConnectionContext, request: wire_alter_configs.AlterConfigsRequest
    ) -> Message:
        """The legacy AlterConfigs: the group's overrides become exactly the given set."""
        out = []
        for r in request.resources:
            replacement = [(c.name, c.value) for c in r.configs]
            code, message = await self._alter_group_config(r, None, replacement, request.validate_only)
            out.append(
                wire_alter_configs.AlterConfigsResourceResponse(
                    error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name
                )
            )
        return wire_alter_configs.AlterConfigsResponse(responses=out)

    async def _alter_group_config(
        self,
        resource: wire_iac.IncrementalAlterConfigsRequestAlterConfigsResource | wire_alter_configs.AlterConfigsResource,
        changes: list[group_config.ConfigChange] | None,
        replacement: list[tuple[str, str | None]] | None,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        """One GROUP resource of IncrementalAlterConfigs (``changes``) or of the legacy
        AlterConfigs (``replacement``): both refuse a malformed resource the same way before the
        group's shard sees it (``_malformed_config_resource``)."""
        refusal = _malformed_config_resource(resource.resource_name, [c.name for c in resource.configs])
        if refusal is not None:
            return refusal
        return await self.service.alter_group_config(resource.resource_name, changes, replacement, validate_only)


def _all_known(info: TopicInfo, indexes: list[int]) -> bool:
    """Whether ``indexes`` names partitions, all of which the cluster has (``_has_partition``)."""
    return bool(indexes) and min(indexes) >= 0 and max(indexes) < info.partitions


def _renamed(
    answer: wire_commit.OffsetCommitResponseTopic, topic: wire_commit.OffsetCommitRequestTopic
) -> wire_commit.OffsetCommitResponseTopic:
    """The coordinator's answer to a whole request topic, with the request's own name and id."""
    columns = answer_columns(answer)
    if columns is not None:
        return OffsetCommitColumnsAnswerTopic(name=topic.name, topic_id=topic.topic_id, columns=columns)
    return wire_commit.OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id, partitions=answer.partitions)


def _has_partition(info: TopicInfo | None, index: int) -> bool:
    """What Kafka's KafkaApis checks before OffsetCommit and OffsetDelete reach the coordinator
    (``info``: the topic as the cluster has it, None if it has no such topic)."""
    return info is not None and 0 <= index < info.partitions


_P = TypeVar("_P", wire_commit.OffsetCommitRequestPartition, wire_txn.TxnOffsetCommitRequestPartition)


def _known_partitions(info: TopicInfo | None, partitions: list[_P]) -> tuple[list[tuple[int, int] | None], list[_P]]:
    """Per request partition, None if the cluster has it (it goes on to the coordinator) or its
    answer, UNKNOWN_TOPIC_OR_PARTITION; and the partitions that go on."""
    local: list[tuple[int, int] | None] = []
    valid: list[_P] = []
    for p in partitions:
        if _has_partition(info, p.partition_index):
            local.append(None)
            valid.append(p)
        else:
            local.append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    return local, valid


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
        config_type=d.config_type,
        documentation=d.documentation if documentation else None,
    )
