"""SecuredHandler without a cluster: chunked batches that yield, and Produce topic parsing for the log-topic guard."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Collection

import pytest

from groupcoord.coordinator.gateway import ConnectionContext
from groupcoord.coordinator.gateway.codec import write_uvarint
from groupcoord.coordinator.gateway.framing import RequestHeader, encode_request_header
from groupcoord.coordinator.gateway.protect import ProtectedTopics, produce_topics
from groupcoord.coordinator.messages import consumer_group_describe as cgd
from groupcoord.coordinator.messages import offset_fetch as wire_fetch
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseDeletableGroupResult,
)
from groupcoord.coordinator.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
)
from groupcoord.coordinator.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.authorizer import (
    Acl,
    AclAuthorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from groupcoord.coordinator.service import answer_budget
from groupcoord.coordinator.service.metadata_cache import TopicInfo
from groupcoord.coordinator.service.secured_handler import CHUNK, SecuredHandler
from tests.loop_turns import turns_while


class CountingInner:
    def __init__(self) -> None:
        self.chunks: list[int] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        if isinstance(request, DeleteGroupsRequest):
            self.chunks.append(len(request.groups_names))
            return DeleteGroupsResponse(
                results=[DeleteGroupsResponseDeletableGroupResult(group_id=g) for g in request.groups_names]
            )
        assert isinstance(request, DescribeGroupsRequest)
        self.chunks.append(len(request.groups))
        return DescribeGroupsResponse(
            groups=[DescribeGroupsResponseDescribedGroup(group_id=g, group_state="Empty") for g in request.groups]
        )


class NoTopics:
    """A cluster without topics, as ``TopicNames``."""

    async def lookup(self, name: str, topic_id: uuid.UUID | None) -> TopicInfo | None:
        return None

    def refresh_soon(self, names: Collection[str] = (), regex: bool = False) -> asyncio.Task[None]:
        raise AssertionError("not asked")

    def knows(self, name: str) -> bool:
        return False

    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        return None

    async def id_of(self, name: str) -> str | None:
        return None

    async def uuid_of(self, name: str) -> uuid.UUID | None:
        return None


def test_large_delete_is_chunked_and_yields_to_other_clients() -> None:
    inner = CountingInner()
    handler = SecuredHandler(inner, NoTopics())
    context = ConnectionContext(RequestHeader(42, 2, 1, "c"), "127.0.0.1", 1, 2)
    groups = [f"g{i}" for i in range(CHUNK * 4 + 7)]
    ticks: list[int] = []

    async def other_client() -> None:
        while True:
            ticks.append(len(inner.chunks))
            await asyncio.sleep(0)

    async def main() -> Message:
        bystander = asyncio.create_task(other_client())
        try:
            return await handler.handle(context, DeleteGroupsRequest(groups_names=list(groups)))
        finally:
            bystander.cancel()

    answer = asyncio.run(main())
    assert isinstance(answer, DeleteGroupsResponse)
    assert [r.group_id for r in answer.results] == groups
    assert inner.chunks == [CHUNK] * 4 + [7]
    # The other task ran between chunks, not only before or after the whole request.
    assert len(set(ticks) & {1, 2, 3, 4}) >= 3


def test_a_large_describe_goes_on_whole_so_that_its_answer_is_bounded_as_one() -> None:
    # The wrapped handler charges every copy of a group against one budget for the request
    # (groupcoord/coordinator/service/answer_budget.py); chunks would each get a budget of their own.
    inner = CountingInner()
    handler = SecuredHandler(inner, NoTopics())
    context = ConnectionContext(RequestHeader(15, 5, 1, "c"), "127.0.0.1", 1, 2)
    groups = [f"g{i % 7}" for i in range(CHUNK * 4 + 7)]
    answer = asyncio.run(handler.handle(context, DescribeGroupsRequest(groups=list(groups))))
    assert isinstance(answer, DescribeGroupsResponse)
    assert [g.group_id for g in answer.groups] == groups
    assert inner.chunks == [len(groups)]


class ManyGroups:
    """A handler listing thousands of groups."""

    def __init__(self, count: int) -> None:
        self.ids = [f"team-{'ab'[i % 2]}-{i:05d}" for i in range(count)]

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, ListGroupsRequest)
        return ListGroupsResponse(
            groups=[ListGroupsResponseListedGroup(group_id=g, protocol_type="", group_state="Empty") for g in self.ids]
        )


def test_a_listing_filtered_by_acls_lets_other_clients_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # With no time allowance, the filter yields every 256 groups it looks at.
    monkeypatch.setattr(answer_budget, "YIELD_EVERY_SECONDS", 0.0)
    inner = ManyGroups(3000)
    only_a = Acl(
        ResourceType.GROUP, "team-a-", PatternType.PREFIXED, "User:alice", "*", Operation.DESCRIBE, Permission.ALLOW
    )
    handler = SecuredHandler(inner, NoTopics(), AclAuthorizer([only_a]))
    context = ConnectionContext(RequestHeader(16, 4, 1, "c"), "127.0.0.1", 1, 2, principal="alice")
    answer, turns = turns_while(lambda: handler.handle(context, ListGroupsRequest()))
    assert isinstance(answer, ListGroupsResponse)
    assert [g.group_id for g in answer.groups] == [g for g in inner.ids if g.startswith("team-a-")]
    assert turns >= 3000 // 256


def _produce(version: int, topics: list[str]) -> bytes:
    flexible = version >= 9
    out = bytearray()
    encode_request_header(RequestHeader(0, version, 1, "p"), 2 if flexible else 1, out)

    def string(value: str) -> None:
        raw = value.encode()
        if flexible:
            write_uvarint(out, len(raw) + 1)
        else:
            out.extend(struct.pack(">h", len(raw)))
        out.extend(raw)

    if version >= 3:
        string("txn")
    out.extend(struct.pack(">hi", 1, 1000))
    count = len(topics)
    if flexible:
        write_uvarint(out, count + 1)
    else:
        out.extend(struct.pack(">i", count))
    for name in topics:
        string(name)
        records = b"__gc_log_in_the_payload" * 3  # record bytes naming the topic do not count
        if flexible:
            write_uvarint(out, 2)
            out.extend(struct.pack(">i", 0))
            write_uvarint(out, len(records) + 1)
            out.extend(records)
            out.append(0)
            out.append(0)
        else:
            out.extend(struct.pack(">i", 1))
            out.extend(struct.pack(">i", 0))
            out.extend(struct.pack(">i", len(records)))
            out.extend(records)
    if flexible:
        out.append(0)
    return bytes(out)


def test_produce_topics_are_parsed_past_the_records() -> None:
    guard = ProtectedTopics(["__gc_log"])
    for version in (3, 7, 9, 11):
        payload = _produce(version, ["orders", "__gc_log"])
        assert produce_topics(payload, version) == (["orders", "__gc_log"], [])
        assert guard.in_produce(payload, version)
        innocent = _produce(version, ["orders"])
        assert not guard.in_produce(innocent, version)


def test_refusals_encode_at_every_version() -> None:
    """A caller with no ACL gets Kafka's authorization error from every group API, at every version."""
    import random

    from groupcoord.coordinator.gateway.apis import APIS, GROUP_API_KEYS
    from groupcoord.coordinator.gateway.protocol import encode_response
    from groupcoord.coordinator.security.authorizer import AclAuthorizer
    from tests.gateway.samples import sample

    class Untouchable:
        async def handle(self, context: ConnectionContext, request: Message) -> Message:
            name = type(request).__name__
            assert name in ("ListGroupsRequest", "TxnOffsetCommitRequest"), f"{name} reached the handler"
            return APIS[context.api_key].response()

    handler = SecuredHandler(Untouchable(), NoTopics(), AclAuthorizer())
    seen_codes: set[int] = set()
    for key in sorted(GROUP_API_KEYS):
        spec = APIS[key]
        for version in range(spec.min_version, spec.max_version + 1):
            request = sample(spec.request, version, random.Random(key * 31 + version))
            context = ConnectionContext(RequestHeader(key, version, 1, "c"), "10.0.0.9", 1, 2, principal="mallory")
            response = asyncio.run(handler.handle(context, request))
            assert isinstance(response, spec.response)
            encode_response(key, version, 1, response)  # must be sendable at that version
            seen_codes |= _error_codes(response)
    assert 30 in seen_codes  # group checks come first, so no topic is ever reached here


