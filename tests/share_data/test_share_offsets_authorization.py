"""ACLs on the share-group offsets APIs (Kafka 4.2's KafkaApis): DescribeShareGroupOffsets needs
DESCRIBE on the group and on each topic; Alter/DeleteShareGroupOffsets need READ on the group
(refused whole, nothing passed on) and on each topic (refused topics never reach the coordinator)."""

from __future__ import annotations

import asyncio

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.messages import alter_share_group_offsets as alter
from groupcoord.coordinator.messages import delete_share_group_offsets as delete
from groupcoord.coordinator.messages import describe_share_group_offsets as describe
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.authorizer import (
    Acl,
    AclAuthorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from groupcoord.coordinator.service.secured_handler import SecuredHandler
from tests.security.test_secured_handler import NoTopics

DENIED_GROUP, DENIED_TOPIC = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED


class Inner:
    """Answers every partition it is given with no error, and keeps what it was given."""

    def __init__(self) -> None:
        self.seen: list[Message] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.seen.append(request)
        if isinstance(request, describe.DescribeShareGroupOffsetsRequest):
            return describe.DescribeShareGroupOffsetsResponse(
                groups=[
                    describe.DescribeShareGroupOffsetsResponseGroup(
                        group_id=g.group_id,
                        topics=[
                            describe.DescribeShareGroupOffsetsResponseTopic(
                                topic_name=name,
                                partitions=[
                                    describe.DescribeShareGroupOffsetsResponsePartition(
                                        partition_index=0, start_offset=5
                                    )
                                ],
                            )
                            for name in ("t", "secret", "__log")
                        ],
                    )
                    for g in request.groups
                ]
            )
        if isinstance(request, alter.AlterShareGroupOffsetsRequest):
            return alter.AlterShareGroupOffsetsResponse(
                responses=[
                    alter.AlterShareGroupOffsetsResponseTopic(
                        topic_name=t.topic_name,
                        partitions=[
                            alter.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        assert isinstance(request, delete.DeleteShareGroupOffsetsRequest)
        return delete.DeleteShareGroupOffsetsResponse(
            responses=[delete.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name) for t in request.topics]
        )


def _handler(inner: Inner) -> SecuredHandler:
    def acl(resource: ResourceType, name: str, operation: Operation) -> Acl:
        return Acl(resource, name, PatternType.LITERAL, "User:carol", "*", operation, Permission.ALLOW)

    acls = [
        acl(ResourceType.GROUP, "g", Operation.READ),  # READ implies DESCRIBE
        acl(ResourceType.GROUP, "only-describe", Operation.DESCRIBE),
        acl(ResourceType.TOPIC, "t", Operation.READ),
        acl(ResourceType.TOPIC, "__log", Operation.READ),
    ]
    return SecuredHandler(inner, NoTopics(), AclAuthorizer(acls), frozenset({"__log"}))


def _call(handler: SecuredHandler, key: int, version: int, request: Message) -> Message:
    context = ConnectionContext(RequestHeader(key, version, 1, "c"), "127.0.0.1", 1, 2, principal="carol")
    return asyncio.run(handler.handle(context, request))


def test_describe_needs_describe_on_the_group_and_the_topic() -> None:
    inner = Inner()
    request = describe.DescribeShareGroupOffsetsRequest(
        groups=[describe.DescribeShareGroupOffsetsRequestGroup(group_id=g) for g in ("g", "other", "only-describe")]
    )
    answer = _call(_handler(inner), 90, 1, request)
    assert isinstance(answer, describe.DescribeShareGroupOffsetsResponse)
    assert [(g.group_id, g.error_code) for g in answer.groups] == [
        ("g", 0),
        ("other", DENIED_GROUP),
        ("only-describe", 0),
    ]
    (seen,) = inner.seen
    assert isinstance(seen, describe.DescribeShareGroupOffsetsRequest)
    assert [g.group_id for g in seen.groups] == ["g", "only-describe"]
    shown = {t.topic_name: (t.partitions[0].start_offset, t.partitions[0].error_code) for t in answer.groups[0].topics}
    assert shown == {"t": (5, 0), "secret": (-1, DENIED_TOPIC), "__log": (-1, DENIED_TOPIC)}


def test_alter_needs_read_on_the_group_and_each_topic() -> None:
    inner = Inner()
    handler = _handler(inner)
    topics = [
        alter.AlterShareGroupOffsetsRequestTopic(
            topic_name=name, partitions=[alter.AlterShareGroupOffsetsRequestPartition(partition_index=0)]
        )
        for name in ("t", "secret", "__log")
    ]
    for group in ("other", "only-describe"):
        refused = _call(handler, 91, 0, alter.AlterShareGroupOffsetsRequest(group_id=group, topics=topics))
        assert isinstance(refused, alter.AlterShareGroupOffsetsResponse) and refused.error_code == DENIED_GROUP
    assert not inner.seen
    answer = _call(handler, 91, 0, alter.AlterShareGroupOffsetsRequest(group_id="g", topics=topics))
    assert isinstance(answer, alter.AlterShareGroupOffsetsResponse) and answer.error_code == 0
    codes = {t.topic_name: t.partitions[0].error_code for t in answer.responses}
    assert codes == {"t": 0, "secret": DENIED_TOPIC, "__log": DENIED_TOPIC}
    (seen,) = inner.seen
    assert isinstance(seen, alter.AlterShareGroupOffsetsRequest) and [t.topic_name for t in seen.topics] == ["t"]


def test_delete_needs_read_on_the_group_and_each_topic() -> None:
    inner = Inner()
    handler = _handler(inner)
    topics = [delete.DeleteShareGroupOffsetsRequestTopic(topic_name=n) for n in ("t", "secret", "__log")]
    refused = _call(handler, 92, 0, delete.DeleteShareGroupOffsetsRequest(group_id="only-describe", topics=topics))
    assert isinstance(refused, delete.DeleteShareGroupOffsetsResponse) and refused.error_code == DENIED_GROUP
    assert not inner.seen
    answer = _call(handler, 92, 0, delete.DeleteShareGroupOffsetsRequest(group_id="g", topics=topics))
    assert isinstance(answer, delete.DeleteShareGroupOffsetsResponse)
    assert {t.topic_name: t.error_code for t in answer.responses} == {
        "t": 0,
        "secret": DENIED_TOPIC,
        "__log": DENIED_TOPIC,
    }
    (seen,) = inner.seen
    assert isinstance(seen, delete.DeleteShareGroupOffsetsRequest) and [t.topic_name for t in seen.topics] == ["t"]


class EchoTopics:
    """Answers each group entry with the topics that entry asked for, in order, as the service does."""

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, describe.DescribeShareGroupOffsetsRequest)
        return describe.DescribeShareGroupOffsetsResponse(
            groups=[
                describe.DescribeShareGroupOffsetsResponseGroup(
                    group_id=g.group_id,
                    topics=[
                        describe.DescribeShareGroupOffsetsResponseTopic(
                            topic_name=t.topic_name,
                            partitions=[
                                describe.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=p)
                                for p in t.partitions
                            ],
                        )
                        for t in g.topics or ()
                    ],
                )
                for g in request.groups
            ]
        )


def test_describe_answers_a_group_named_twice_once_for_each_entry() -> None:
    """Each entry of a group named more than once asks for its own topics and gets them (the
    answers were paired by group id, so every entry got the last one's)."""

    def entry(group: str, topic: str, partitions: list[int]) -> describe.DescribeShareGroupOffsetsRequestGroup:
        return describe.DescribeShareGroupOffsetsRequestGroup(
            group_id=group,
            topics=[describe.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=partitions)],
        )

    request = describe.DescribeShareGroupOffsetsRequest(
        groups=[entry("g", "t", [0]), entry("other", "t", [0]), entry("g", "t", [1, 2]), entry("g", "nope", [0])]
    )
    handler = SecuredHandler(EchoTopics(), NoTopics(), _handler(Inner()).authorizer, frozenset({"__log"}))
    answer = _call(handler, 90, 1, request)
    assert isinstance(answer, describe.DescribeShareGroupOffsetsResponse)
    shown = [
        (
            g.group_id,
            g.error_code,
            [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in g.topics],
        )
        for g in answer.groups
    ]
    assert shown == [
        ("g", 0, [("t", [(0, 0)])]),
        ("other", DENIED_GROUP, []),
        ("g", 0, [("t", [(1, 0), (2, 0)])]),
        ("g", 0, [("nope", [(0, DENIED_TOPIC)])]),  # no DESCRIBE on it
    ]
