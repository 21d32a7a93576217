"""Kafka 4.2's ACL checks for the share-group APIs (KafkaApis.handleShareGroupHeartbeat and
handleShareGroupDescribe): READ on the group and DESCRIBE on every subscribed topic for a
heartbeat, DESCRIBE on the group and on every assigned topic for a describe."""

from __future__ import annotations

import asyncio

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.messages import share_group_describe as sgd
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
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


def _allow(resource: ResourceType, name: str, operation: Operation) -> Acl:
    return Acl(resource, name, PatternType.LITERAL, "User:carol", "*", operation, Permission.ALLOW)


class Inner:
    def __init__(self) -> None:
        self.seen: list[Message] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.seen.append(request)
        if isinstance(request, sgh.ShareGroupHeartbeatRequest):
            return sgh.ShareGroupHeartbeatResponse(member_id=request.member_id, member_epoch=1)
        assert isinstance(request, sgd.ShareGroupDescribeRequest)
        return sgd.ShareGroupDescribeResponse(
            groups=[
                sgd.ShareGroupDescribeResponseDescribedGroup(
                    group_id=g,
                    group_state="Stable",
                    members=[
                        sgd.ShareGroupDescribeResponseMember(
                            member_id="m",
                            assignment=sgd.ShareGroupDescribeResponseAssignment(
                                topic_partitions=[
                                    sgd.ShareGroupDescribeResponseTopicPartitions(
                                        topic_name=f"{g}-topic", partitions=[0]
                                    )
                                ]
                            ),
                        )
                    ],
                )
                for g in request.group_ids
            ]
        )


def _context(key: int) -> ConnectionContext:
    return ConnectionContext(RequestHeader(key, 1, 1, "c"), "127.0.0.1", 1, 2, principal="carol")


def _beat(handler: SecuredHandler, group: str, topics: list[str]) -> sgh.ShareGroupHeartbeatResponse:
    request = sgh.ShareGroupHeartbeatRequest(
        group_id=group, member_id="m", member_epoch=0, subscribed_topic_names=topics
    )
    response = asyncio.run(handler.handle(_context(76), request))
    assert isinstance(response, sgh.ShareGroupHeartbeatResponse)
    return response


def test_heartbeat_needs_read_on_the_group_and_describe_on_its_topics() -> None:
    inner = Inner()
    acls = [_allow(ResourceType.GROUP, "g", Operation.READ), _allow(ResourceType.TOPIC, "t", Operation.DESCRIBE)]
    handler = SecuredHandler(inner, NoTopics(), AclAuthorizer(acls), frozenset({"__log"}))
    assert _beat(handler, "other", ["t"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert _beat(handler, "g", ["t", "secret"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert inner.seen == []
    assert _beat(handler, "g", ["t"]).error_code == ErrorCode.NONE
    # The coordinator's own log topic is refused whatever the ACLs, and without an authorizer.
    assert _beat(SecuredHandler(inner, NoTopics(), None, frozenset({"__log"})), "g", ["__log"]).error_code == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
    )


def test_describe_needs_describe_on_the_group_and_on_the_assigned_topics() -> None:
    inner = Inner()
    acls = [
        _allow(ResourceType.GROUP, "a", Operation.DESCRIBE),
        _allow(ResourceType.GROUP, "b", Operation.DESCRIBE),
        _allow(ResourceType.TOPIC, "a-topic", Operation.DESCRIBE),
    ]
    handler = SecuredHandler(inner, NoTopics(), AclAuthorizer(acls))
    response = asyncio.run(handler.handle(_context(77), sgd.ShareGroupDescribeRequest(group_ids=["a", "b", "c"])))
    assert isinstance(response, sgd.ShareGroupDescribeResponse)
    a, b, c = response.groups
    assert (a.group_id, a.error_code, len(a.members)) == ("a", ErrorCode.NONE, 1)
    assert (b.group_id, b.error_code, b.members) == ("b", ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])
    assert (c.group_id, c.error_code) == ("c", ErrorCode.GROUP_AUTHORIZATION_FAILED)