def _error_codes(value: object) -> set[int]:
    from dataclasses import fields, is_dataclass

    found: set[int] = set()
    if isinstance(value, list):
        for item in value:
            found |= _error_codes(item)
    elif is_dataclass(value):
        for f in fields(value):
            child = getattr(value, f.name)
            if f.name == "error_code":
                found.add(int(child))
            else:
                found |= _error_codes(child)
    return found


class ContextKeeper:
    def __init__(self) -> None:
        self.contexts: list[ConnectionContext] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.contexts.append(context)
        return ConsumerGroupHeartbeatResponse()


def test_heartbeats_carry_what_the_caller_may_describe_and_only_with_an_authorizer() -> None:
    acls = [
        Acl(ResourceType.GROUP, "g", PatternType.LITERAL, "User:carol", "*", Operation.READ, Permission.ALLOW),
        Acl(
            ResourceType.TOPIC, "orders-", PatternType.PREFIXED, "User:carol", "*", Operation.DESCRIBE, Permission.ALLOW
        ),
        Acl(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:carol", "*", Operation.READ, Permission.ALLOW),
    ]
    request = ConsumerGroupHeartbeatRequest(group_id="g", subscribed_topic_regex=".*")
    context = ConnectionContext(RequestHeader(68, 1, 1, "c"), "127.0.0.1", 1, 2, principal="carol")
    inner = ContextKeeper()
    secured = SecuredHandler(inner, NoTopics(), AclAuthorizer(acls[:2]), frozenset({"__log"}))
    asyncio.run(secured.handle(context, request))
    may = inner.contexts[-1].may_describe_topic
    assert may is not None
    assert [may(t) for t in ("orders-eu", "payments", "__log")] == [True, False, False]
    # Every topic describable (a wildcard READ): still never the protected log topic.
    secured = SecuredHandler(inner, NoTopics(), AclAuthorizer(acls), frozenset({"__log"}))
    asyncio.run(secured.handle(context, request))
    may = inner.contexts[-1].may_describe_topic
    assert may is not None and may("payments") and not may("__log")
    # Without an authorizer nothing is added: the logic resolves as it always did.
    asyncio.run(SecuredHandler(inner, NoTopics()).handle(context, request))
    assert inner.contexts[-1].may_describe_topic is None


class DescribesOneMember:
    """ConsumerGroupDescribe: every group named has one member, assigned ``orders-eu`` and
    targeted ``target``."""

    def __init__(self, target: str) -> None:
        self.target = target

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, cgd.ConsumerGroupDescribeRequest)

        def assignment(topic: str) -> cgd.ConsumerGroupDescribeResponseAssignment:
            return cgd.ConsumerGroupDescribeResponseAssignment(
                topic_partitions=[
                    cgd.ConsumerGroupDescribeResponseTopicPartitions(
                        topic_id=uuid.uuid4(), topic_name=topic, partitions=[0]
                    )
                ]
            )

        return cgd.ConsumerGroupDescribeResponse(
            groups=[
                cgd.ConsumerGroupDescribeResponseDescribedGroup(
                    group_id=g,
                    group_state="Stable",
                    members=[
                        cgd.ConsumerGroupDescribeResponseMember(
                            member_id="m",
                            subscribed_topic_names=["orders-eu", self.target],
                            assignment=assignment("orders-eu"),
                            target_assignment=assignment(self.target),
                        )
                    ],
                )
                for g in request.group_ids
            ]
        )


