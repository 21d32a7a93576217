"""A tiny in-memory group handler: one classic group generation at a time, enough for one consumer."""

from __future__ import annotations

import itertools

from groupcoord.coordinator.gateway.handler import ConnectionContext
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.list_groups import (
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse


class FakeGroupHandler:
    """Single-member classic groups and committed offsets, in memory; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.assignments: dict[str, bytes] = {}
        self.protocol: dict[str, tuple[str, str]] = {}
        self._ids = itertools.count(1)

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        self.calls.append((context.api_key, context.api_version, type(request).__name__))
        if isinstance(request, JoinGroupRequest):
            member = request.member_id or f"member-{next(self._ids)}"
            chosen = request.protocols[0]
            self.protocol[request.group_id] = (request.protocol_type, chosen.name)
            return JoinGroupResponse(
                generation_id=1,
                protocol_type=request.protocol_type,
                protocol_name=chosen.name,
                leader=member,
                member_id=member,
                members=[JoinGroupResponseMember(member_id=member, metadata=chosen.metadata)],
            )
        if isinstance(request, SyncGroupRequest):
            for entry in request.assignments:
                self.assignments[request.group_id] = entry.assignment
            protocol_type, name = self.protocol.get(request.group_id, ("consumer", ""))
            return SyncGroupResponse(
                protocol_type=protocol_type,
                protocol_name=name,
                assignment=self.assignments.get(request.group_id, b""),
            )
        if isinstance(request, HeartbeatRequest):
            return HeartbeatResponse()
        if isinstance(request, LeaveGroupRequest):
            return LeaveGroupResponse()
        if isinstance(request, ListGroupsRequest):
            return ListGroupsResponse(
                groups=[
                    ListGroupsResponseListedGroup(group_id=g, protocol_type=t) for g, (t, _) in self.protocol.items()
                ]
            )
        if isinstance(request, OffsetCommitRequest):
            topics = []
            for topic in request.topics:
                parts = []
                for p in topic.partitions:
                    self.offsets[(request.group_id, topic.name, p.partition_index)] = p.committed_offset
                    parts.append(OffsetCommitResponsePartition(partition_index=p.partition_index))
                topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=parts))
            return OffsetCommitResponse(topics=topics)
        if isinstance(request, OffsetFetchRequest):
            return self._offset_fetch(request, context.api_version)
        raise AssertionError(f"fake handler has no answer for {type(request).__name__}")

    def _offset_fetch(self, request: OffsetFetchRequest, version: int) -> OffsetFetchResponse:
        if version >= 8:
            groups = []
            for group in request.groups:
                topics = [
                    OffsetFetchResponseTopics(
                        name=t.name,
                        partitions=[
                            OffsetFetchResponsePartitions(
                                partition_index=p, committed_offset=self.offsets.get((group.group_id, t.name, p), -1)
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in group.topics or []
                ]
                groups.append(OffsetFetchResponseGroup(group_id=group.group_id, topics=topics))
            return OffsetFetchResponse(groups=groups)
        topics_out = [
            OffsetFetchResponseTopic(
                name=t.name,
                partitions=[
                    OffsetFetchResponsePartition(
                        partition_index=p, committed_offset=self.offsets.get((request.group_id, t.name, p), -1)
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in request.topics or []
        ]
        return OffsetFetchResponse(topics=topics_out)
