"""TxnOffsetCommit authorization, as Kafka's KafkaApis.handleTxnOffsetCommitRequest: WRITE on the
transactional id, then READ on the group, refuse the whole request before the coordinator; a topic
the caller may not READ (or one of the sidecar's own) is refused alone."""

from __future__ import annotations

import asyncio

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.group_shard import txn_commit_response
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
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

PRINCIPAL = "User:alice"


def _acl(resource: ResourceType, name: str, operation: Operation) -> Acl:
    return Acl(resource, name, PatternType.LITERAL, PRINCIPAL, "*", operation, Permission.ALLOW)


class Recording:
    def __init__(self) -> None:
        self.seen: list[TxnOffsetCommitRequest] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        assert isinstance(request, TxnOffsetCommitRequest)
        self.seen.append(request)
        return txn_commit_response(request, ErrorCode.NONE)


def _request(*topics: str) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(
        transactional_id="tx",
        group_id="g",
        producer_id=7,
        producer_epoch=0,
        topics=[
            TxnOffsetCommitRequestTopic(name=t, partitions=[TxnOffsetCommitRequestPartition(partition_index=0)])
            for t in topics
        ],
    )


def _answer(acls: list[Acl], *topics: str) -> tuple[dict[str, int], Recording]:
    inner = Recording()
    handler = SecuredHandler(inner, NoTopics(), AclAuthorizer(acls), protected_topics=frozenset({"__log"}))
    context = ConnectionContext(RequestHeader(28, 3, 1, "c"), "10.0.0.9", 1, 2, principal="alice")
    response = asyncio.run(handler.handle(context, _request(*topics)))
    return {t.name: t.partitions[0].error_code for t in response.topics}, inner  # type: ignore[attr-defined]


GROUP = _acl(ResourceType.GROUP, "g", Operation.READ)
TXN = _acl(ResourceType.TRANSACTIONAL_ID, "tx", Operation.WRITE)
TOPIC = _acl(ResourceType.TOPIC, "in", Operation.READ)


def test_transactional_id_write_is_checked_first() -> None:
    codes, inner = _answer([GROUP, TOPIC], "in")
    assert codes == {"in": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    assert not inner.seen


def test_group_read_is_checked_next() -> None:
    codes, inner = _answer([TXN, TOPIC], "in")
    assert codes == {"in": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert not inner.seen


def test_unreadable_and_protected_topics_are_refused_alone() -> None:
    codes, inner = _answer([TXN, GROUP, TOPIC], "in", "secret", "__log")
    assert codes == {
        "in": ErrorCode.NONE,
        "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "__log": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
    assert [[t.name for t in r.topics] for r in inner.seen] == [["in"]]


def test_everything_allowed_reaches_the_coordinator_whole() -> None:
    codes, inner = _answer([TXN, GROUP, TOPIC], "in")
    assert codes == {"in": ErrorCode.NONE}
    assert len(inner.seen) == 1
