"""ACLs on the share data path (Kafka 4.2's KafkaApis.handleShareFetchRequest and
handleShareAcknowledgeRequest): READ on the group refuses the whole request; READ on each topic
refuses that topic's partitions (TOPIC_AUTHORIZATION_FAILED) and keeps them, and their
acknowledgements, from the coordinator."""

from __future__ import annotations

import asyncio
import uuid

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import ConnectionContext
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf
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
from tests.share_data.acks import Batch, ack_request

ALLOWED, DENIED, LOG = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()


class Topics(NoTopics):
    async def name_of(self, topic_id: uuid.UUID) -> str | None:
        return {ALLOWED: "t", DENIED: "secret", LOG: "__log"}.get(topic_id)


class Inner:
    def __init__(self) -> None:
        self.seen: list[Message] = []

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.seen.append(request)
        if isinstance(request, sf.ShareFetchRequest):
            return sf.ShareFetchResponse(
                responses=[
                    sf.ShareFetchableTopicResponse(
                        topic_id=t.topic_id,
                        partitions=[
                            sf.ShareFetchResponsePartitionData(partition_index=p.partition_index) for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        assert isinstance(request, sa.ShareAcknowledgeRequest)
        return sa.ShareAcknowledgeResponse(
            responses=[
                sa.ShareAcknowledgeTopicResponse(
                    topic_id=t.topic_id,
                    partitions=[
                        sa.ShareAcknowledgeResponsePartitionData(partition_index=p.partition_index)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )


def _handler(inner: Inner) -> SecuredHandler:
    acls = [
        Acl(ResourceType.GROUP, "g", PatternType.LITERAL, "User:carol", "*", Operation.READ, Permission.ALLOW),
        Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:carol", "*", Operation.READ, Permission.ALLOW),
        Acl(ResourceType.TOPIC, "__log", PatternType.LITERAL, "User:carol", "*", Operation.READ, Permission.ALLOW),
    ]
    return SecuredHandler(inner, Topics(), AclAuthorizer(acls), frozenset({"__log"}))


def _call(handler: SecuredHandler, key: int, request: Message) -> Message:
    context = ConnectionContext(RequestHeader(key, 1, 1, "c"), "127.0.0.1", 1, 2, principal="carol")
    return asyncio.run(handler.handle(context, request))


def _acks() -> list[sf.ShareFetchRequestAcknowledgementBatch]:
    return [sf.ShareFetchRequestAcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])]


def test_share_fetch_needs_read_on_the_group() -> None:
    inner = Inner()
    answer = _call(_handler(inner), 78, sf.ShareFetchRequest(group_id="other", member_id="m"))
    assert isinstance(answer, sf.ShareFetchResponse)
    assert answer.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED and not inner.seen


def test_share_fetch_refuses_topics_without_read_and_never_passes_them_on() -> None:
    inner = Inner()
    topics = [
        sf.ShareFetchRequestFetchTopic(
            topic_id=tid,
            partitions=[sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=_acks())],
        )
        for tid in (ALLOWED, DENIED, LOG)
    ]
    answer = _call(
        _handler(inner), 78, sf.ShareFetchRequest(group_id="g", member_id="m", share_session_epoch=1, topics=topics)
    )
    assert isinstance(answer, sf.ShareFetchResponse)
    codes = {t.topic_id: (t.partitions[0].error_code, t.partitions[0].acknowledge_error_code) for t in answer.responses}
    denied = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    assert codes == {ALLOWED: (0, 0), DENIED: denied, LOG: denied}
    (seen,) = inner.seen
    assert isinstance(seen, sf.ShareFetchRequest) and [t.topic_id for t in seen.topics] == [ALLOWED]


def test_share_acknowledge_needs_read_on_the_group_and_its_topics() -> None:
    inner = Inner()
    handler = _handler(inner)
    refused = _call(handler, 79, sa.ShareAcknowledgeRequest(group_id="other", member_id="m", share_session_epoch=1))
    assert isinstance(refused, sa.ShareAcknowledgeResponse)
    assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED and not inner.seen
    topics = [
        sa.ShareAcknowledgeRequestAcknowledgeTopic(
            topic_id=tid, partitions=[sa.ShareAcknowledgeRequestAcknowledgePartition(partition_index=3)]
        )
        for tid in (ALLOWED, DENIED)
    ]
    answer = _call(
        handler, 79, sa.ShareAcknowledgeRequest(group_id="g", member_id="m", share_session_epoch=1, topics=topics)
    )
    assert isinstance(answer, sa.ShareAcknowledgeResponse)
    codes = {t.topic_id: t.partitions[0].error_code for t in answer.responses}
    assert codes == {ALLOWED: 0, DENIED: ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    (seen,) = inner.seen
    assert isinstance(seen, sa.ShareAcknowledgeRequest) and [t.topic_id for t in seen.topics] == [ALLOWED]


def test_malformed_acknowledgements_of_a_denied_topic_are_invalid_request() -> None:
    """Kafka 4.2's KafkaApis validates the acknowledgement batches (validateAcknowledgementBatches)
    before it checks READ on their topics: a malformed list on a topic the caller may not read is
    INVALID_REQUEST, a well-formed one TOPIC_AUTHORIZATION_FAILED; neither reaches the coordinator."""
    inner = Inner()
    handler = _handler(inner)
    overlapping = [(0, 5, [1]), (3, 9, [1])]
    cases: dict[int, list[Batch]] = {
        0: overlapping,
        1: [(0, 0, [1])],
        2: [(0, 0, [4])],
        3: [],
    }  # RENEW without IsRenewAck: malformed
    answer = _call(handler, 79, ack_request("g", "m", 1, {DENIED: cases}))
    assert isinstance(answer, sa.ShareAcknowledgeResponse)
    codes = {p.partition_index: p.error_code for t in answer.responses for p in t.partitions}
    denied, invalid = ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_REQUEST
    assert codes == {0: invalid, 1: denied, 2: invalid, 3: denied}
    fetch_topics = [
        sf.ShareFetchRequestFetchTopic(
            topic_id=DENIED,
            partitions=[
                sf.ShareFetchRequestFetchPartition(
                    partition_index=0,
                    acknowledgement_batches=[
                        sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=t)
                        for f, la, t in overlapping
                    ],
                )
            ],
        )
    ]
    fetched = _call(
        handler, 78, sf.ShareFetchRequest(group_id="g", member_id="m", share_session_epoch=1, topics=fetch_topics)
    )
    assert isinstance(fetched, sf.ShareFetchResponse)
    (partition,) = [p for t in fetched.responses for p in t.partitions]
    assert (partition.error_code, partition.acknowledge_error_code) == (denied, invalid)
    assert all(isinstance(m, sa.ShareAcknowledgeRequest | sf.ShareFetchRequest) and not m.topics for m in inner.seen)
