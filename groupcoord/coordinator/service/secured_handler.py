"""A ``GroupApiHandler`` wrapper: Kafka's ACL checks for the group APIs, and batch requests in yielding chunks.

Authorization (when an ``AclAuthorizer`` is given) follows what a Kafka broker checks per API:

- READ on the group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat,
  ShareGroupHeartbeat, OffsetCommit (plus READ on each topic committed; others get
  TOPIC_AUTHORIZATION_FAILED);
- DESCRIBE on topics: a ConsumerGroupHeartbeat or ShareGroupHeartbeat subscribing by name to a
  topic the caller may not DESCRIBE (or to a protected one) is refused with
  TOPIC_AUTHORIZATION_FAILED; a
  ConsumerGroupHeartbeat (or a classic JoinGroup into a consumer group) carries the caller's
  DESCRIBE rights on topics in its context, and the group logic resolves regex subscriptions only
  to topics the caller may DESCRIBE (never to the protected ones);
- DESCRIBE on the group: OffsetFetch (topics the caller may not DESCRIBE are refused when named,
  left out when all are asked for), DescribeGroups, ConsumerGroupDescribe, ShareGroupDescribe (a
  share group assigned a topic the caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, as Kafka
  4.2 answers); ListGroups lists only the groups the caller may DESCRIBE (all of them with
  DESCRIBE on the cluster);
- DELETE on the group: DeleteGroups, OffsetDelete (plus READ on each topic, as Kafka does);
- DESCRIBE_CONFIGS / ALTER_CONFIGS on the group: DescribeConfigs / (Incremental)AlterConfigs of
  GROUP resources (the only resources the gateway passes here), refused per resource.

Refusals carry GROUP_AUTHORIZATION_FAILED / TOPIC_AUTHORIZATION_FAILED where Kafka puts them. The
sidecar's own groups (``protected_groups``: placement) are refused to every caller, with or without
an authorizer, as if no ACL allowed them.
No group rule lives here: allowed requests go to the wrapped handler unchanged.

DeleteGroups naming many groups is passed on in chunks, yielding to the event loop between
chunks, so one large request cannot hold up every other client. The reads naming many groups
(DescribeGroups, ConsumerGroupDescribe, OffsetFetch v8+) are passed on whole: the wrapped handler
bounds the whole answer and yields as it builds it (``groupcoord.coordinator.service.answer_budget``).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import configs
from groupcoord.coordinator.gateway.handler import AnswerNow, ConnectionContext, GroupApiHandler, answer_now_of
from groupcoord.coordinator.group_shard import txn_commit_response
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
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message
from groupcoord.coordinator.security.authorizer import CLUSTER_NAME, AclAuthorizer, Operation, ResourceType
from groupcoord.coordinator.service import offset_delete_answers
from groupcoord.coordinator.service.answer_budget import kept_in_slices
from groupcoord.coordinator.service.metadata_cache import TopicNames
from groupcoord.coordinator.share.partition import acknowledgement_error
from groupcoord.coordinator.share.partition_types import AcknowledgementBatch

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
# Kafka's message for a described group whose members hold topics the caller may not DESCRIBE.
_TOPICS_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."
CHUNK = 100
# OffsetFetch has a top-level error from v2 (OffsetFetchRequest.getErrorResponse).
_FETCH_TOP_LEVEL_ERROR = 2

_READ_GROUP_TOP_LEVEL: tuple[type[Message], ...] = (
    wire_join.JoinGroupRequest,
    wire_sync.SyncGroupRequest,
    wire_heartbeat.HeartbeatRequest,
    wire_leave.LeaveGroupRequest,
    wire_cgh.ConsumerGroupHeartbeatRequest,
    wire_sgh.ShareGroupHeartbeatRequest,
    wire_share_fetch.ShareFetchRequest,
    wire_share_ack.ShareAcknowledgeRequest,
)
# Requests whose handling may (re)resolve a consumer group's regex subscriptions.
_RESOLVES_REGEXES = (wire_cgh.ConsumerGroupHeartbeatRequest, wire_join.JoinGroupRequest)
_REFUSALS: dict[type[Message], Callable[[], Message]] = {
    wire_join.JoinGroupRequest: lambda: wire_join.JoinGroupResponse(error_code=GROUP_DENIED, protocol_name=None),
    wire_sync.SyncGroupRequest: lambda: wire_sync.SyncGroupResponse(error_code=GROUP_DENIED),
    wire_heartbeat.HeartbeatRequest: lambda: wire_heartbeat.HeartbeatResponse(error_code=GROUP_DENIED),
    wire_leave.LeaveGroupRequest: lambda: wire_leave.LeaveGroupResponse(error_code=GROUP_DENIED),
    wire_cgh.ConsumerGroupHeartbeatRequest: lambda: wire_cgh.ConsumerGroupHeartbeatResponse(error_code=GROUP_DENIED),
    wire_sgh.ShareGroupHeartbeatRequest: lambda: wire_sgh.ShareGroupHeartbeatResponse(error_code=GROUP_DENIED),
    wire_share_fetch.ShareFetchRequest: lambda: wire_share_fetch.ShareFetchResponse(error_code=GROUP_DENIED),
    wire_share_ack.ShareAcknowledgeRequest: lambda: wire_share_ack.ShareAcknowledgeResponse(error_code=GROUP_DENIED),
}


# An OffsetFetch answer topic: OffsetFetchResponseTopic (v0-7) or OffsetFetchResponseTopics (v8+).
_Fetched = TypeVar("_Fetched", wire_fetch.OffsetFetchResponseTopic, wire_fetch.OffsetFetchResponseTopics)
# The two share data-path requests, whose topics are READ-checked alike.
_ShareDataRequest = TypeVar(
    "_ShareDataRequest", wire_share_fetch.ShareFetchRequest, wire_share_ack.ShareAcknowledgeRequest
)


class SecuredHandler:
    """Wraps the coordinator's handler; ``authorizer=None`` leaves only the chunking."""

    def __init__(
        self,
        inner: GroupApiHandler,
        topics: TopicNames,
        authorizer: AclAuthorizer | None = None,
        protected_topics: frozenset[str] = frozenset(),
        protected_groups: frozenset[str] = frozenset(),
    ) -> None:
        self.inner = inner
        self.topics = topics
        self.authorizer = authorizer
        # Offsets are never committed for these (the coordinator's log topic), whatever the ACLs.
        self.protected_topics = protected_topics
        # The sidecar's own groups (placement): no caller may use them, whatever the ACLs.
        self.protected_groups = protected_groups
        self._routes: dict[type[Message], Callable[[ConnectionContext, Any], Awaitable[Message]]] = {
            wire_commit.OffsetCommitRequest: self._offset_commit,
            wire_fetch.OffsetFetchRequest: self._offset_fetch,
            wire_offset_delete.OffsetDeleteRequest: self._offset_delete,
            wire_txn.TxnOffsetCommitRequest: self._txn_offset_commit,
            wire_list.ListGroupsRequest: self._list_groups,
            wire_describe.DescribeGroupsRequest: self._describe_groups,
            wire_delete.DeleteGroupsRequest: self._delete_groups,
            wire_cgd.ConsumerGroupDescribeRequest: self._consumer_group_describe,
            wire_sgd.ShareGroupDescribeRequest: self._share_group_describe,
            wire_share_fetch.ShareFetchRequest: self._share_fetch,
            wire_share_ack.ShareAcknowledgeRequest: self._share_acknowledge,
            wire_desc_sgo.DescribeShareGroupOffsetsRequest: self._describe_share_group_offsets,
            wire_asgo.AlterShareGroupOffsetsRequest: self._alter_share_group_offsets,
            wire_dsgo.DeleteShareGroupOffsetsRequest: self._delete_share_group_offsets,
            wire_describe_configs.DescribeConfigsRequest: self._group_configs,
            wire_iac.IncrementalAlterConfigsRequest: self._group_configs,
            wire_alter_configs.AlterConfigsRequest: self._group_configs,
        }

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        refusal, context = self._checked(context, request)
        if refusal is not None:
            return refusal
        route = self._routes.get(type(request))
        if route is not None:
            return await route(context, request)
        return await self.inner.handle(context, request)

    def answer_now(self, context: ConnectionContext, request: Message) -> AnswerNow:
        """The same checks as ``handle``; what passes them goes to the wrapped handler's
        ``answer_now`` unless ``handle`` has a route of its own for it."""
        answer_now = answer_now_of(self.inner)
        if answer_now is None or type(request) in self._routes:
            return None
        refusal, checked = self._checked(context, request)
        if refusal is not None:
            return refusal
        answer = answer_now(checked, request)
        if isinstance(answer, Message) and self.authorizer is not None:
            # A repeat is authorized again, against the ACLs of its moment. (Without an
            # authorizer the checks are the protected groups, fixed for the process.)
            steady_answers.vouch(answer, lambda: self._checked(context, request)[0] is None)
        return answer

    def _checked(self, context: ConnectionContext, request: Message) -> tuple[Message | None, ConnectionContext]:
        """(the refusal of a request naming one group, if refused; the context to pass it on with)."""
        if isinstance(request, _READ_GROUP_TOP_LEVEL):
            group_id = request.group_id  # type: ignore[attr-defined]
            if not self._allowed(context, Operation.READ, ResourceType.GROUP, group_id):
                refusal = _REFUSALS[type(request)]()
                if isinstance(refusal, wire_join.JoinGroupResponse) and context.api_version < 7:
                    refusal.protocol_name = ""  # not nullable before v7
                return refusal, context
            if self.authorizer is not None and isinstance(request, _RESOLVES_REGEXES):
                may_describe = self._describe_predicate(context)
                context = dataclasses.replace(context, may_describe_topic=may_describe)
                if isinstance(request, wire_cgh.ConsumerGroupHeartbeatRequest) and not all(
                    may_describe(name) for name in set(request.subscribed_topic_names or ())
                ):
                    # Kafka 4.x (KafkaApis.handleConsumerGroupHeartbeat): a subscription by name to
                    # a topic the caller may not DESCRIBE is refused whole, with no message naming
                    # the topics, before the coordinator: no member, epoch or assignment is made.
                    return wire_cgh.ConsumerGroupHeartbeatResponse(error_code=TOPIC_DENIED), context
            if isinstance(request, wire_sgh.ShareGroupHeartbeatRequest) and not self._may_describe_all(
                context, request.subscribed_topic_names or ()
            ):
                # Kafka 4.2 (KafkaApis.handleShareGroupHeartbeat): the same rule for share groups.
                return wire_sgh.ShareGroupHeartbeatResponse(error_code=TOPIC_DENIED), context
        return None, context

    def _describe_predicate(self, context: ConnectionContext) -> Callable[[str], bool]:
        """Which topics this caller may DESCRIBE (never the protected ones). Built on first use:
        most heartbeats resolve no regex. One request sees one snapshot of the ACLs."""
        authorizer = self.authorizer
        assert authorizer is not None
        view: list[Callable[[str], bool]] = []

        def may_describe(topic: str) -> bool:
            if topic in self.protected_topics:
                return False
            if not view:
                view.append(
                    authorizer.names_filter(
                        context.principal, context.client_host, Operation.DESCRIBE, ResourceType.TOPIC
                    )
                )
            return view[0](topic)

        return may_describe

    def _may_describe_all(self, context: ConnectionContext, topics: Iterable[str]) -> bool:
        """The caller may DESCRIBE every one of ``topics`` (never a protected one)."""
        names = set(topics)
        if names & self.protected_topics:
            return False
        return self.authorizer is None or all(map(self._describe_predicate(context), names))

    def _allowed(self, context: ConnectionContext, operation: Operation, resource: ResourceType, name: str) -> bool:
        return self._permits(context.principal, context.client_host, operation, resource, name)

    def _permits(
        self, principal: str | None, host: str, operation: Operation, resource: ResourceType, name: str
    ) -> bool:
        if resource == ResourceType.GROUP and name in self.protected_groups:
            return False
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(principal, host, operation, resource, name)

    def may_find_group(self, principal: str | None, host: str, group: str) -> bool:
        """FindCoordinator for a group (answered by the gateway, not ``handle``): Kafka asks
        DESCRIBE on the group (KafkaApis.handleFindCoordinatorRequest)."""
        return self._permits(principal, host, Operation.DESCRIBE, ResourceType.GROUP, group)

    async def _group_configs(self, context: ConnectionContext, request: Message) -> Message:
        """Config requests on GROUP resources: each resource needs DESCRIBE_CONFIGS (describe) or
        ALTER_CONFIGS (alter) on its group; refused ones get GROUP_AUTHORIZATION_FAILED."""
        describe = isinstance(request, wire_describe_configs.DescribeConfigsRequest)
        operation = Operation.DESCRIBE_CONFIGS if describe else Operation.ALTER_CONFIGS
        resources = list(request.resources)  # type: ignore[attr-defined]
        allowed = [r for r in resources if self._allowed(context, operation, ResourceType.GROUP, r.resource_name)]
        denied = [r for r in resources if r not in allowed]
        if not denied:
            return await self.inner.handle(context, request)
        refused = copy.copy(request)
        refused.resources = denied  # type: ignore[attr-defined]
        refusal = configs.refuse_all(refused, GROUP_DENIED, "Group authorization failed.")
        if not allowed:
            return refusal
        passed = copy.copy(request)
        passed.resources = allowed  # type: ignore[attr-defined]
        answered = await self.inner.handle(context, passed)
        return configs.merge(request, [answered, refusal])

    # --- batches, chunked -----------------------------------------------------------------------

    async def _chunked(self, context: ConnectionContext, request: Message, field: str, out_field: str) -> list[Any]:
        """Pass ``request`` on in chunks of its ``field`` list; the answers' ``out_field`` lists, joined."""
        items = getattr(request, field)
        answers: list[Any] = []
        for start in range(0, len(items), CHUNK):
            part = copy.copy(request)
            setattr(part, field, items[start : start + CHUNK])
            response = await self.inner.handle(context, part)
            answers.extend(getattr(response, out_field))
            if start + CHUNK < len(items):
                await asyncio.sleep(0)
        return answers

    async def _whole(self, context: ConnectionContext, request: Message, out_field: str) -> list[Any]:
        """Pass a read naming many groups on whole: its answer is bounded as one (in chunks, each
        part would get a budget of its own, and mapping the answers back by group id below would
        copy them to every entry naming the group)."""
        response = await self.inner.handle(context, request)
        return list(getattr(response, out_field))

    async def _described(
        self,
        context: ConnectionContext,
        request: Message,
        ids_field: str,
        refusal: Callable[[str], Any],
        check: Callable[[Any], Any] = lambda described: described,
    ) -> list[Any]:
        """A describe naming groups: those the caller may DESCRIBE are passed on whole (``check``
        then sees each answer), the others get ``refusal``; answers in the request's order."""
        wanted = list(getattr(request, ids_field))
        allowed = [g for g in wanted if self._allowed(context, Operation.DESCRIBE, ResourceType.GROUP, g)]
        setattr(request, ids_field, allowed)
        described = await self._whole(context, request, "groups") if allowed else []
        by_id = {d.group_id: check(d) for d in described}
        return [by_id.get(g) or refusal(g) for g in wanted]

    async def _describe_groups(
        self, context: ConnectionContext, request: wire_describe.DescribeGroupsRequest
    ) -> Message:
        out = await self._described(
            context,
            request,
            "groups",
            lambda g: wire_describe.DescribeGroupsResponseDescribedGroup(group_id=g, error_code=GROUP_DENIED),
        )
        return wire_describe.DescribeGroupsResponse(groups=out)

    async def _consumer_group_describe(
        self, context: ConnectionContext, request: wire_cgd.ConsumerGroupDescribeRequest
    ) -> Message:
        out = await self._described(
            context,
            request,
            "group_ids",
            lambda g: wire_cgd.ConsumerGroupDescribeResponseDescribedGroup(
                group_id=g, error_code=GROUP_DENIED, error_message="Group authorization failed."
            ),
            lambda described: self._consumer_group_topics_visible(context, described),
        )
        return wire_cgd.ConsumerGroupDescribeResponse(groups=out)

    def _consumer_group_topics_visible(
        self, context: ConnectionContext, described: wire_cgd.ConsumerGroupDescribeResponseDescribedGroup
    ) -> wire_cgd.ConsumerGroupDescribeResponseDescribedGroup:
        """Kafka 4 (KafkaApis.handleConsumerGroupDescribe): a described group with a topic the
        caller may not DESCRIBE in any member's assignment or target assignment is answered
        TOPIC_AUTHORIZATION_FAILED, without its members (their topic names, ids and partitions)."""
        if self.authorizer is None:
            return described
        topics = {
            tp.topic_name
            for m in described.members
            for assignment in (m.assignment, m.target_assignment)
            for tp in assignment.topic_partitions
        }
        if self._may_describe_all(context, topics):
            return described
        return wire_cgd.ConsumerGroupDescribeResponseDescribedGroup(
            group_id=described.group_id, error_code=TOPIC_DENIED, error_message=_TOPICS_HIDDEN
        )

    async def _share_group_describe(
        self, context: ConnectionContext, request: wire_sgd.ShareGroupDescribeRequest
    ) -> Message:
        out = await self._described(
            context,
            request,
            "group_ids",
            lambda g: wire_sgd.ShareGroupDescribeResponseDescribedGroup(group_id=g, error_code=GROUP_DENIED),
            lambda described: self._share_group_topics_visible(context, described),
        )
        return wire_sgd.ShareGroupDescribeResponse(groups=out)

    def _share_group_topics_visible(
        self, context: ConnectionContext, described: wire_sgd.ShareGroupDescribeResponseDescribedGroup
    ) -> wire_sgd.ShareGroupDescribeResponseDescribedGroup:
        """Kafka 4.2: a described share group assigned a topic the caller may not DESCRIBE is
        answered TOPIC_AUTHORIZATION_FAILED, without its members."""
        topics = {tp.topic_name for m in described.members for tp in m.assignment.topic_partitions}
        if self.authorizer is None or self._may_describe_all(context, topics):
            return described
        return wire_sgd.ShareGroupDescribeResponseDescribedGroup(
            group_id=described.group_id,
            error_code=TOPIC_DENIED,
            error_message=_TOPICS_HIDDEN,
        )

    async def _delete_groups(self, context: ConnectionContext, request: wire_delete.DeleteGroupsRequest) -> Message:
        wanted = list(request.groups_names)
        allowed = [g for g in wanted if self._allowed(context, Operation.DELETE, ResourceType.GROUP, g)]
        request.groups_names = allowed
        results = await self._chunked(context, request, "groups_names", "results") if allowed else []
        by_id = {r.group_id: r for r in results}
        out = [
            by_id.get(g) or wire_delete.DeleteGroupsResponseDeletableGroupResult(group_id=g, error_code=GROUP_DENIED)
            for g in wanted
        ]
        return wire_delete.DeleteGroupsResponse(results=out)

    async def _list_groups(self, context: ConnectionContext, request: wire_list.ListGroupsRequest) -> Message:
        response = await self.inner.handle(context, request)
        assert isinstance(response, wire_list.ListGroupsResponse)
        if self._allowed(context, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return response
        # In slices: an ACL check of each of 100,000 groups holds the loop far too long in one go.
        response.groups = await kept_in_slices(
            response.groups, lambda g: self._allowed(context, Operation.DESCRIBE, ResourceType.GROUP, g.group_id)
        )
        return response

    # --- the share data path --------------------------------------------------------------------

    async def _topic_denied(self, context: ConnectionContext, topic_id: Any) -> bool:
        """Kafka's KafkaApis.handleShareFetchRequest / handleShareAcknowledge: READ on each topic;
        an unknown id is left to the handler (UNKNOWN_TOPIC_ID)."""
        name = await self.topics.name_of(topic_id)
        if name is None:
            return False
        return name in self.protected_topics or not self._allowed(context, Operation.READ, ResourceType.TOPIC, name)

    async def _share_fetch(self, context: ConnectionContext, request: wire_share_fetch.ShareFetchRequest) -> Message:
        def refused(t: Any) -> wire_share_fetch.ShareFetchableTopicResponse:
            return wire_share_fetch.ShareFetchableTopicResponse(
                topic_id=t.topic_id,
                partitions=[
                    wire_share_fetch.ShareFetchResponsePartitionData(
                        partition_index=p.partition_index,
                        error_code=TOPIC_DENIED,
                        acknowledge_error_code=_denied_acknowledgements(p.acknowledgement_batches, request.is_renew_ack)
                        if p.acknowledgement_batches
                        else 0,
                        records=b"",
                    )
                    for p in t.partitions
                ],
            )

        return await self._share_without_denied_topics(context, request, refused)

    async def _share_acknowledge(
        self, context: ConnectionContext, request: wire_share_ack.ShareAcknowledgeRequest
    ) -> Message:
        def refused(t: Any) -> wire_share_ack.ShareAcknowledgeTopicResponse:
            return wire_share_ack.ShareAcknowledgeTopicResponse(
                topic_id=t.topic_id,
                partitions=[
                    wire_share_ack.ShareAcknowledgeResponsePartitionData(
                        partition_index=p.partition_index,
                        error_code=_denied_acknowledgements(p.acknowledgement_batches, request.is_renew_ack),
                    )
                    for p in t.partitions
                ],
            )

        return await self._share_without_denied_topics(context, request, refused)

    async def _share_without_denied_topics(
        self,
        context: ConnectionContext,
        request: _ShareDataRequest,
        refused: Callable[[Any], Any],
    ) -> Message:
        """A ShareFetch or ShareAcknowledge with the topics the caller may not READ taken out
        before the handler sees them, and answered TOPIC_AUTHORIZATION_FAILED beside its answer
        (unless the whole request failed)."""
        denied = [t for t in request.topics if await self._topic_denied(context, t.topic_id)]
        if not denied:
            return await self.inner.handle(context, request)
        allowed = [t for t in request.topics if t not in denied]
        answer = await self.inner.handle(context, dataclasses.replace(request, topics=allowed))
        assert isinstance(answer, wire_share_fetch.ShareFetchResponse | wire_share_ack.ShareAcknowledgeResponse)
        if answer.error_code:
            return answer
        answer.responses.extend(refused(t) for t in denied)
        return answer

    # --- share-group offsets administration ------------------------------------------------------

    def _topic_allowed(self, context: ConnectionContext, operation: Operation, name: str) -> bool:
        return name not in self.protected_topics and self._allowed(context, operation, ResourceType.TOPIC, name)

    async def _describe_share_group_offsets(
        self, context: ConnectionContext, request: wire_desc_sgo.DescribeShareGroupOffsetsRequest
    ) -> Message:
        """Kafka's KafkaApis.handleDescribeShareGroupOffsetsRequest: DESCRIBE on each group (the
        group refused whole), DESCRIBE on each topic (its partitions TOPIC_AUTHORIZATION_FAILED,
        nothing of them shown)."""
        permitted = [self._allowed(context, Operation.DESCRIBE, ResourceType.GROUP, g.group_id) for g in request.groups]
        allowed = [g for g, ok in zip(request.groups, permitted, strict=True) if ok]
        answer = await self.inner.handle(context, dataclasses.replace(request, groups=allowed)) if allowed else None
        # The inner handler answers every entry in order, a group named twice once for each entry
        # (each may ask for other topics): paired by position, not by group id.
        answered = iter(answer.groups if isinstance(answer, wire_desc_sgo.DescribeShareGroupOffsetsResponse) else ())
        out = []
        for wanted, ok in zip(request.groups, permitted, strict=True):
            g = next(answered, None) if ok else None
            if g is None:
                out.append(
                    wire_desc_sgo.DescribeShareGroupOffsetsResponseGroup(
                        group_id=wanted.group_id, error_code=GROUP_DENIED
                    )
                )
                continue
            for t in g.topics:
                if not self._topic_allowed(context, Operation.DESCRIBE, t.topic_name):
                    t.partitions = [
                        wire_desc_sgo.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p.partition_index, start_offset=-1, leader_epoch=-1, error_code=TOPIC_DENIED
                        )
                        for p in t.partitions
                    ]
            out.append(g)
        return wire_desc_sgo.DescribeShareGroupOffsetsResponse(groups=out)

    async def _alter_share_group_offsets(
        self, context: ConnectionContext, request: wire_asgo.AlterShareGroupOffsetsRequest
    ) -> Message:
        """Kafka's KafkaApis.handleAlterShareGroupOffsetsRequest: READ on the group (refused whole),
        READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED, never passed on)."""
        if not self._allowed(context, Operation.READ, ResourceType.GROUP, request.group_id):
            return wire_asgo.AlterShareGroupOffsetsResponse(error_code=GROUP_DENIED)
        denied = [t for t in request.topics if not self._topic_allowed(context, Operation.READ, t.topic_name)]
        allowed = [t for t in request.topics if t not in denied]
        answer = await self.inner.handle(context, dataclasses.replace(request, topics=allowed))
        assert isinstance(answer, wire_asgo.AlterShareGroupOffsetsResponse)
        for t in denied:
            answer.responses.append(
                wire_asgo.AlterShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name,
                    partitions=[
                        wire_asgo.AlterShareGroupOffsetsResponsePartition(
                            partition_index=p.partition_index, error_code=TOPIC_DENIED
                        )
                        for p in t.partitions
                    ],
                )
            )
        return answer

    async def _delete_share_group_offsets(
        self, context: ConnectionContext, request: wire_dsgo.DeleteShareGroupOffsetsRequest
    ) -> Message:
        """Kafka's KafkaApis.handleDeleteShareGroupOffsetsRequest: READ on the group (refused
        whole), READ on each topic (TOPIC_AUTHORIZATION_FAILED, never passed on)."""
        if not self._allowed(context, Operation.READ, ResourceType.GROUP, request.group_id):
            return wire_dsgo.DeleteShareGroupOffsetsResponse(error_code=GROUP_DENIED)
        denied = [t for t in request.topics if not self._topic_allowed(context, Operation.READ, t.topic_name)]
        allowed = [t for t in request.topics if t not in denied]
        answer = await self.inner.handle(context, dataclasses.replace(request, topics=allowed))
        assert isinstance(answer, wire_dsgo.DeleteShareGroupOffsetsResponse)
        if not answer.error_code:
            answer.responses += [
                wire_dsgo.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, error_code=TOPIC_DENIED)
                for t in denied
            ]
        return answer

    # --- offsets ---------------------------------------------------------------------------------

    async def _topic_name(self, name: str, topic_id: Any) -> str | None:
        if topic_id is not None and topic_id != ZERO_UUID:
            return await self.topics.name_of(topic_id)
        return name

    async def _offset_commit(self, context: ConnectionContext, request: wire_commit.OffsetCommitRequest) -> Message:
        def refuse_all(code: int) -> Message:
            return wire_commit.OffsetCommitResponse(
                topics=[
                    wire_commit.OffsetCommitResponseTopic(
                        name=t.name,
                        topic_id=t.topic_id,
                        partitions=[
                            wire_commit.OffsetCommitResponsePartition(
                                partition_index=p.partition_index, error_code=code
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )

        if not self._allowed(context, Operation.READ, ResourceType.GROUP, request.group_id):
            return refuse_all(GROUP_DENIED)
        allowed, denied = [], []
        for t in request.topics:
            name = await self._topic_name(t.name, t.topic_id)
            if name in self.protected_topics:
                denied.append(t)
            elif self.authorizer is None or (
                name is not None and self._allowed(context, Operation.READ, ResourceType.TOPIC, name)
            ):
                allowed.append(t)
            else:
                # Unknown topic ids are refused too: a caller must not learn which ids exist.
                denied.append(t)
        if not denied:
            return await self.inner.handle(context, request)
        answer_topics: list[wire_commit.OffsetCommitResponseTopic] = []
        if allowed:
            request.topics = allowed
            response = await self.inner.handle(context, request)
            assert isinstance(response, wire_commit.OffsetCommitResponse)
            answer_topics = list(response.topics)
        for t in denied:
            answer_topics.append(
                wire_commit.OffsetCommitResponseTopic(
                    name=t.name,
                    topic_id=t.topic_id,
                    partitions=[
                        wire_commit.OffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=TOPIC_DENIED
                        )
                        for p in t.partitions
                    ],
                )
            )
        return wire_commit.OffsetCommitResponse(topics=answer_topics)

    async def _txn_offset_commit(self, context: ConnectionContext, request: wire_txn.TxnOffsetCommitRequest) -> Message:
        """Kafka's KafkaApis.handleTxnOffsetCommitRequest: WRITE on the transactional id, then READ
        on the group refuse the whole request; a topic the caller may not READ (or one of the
        sidecar's own) is refused alone and the rest goes on."""
        if not self._allowed(context, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return txn_commit_response(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self._allowed(context, Operation.READ, ResourceType.GROUP, request.group_id):
            return txn_commit_response(request, GROUP_DENIED)
        denied = [
            t
            for t in request.topics
            if t.name in self.protected_topics or not self._allowed(context, Operation.READ, ResourceType.TOPIC, t.name)
        ]
        if not denied:
            return await self.inner.handle(context, request)
        allowed = [t for t in request.topics if t not in denied]
        answered: list[wire_txn.TxnOffsetCommitResponseTopic] = []
        if allowed:
            response = await self.inner.handle(context, dataclasses.replace(request, topics=allowed))
            assert isinstance(response, wire_txn.TxnOffsetCommitResponse)
            answered = list(response.topics)
        refused = txn_commit_response(dataclasses.replace(request, topics=denied), TOPIC_DENIED)
        return wire_txn.TxnOffsetCommitResponse(topics=answered + refused.topics)

    async def _offset_delete(
        self, context: ConnectionContext, request: wire_offset_delete.OffsetDeleteRequest
    ) -> Message:
        if not self._allowed(context, Operation.DELETE, ResourceType.GROUP, request.group_id):
            return wire_offset_delete.OffsetDeleteResponse(error_code=GROUP_DENIED)
        if self.authorizer is None:
            return await self.inner.handle(context, request)
        allowed = [t for t in request.topics if self._allowed(context, Operation.READ, ResourceType.TOPIC, t.name)]
        denied = [
            offset_delete_answers.refused(t.name, [p.partition_index for p in t.partitions], TOPIC_DENIED)
            for t in request.topics
            if t not in allowed
        ]
        request.topics = allowed
        response = await self.inner.handle(context, request)
        assert isinstance(response, wire_offset_delete.OffsetDeleteResponse)
        return offset_delete_answers.merge(denied, response)

    async def _offset_fetch(self, context: ConnectionContext, request: wire_fetch.OffsetFetchRequest) -> Message:
        if context.api_version < 8:
            return await self._offset_fetch_single(context, request)
        groups = list(request.groups)
        allowed = [g for g in groups if self._allowed(context, Operation.DESCRIBE, ResourceType.GROUP, g.group_id)]
        request.groups = allowed
        answered = await self._whole(context, request, "groups") if allowed else []
        by_id = {g.group_id: g for g in answered}
        out = []
        for g in groups:
            found = by_id.get(g.group_id)
            if found is None:
                out.append(wire_fetch.OffsetFetchResponseGroup(group_id=g.group_id, error_code=GROUP_DENIED))
                continue
            found.topics = self._described_topics(context, found.topics, named=g.topics is not None)
            out.append(found)
        return wire_fetch.OffsetFetchResponse(groups=out)

    async def _offset_fetch_single(self, context: ConnectionContext, request: wire_fetch.OffsetFetchRequest) -> Message:
        if not self._allowed(context, Operation.DESCRIBE, ResourceType.GROUP, request.group_id):
            if context.api_version >= _FETCH_TOP_LEVEL_ERROR:
                return wire_fetch.OffsetFetchResponse(error_code=GROUP_DENIED)  # no partitions, as Kafka
            # v1 has no top-level error: Kafka puts the refusal on every partition asked for.
            return wire_fetch.OffsetFetchResponse(
                error_code=GROUP_DENIED,
                topics=[
                    wire_fetch.OffsetFetchResponseTopic(
                        name=t.name,
                        partitions=[
                            wire_fetch.OffsetFetchResponsePartition(
                                partition_index=p, committed_offset=-1, error_code=GROUP_DENIED
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in request.topics or []
                ],
            )
        response = await self.inner.handle(context, request)
        assert isinstance(response, wire_fetch.OffsetFetchResponse)
        if self.authorizer is None:
            return response
        response.topics = self._described_topics(context, response.topics, named=request.topics is not None)
        return response

    def _described_topics(self, context: ConnectionContext, topics: list[_Fetched], *, named: bool) -> list[_Fetched]:
        """An OffsetFetch answer's topics as the caller may see them: a topic without DESCRIBE is
        left out of an all-topics answer, and answered TOPIC_AUTHORIZATION_FAILED on each of its
        partitions when the caller named it (Kafka's rule)."""
        kept = []
        for t in topics:
            if not self._allowed(context, Operation.DESCRIBE, ResourceType.TOPIC, t.name):
                if not named:
                    continue
                for p in t.partitions:
                    p.committed_offset, p.metadata, p.error_code = -1, "", TOPIC_DENIED
            kept.append(t)
        return kept


def _denied_acknowledgements(batches: Iterable[Any], renew_ack: bool) -> int:
    """The acknowledgement error of a partition of a topic the caller may not READ: Kafka 4.2's
    KafkaApis validates the acknowledgements before the topic's ACL, so malformed ones are
    INVALID_REQUEST there too; the others TOPIC_AUTHORIZATION_FAILED."""
    acks = [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]
    return int(acknowledgement_error(acks, renew_ack) or TOPIC_DENIED)