@pytest.mark.parametrize("target", ["orders-eu", "payments", "__log"])
def test_a_consumer_group_describe_hides_members_holding_topics_the_caller_may_not_describe(target: str) -> None:
    """Kafka 4 (KafkaApis.handleConsumerGroupDescribe): TOPIC_AUTHORIZATION_FAILED for the group,
    without members, when any member's assignment or target assignment names such a topic."""
    acls = [
        Acl(ResourceType.GROUP, "g", PatternType.LITERAL, "User:carol", "*", Operation.DESCRIBE, Permission.ALLOW),
        Acl(
            ResourceType.TOPIC, "orders-", PatternType.PREFIXED, "User:carol", "*", Operation.DESCRIBE, Permission.ALLOW
        ),
    ]
    context = ConnectionContext(RequestHeader(69, 1, 1, "c"), "127.0.0.1", 1, 2, principal="carol")
    secured = SecuredHandler(DescribesOneMember(target), NoTopics(), AclAuthorizer(acls), frozenset({"__log"}))
    answer = asyncio.run(secured.handle(context, cgd.ConsumerGroupDescribeRequest(group_ids=["g", "h"])))
    assert isinstance(answer, cgd.ConsumerGroupDescribeResponse)
    g, h = answer.groups
    assert (h.group_id, h.error_code, h.members) == ("h", 30, [])  # no DESCRIBE on the group
    if target == "orders-eu":
        assert (g.error_code, [m.member_id for m in g.members]) == (0, ["m"])
    else:
        assert (g.group_id, g.error_code, g.members) == ("g", 29, [])
        assert g.error_message == "The group has described topic(s) that the client is not authorized to describe."
    # Without an authorizer the answer is the coordinator's.
    request = cgd.ConsumerGroupDescribeRequest(group_ids=["g", "h"])
    plain = asyncio.run(SecuredHandler(DescribesOneMember(target), NoTopics()).handle(context, request))
    assert isinstance(plain, cgd.ConsumerGroupDescribeResponse)
    assert [(d.error_code, len(d.members)) for d in plain.groups] == [(0, 1), (0, 1)]


@pytest.mark.parametrize(("version", "listed"), [(1, True), (2, False), (7, False)])
def test_an_offset_fetch_of_a_group_refused_lists_partitions_only_where_kafka_does(version: int, listed: bool) -> None:
    """OffsetFetchRequest.getErrorResponse: v0-1 put the refusal on each partition asked for (no
    top-level error there); from v2 the top-level error alone."""
    context = ConnectionContext(RequestHeader(9, version, 1, "c"), "10.0.0.9", 1, 2, principal="mallory")
    request = wire_fetch.OffsetFetchRequest(
        group_id="g", topics=[wire_fetch.OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 1])]
    )
    answer = asyncio.run(SecuredHandler(ContextKeeper(), NoTopics(), AclAuthorizer()).handle(context, request))
    assert isinstance(answer, wire_fetch.OffsetFetchResponse) and answer.error_code == 30
    got = [(t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions]
    assert got == ([("orders", 0, 30), ("orders", 1, 30)] if listed else [])
