"""A tiny driver for the pure consumer-group handlers: apply results the way the runtime does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.errors import GroupError
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import (
    ConsumerGroupsState,
    consumer_group_heartbeat,
    on_timer,
)
from groupcoord.coordinator.groups.consumer.validation import validate_heartbeat_request
from groupcoord.coordinator.groups.context import GroupContext, RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.runtime.api import CancelTimer, Result, ScheduleTimer
from groupcoord.records import CoordinatorRecord, decode, encode
from tests.answers import answered
from tests.messages import cg_request, owned_topic, tid

GROUP = "grp"


def topic(name: str, partitions: int, racks: tuple[frozenset[str], ...] = ()) -> TopicImage:
    return TopicImage(name, tid(name), partitions, racks)


def image(*topics: TopicImage, version: int = 1) -> TopicsImage:
    return TopicsImage.of(topics, version)


def tps(topic_id: str, *partitions: int) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
    return [owned_topic(topic_id, list(partitions))]


@dataclass
class Coordinator:
    metadata: TopicsImage
    config: ConsumerGroupConfig = field(default_factory=lambda: ConsumerGroupConfig(assignment_interval_ms=0))
    state: ConsumerGroupsState = field(default_factory=ConsumerGroupsState)
    log: list[CoordinatorRecord] = field(default_factory=list)
    timers: dict[str, ScheduleTimer] = field(default_factory=dict)
    now: int = 1000

    def apply(self, result: Result[Any]) -> None:
        for record in result.records:
            # Round-trip through the real codec: what is replayed is what the log would hold.
            key, value = encode(record)
            decoded = decode(key, value)
            self.state.replay(decoded)
            self.log.append(decoded)
        for op in result.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, api_version: int = 1) -> ConsumerGroupHeartbeatResponse:
        ctx = GroupContext(
            self.now, self.metadata, self.config, request=RequestContext(api_version, "client", "/127.0.0.1")
        )
        try:
            # As the shard's entry (groups/routing.py) does before the engine sees a request.
            validate_heartbeat_request(request, api_version, self.config)
        except GroupError as exc:
            return ConsumerGroupHeartbeatResponse(error_code=int(exc.error), error_message=exc.message)
        result = consumer_group_heartbeat(self.state, request, ctx)
        self.apply(result)
        return answered(result.response)  # a KIP-848 heartbeat is never parked

    def join(self, member_id: str, topics: list[str], **kw: Any) -> ConsumerGroupHeartbeatResponse:
        return self.heartbeat(
            cg_request(
                GROUP,
                member_id,
                0,
                rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 30000),
                subscribed_topic_names=topics,
                topic_partitions=[],
                **kw,
            )
        )

    def beat(
        self,
        member_id: str,
        epoch: int,
        owned: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None = None,
        **kw: Any,
    ) -> ConsumerGroupHeartbeatResponse:
        return self.heartbeat(cg_request(GROUP, member_id, epoch, topic_partitions=owned, **kw))

    def fire(self, key_prefix: str) -> None:
        """Fire the timers whose key starts with ``key_prefix`` (regardless of deadline)."""
        for key in sorted(self.timers):
            if key.startswith(key_prefix):
                op = self.timers.pop(key)
                self.apply(on_timer(self.state, op.event, self.now, self.metadata, self.config))

    def resolve_regexes(self) -> None:
        """Run the regex resolution a heartbeat asked for (the runtime fires it as an event of its
        own right after that heartbeat, as Kafka's background pool would)."""
        self.fire("consumer-regex")

    def replayed(self) -> Any:
        fresh = ConsumerGroupsState()
        for r in self.log:
            fresh.replay(r)
        return fresh.snapshot()

    # --- views of the group for assertions -----------------------------------------------------

    def group(self) -> Any:
        g = self.state.group(GROUP)
        assert g is not None
        return g

    def epochs(self) -> tuple[int, int]:
        g = self.group()
        return g.group_epoch, g.assignment_epoch

    def target(self, member_id: str) -> dict[str, list[int]]:
        return {t: sorted(ps) for t, ps in self.group().target.get(member_id, {}).items() if ps}

    def member(self, member_id: str) -> tuple[int, list[int], list[int]]:
        """(epoch, assigned partitions, pending revocation) of a member on single-topic tests."""
        m = self.group().members[member_id]
        assigned = sorted(p for ps in m.assigned.values() for p in ps)
        pending = sorted(p for ps in m.pending_revocation.values() for p in ps)
        return m.member_epoch, assigned, pending


def assigned(response: ConsumerGroupHeartbeatResponse) -> list[int] | None:
    if response.assignment is None:
        return None
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)
