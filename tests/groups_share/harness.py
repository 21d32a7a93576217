"""A driver for share groups through the pure shard handlers (``GroupCoordinatorShard``), applying
results the way the runtime does: records through the real codec into ``replay``, timers kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState, describe_share_group
from groupcoord.coordinator.groups.config import ShareGroupConfig
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.share_group_describe import ShareGroupDescribeResponseDescribedGroup
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.runtime.api import CancelTimer, Result, ScheduleTimer
from groupcoord.records import CoordinatorRecord, decode, encode
from tests.messages import tid

GROUP = "sg"
CONTEXT = RequestContext(api_version=1, client_id="client", client_host="/127.0.0.1")


def topic(name: str, partitions: int) -> TopicImage:
    return TopicImage(name, tid(name), partitions)


def image(*topics: TopicImage, version: int = 1) -> TopicsImage:
    return TopicsImage.of(topics, version)


@dataclass
class Coordinator:
    metadata: TopicsImage
    share_config: ShareGroupConfig = field(default_factory=ShareGroupConfig)
    state: GroupCoordinatorState = field(default_factory=GroupCoordinatorState)
    log: list[CoordinatorRecord] = field(default_factory=list)
    timers: dict[str, ScheduleTimer] = field(default_factory=dict)
    now: int = 1000

    @property
    def shard(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(share_config=self.share_config, metadata=lambda: self.metadata)

    def apply(self, result: Result[Any]) -> Any:
        for record in result.records:
            # Round-trip through the real codec: what is replayed is what the log would hold.
            decoded = decode(*encode(record))
            self.state.replay(decoded)
            self.log.append(decoded)
        for op in result.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)
        return result.response

    def heartbeat(self, request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
        response = self.apply(self.shard.share_group_heartbeat(self.state, request, self.now, CONTEXT))
        assert isinstance(response, ShareGroupHeartbeatResponse)
        return response

    def join(self, member_id: str, topics: list[str], group: str = GROUP, **kw: Any) -> ShareGroupHeartbeatResponse:
        return self.heartbeat(
            ShareGroupHeartbeatRequest(
                group_id=group, member_id=member_id, member_epoch=0, subscribed_topic_names=topics, **kw
            )
        )

    def beat(self, member_id: str, epoch: int, group: str = GROUP, **kw: Any) -> ShareGroupHeartbeatResponse:
        return self.heartbeat(ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch, **kw))

    def fire(self, key_prefix: str) -> None:
        """Fire the timers whose key starts with ``key_prefix`` (regardless of deadline)."""
        for key in sorted(self.timers):
            if key.startswith(key_prefix):
                op = self.timers.pop(key)
                self.apply(self.shard.on_timer(self.state, op.event, self.now))

    def describe(self, group_id: str = GROUP) -> ShareGroupDescribeResponseDescribedGroup:
        return describe_share_group(self.state, group_id, self.metadata)

    def replayed(self) -> GroupCoordinatorState:
        fresh = GroupCoordinatorState()
        for r in self.log:
            fresh.replay(r)
        return fresh

    def group(self, group_id: str = GROUP) -> Any:
        g = self.state.share.group(group_id)
        assert g is not None
        return g

    def assigned(self, member_id: str, group_id: str = GROUP) -> list[tuple[str, int]]:
        m = self.group(group_id).members[member_id]
        return sorted((t, p) for t, ps in m.assigned.items() for p in ps)


def partitions(response: ShareGroupHeartbeatResponse) -> list[int] | None:
    """The partitions of a single-topic assignment in a heartbeat answer (None: not sent)."""
    if response.assignment is None:
        return None
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)
