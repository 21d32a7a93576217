"""Short factories for the generated message classes the group logic takes.

The classes in ``groupcoord.coordinator.messages`` are keyword-only, with wire-typed fields (lists, topic ids
as ``uuid.UUID``); these helpers keep test literals short. Topic ids in the logic and the log are
Kafka's string form; ``tid(label)`` makes a valid one from a readable label, so a test can name
the same topic in a ``TopicsImage`` (string) and in a request (uuid) without a table.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from groupcoord.coordinator.messages.schema import ZERO_UUID, topic_id_string, topic_id_uuid
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

# What a current client sends: OffsetCommit v9 (v10 names topics by id, which the edge resolves).
COMMIT_CONTEXT = RequestContext(api_version=9)


def tid(label: str) -> str:
    """A topic id in Kafka's string form, the same for the same label."""
    return topic_id_string(uuid.uuid5(uuid.NAMESPACE_OID, label))


def wire_id(topic_id: str | None) -> uuid.UUID:
    """A string-form topic id as the wire carries it (``None``: no id)."""
    return ZERO_UUID if topic_id is None else topic_id_uuid(topic_id)


def commit_partition(
    index: int, offset: int, leader_epoch: int = -1, metadata: str | None = ""
) -> OffsetCommitRequestPartition:
    return OffsetCommitRequestPartition(
        partition_index=index, committed_offset=offset, committed_leader_epoch=leader_epoch, committed_metadata=metadata
    )


def commit_topic(
    name: str, partitions: list[OffsetCommitRequestPartition], topic_id: str | None = None
) -> OffsetCommitRequestTopic:
    return OffsetCommitRequestTopic(name=name, topic_id=wire_id(topic_id), partitions=partitions)


def commit_request(
    group_id: str,
    topics: list[OffsetCommitRequestTopic],
    generation_id_or_member_epoch: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
    retention_time_ms: int = -1,
) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group_id,
        topics=topics,
        generation_id_or_member_epoch=generation_id_or_member_epoch,
        member_id=member_id,
        group_instance_id=group_instance_id,
        retention_time_ms=retention_time_ms,
    )


def fetch_topic(name: str, partition_indexes: list[int], topic_id: str | None = None) -> OffsetFetchRequestTopics:
    return OffsetFetchRequestTopics(name=name, topic_id=wire_id(topic_id), partition_indexes=partition_indexes)


def fetch_group(
    group_id: str,
    topics: list[OffsetFetchRequestTopics] | None = None,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> OffsetFetchRequestGroup:
    return OffsetFetchRequestGroup(group_id=group_id, topics=topics, member_id=member_id, member_epoch=member_epoch)


def delete_topic(name: str, partitions: list[int]) -> OffsetDeleteRequestTopic:
    return OffsetDeleteRequestTopic(
        name=name, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in partitions]
    )


def delete_request(group_id: str, topics: list[OffsetDeleteRequestTopic]) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(group_id=group_id, topics=topics)


# --- classic protocol -------------------------------------------------------------------------


def join_protocol(name: str, metadata: bytes = b"") -> JoinGroupRequestProtocol:
    return JoinGroupRequestProtocol(name=name, metadata=metadata)


def join_request(
    group_id: str,
    session_timeout_ms: int,
    member_id: str = "",
    protocol_type: str = "",
    protocols: Iterable[JoinGroupRequestProtocol] = (),
    rebalance_timeout_ms: int = -1,
    group_instance_id: str | None = None,
    reason: str | None = None,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        member_id=member_id,
        protocol_type=protocol_type,
        protocols=list(protocols),
        rebalance_timeout_ms=rebalance_timeout_ms,
        group_instance_id=group_instance_id,
        reason=reason,
    )


def sync_request(
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None = None,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignments: dict[str, bytes] | None = None,
) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()],
    )


def heartbeat_request(
    group_id: str, generation_id: int, member_id: str, group_instance_id: str | None = None
) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=group_id, generation_id=generation_id, member_id=member_id, group_instance_id=group_instance_id
    )


def member_identity(
    member_id: str = "", group_instance_id: str | None = None, reason: str | None = None
) -> LeaveGroupRequestMemberIdentity:
    return LeaveGroupRequestMemberIdentity(member_id=member_id, group_instance_id=group_instance_id, reason=reason)


def leave_request(
    group_id: str, member_id: str = "", members: Iterable[LeaveGroupRequestMemberIdentity] = ()
) -> LeaveGroupRequest:
    return LeaveGroupRequest(group_id=group_id, member_id=member_id, members=list(members))


def client(api_version: int, client_id: str = "", client_host: str = "") -> RequestContext:
    """What a request brings beside its body: its version and the client's id and host."""
    return RequestContext(api_version=api_version, client_id=client_id, client_host=client_host)


# --- consumer protocol ------------------------------------------------------------------------


def cg_request(
    group_id: str,
    member_id: str = "",
    member_epoch: int = 0,
    instance_id: str | None = None,
    rack_id: str | None = None,
    rebalance_timeout_ms: int = -1,
    subscribed_topic_names: list[str] | None = None,
    subscribed_topic_regex: str | None = None,
    server_assignor: str | None = None,
    topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None = None,
) -> ConsumerGroupHeartbeatRequest:
    """A ConsumerGroupHeartbeat, fields in the schema's order."""
    return ConsumerGroupHeartbeatRequest(
        group_id=group_id,
        member_id=member_id,
        member_epoch=member_epoch,
        instance_id=instance_id,
        rack_id=rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=subscribed_topic_names,
        subscribed_topic_regex=subscribed_topic_regex,
        server_assignor=server_assignor,
        topic_partitions=topic_partitions,
    )


def owned_topic(topic_id: str, partitions: Iterable[int]) -> ConsumerGroupHeartbeatRequestTopicPartitions:
    """One topic of what a member says it owns, its id given in the string form."""
    return ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=topic_id_uuid(topic_id), partitions=list(partitions))


def by_topic_id(topic_partitions: Iterable[Any]) -> dict[str, list[int]]:
    """An answer's topic partitions keyed by the string form of their topic ids."""
    return {topic_id_string(tp.topic_id): list(tp.partitions) for tp in topic_partitions}
