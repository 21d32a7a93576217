"""A ConsumerGroupHeartbeat answered at once (``consumer_group_heartbeat_now``), and a classic
Heartbeat (``heartbeat_now``), gets exactly the answer the queued path gives, and one that changes the group is never answered before its
records are read back. Two identical simulated worlds (tests/sim/kernel.py), one per path, take
the same heartbeats in the same order."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.groups.config import ClassicGroupConfig, ConsumerGroupConfig
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.runtime.shard import ShardStatus
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests.groups.harness import image, topic
from tests.messages import (
    cg_request,
    client,
    heartbeat_request,
    join_protocol,
    join_request,
    owned_topic,
    sync_request,
)
from tests.sim.kernel import OneShardRuntime, SimHost, SimLog, sim_loop

GROUP = "g"
R = TypeVar("R")
IMAGE = image(topic("t", 6))


class Side:
    """One world and its service; ``at_once``: heartbeats go through ``consumer_group_heartbeat_now``."""

    def __init__(self, at_once: bool, classic: ClassicGroupConfig | None = None) -> None:
        self.at_once = at_once
        self.loop = sim_loop()
        self.host = SimHost(SimLog(), self.loop, "o", random.Random(1))
        # Targets computed at once (no assignment interval): each heartbeat's answer is final.
        handlers = GroupCoordinatorShard(
            consumer_config=ConsumerGroupConfig(assignment_interval_ms=0),
            classic_config=classic or ClassicGroupConfig(),
            metadata=lambda: IMAGE,
        )
        self.shard = self.host.shard(0, handlers)
        self.shard.load()
        self.run()
        assert self.shard.status is ShardStatus.ACTIVE
        self.service = GroupCoordinatorService(OneShardRuntime(self.shard), handlers)  # type: ignore[arg-type]
        # Per heartbeat: whether it was answered at once.
        self.immediate: list[bool] = []

    def run(self, ms: int = 1000) -> None:
        end = self.loop.clock.now_ms() + ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if not self.at_once:
            return self._settle(self.service.consumer_group_heartbeat(request, client(1)), stalled=False)
        answer = self.service.consumer_group_heartbeat_now(request, client(1))
        self.immediate.append(isinstance(answer, ConsumerGroupHeartbeatResponse))
        if isinstance(answer, ConsumerGroupHeartbeatResponse):
            return answer
        return self._settle(answer, stalled=True)

    def _settle(self, answer: Awaitable[R], stalled: bool) -> R:
        """Drive the answer's coroutine on the simulated loop; with ``stalled`` the log first
        delivers nothing, and the answer must not come meanwhile."""
        assert isinstance(answer, Coroutine)
        waited = answer.send(None)
        while True:
            if stalled:
                self.host.stall()
                self.run()
                assert not waited.done(), "answered before its records were read back"
                self.host.resume()
            self.run()
            assert waited.done()
            try:
                waited = answer.send(None)
            except StopIteration as done:
                return done.value


def test_heartbeats_answered_at_once_get_the_queued_paths_answers() -> None:
    slow, fast = Side(at_once=False), Side(at_once=True)
    topic_id = IMAGE.topics["t"].topic_id

    def both(request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        # Both worlds at the same moment first: waiting for the log moves a world's clock on.
        now = max(slow.loop.clock.now_ms(), fast.loop.clock.now_ms()) + 10
        for side in (slow, fast):
            side.loop.clock.advance(now - side.loop.clock.now_ms())
        expected, got = slow.heartbeat(request), fast.heartbeat(request)
        assert got == expected
        return got

    def join(member: str) -> ConsumerGroupHeartbeatResponse:
        return both(
            cg_request(GROUP, member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["t"], topic_partitions=[])
        )

    def owned(answer: ConsumerGroupHeartbeatResponse) -> list[Any]:
        assert answer.assignment is not None
        return [owned_topic(topic_id, tp.partitions) for tp in answer.assignment.topic_partitions]

    first = join("m1")  # a new member: written
    assert first.error_code == ErrorCode.NONE and first.member_epoch == 1
    acked = both(cg_request(GROUP, "m1", 1, topic_partitions=owned(first)))  # stored already
    assert acked.error_code == ErrorCode.NONE
    steady = both(cg_request(GROUP, "m1", 1))  # nothing changes: at once
    assert steady.error_code == ErrorCode.NONE and steady.assignment is None
    second = join("m2")  # the group's epoch moves on: written
    assert second.member_epoch == 2
    moved = both(cg_request(GROUP, "m1", 1))  # m1 is to give partitions up: written
    assert moved.assignment is not None and len(owned(moved)[0].partitions) < 6
    fenced = both(cg_request(GROUP, "m1", 7))
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    unknown = both(cg_request(GROUP, "nobody", 3))
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    again = both(cg_request(GROUP, "m1", moved.member_epoch, topic_partitions=owned(moved)))
    assert again.error_code == ErrorCode.NONE
    # At once: what changes nothing (the acknowledgement of an assignment as given, a steady
    # heartbeat, a fenced epoch, an unknown member); after the read-back: joins, a revocation
    # handed out, its acknowledgement (a new member epoch).
    assert fast.immediate == [False, True, True, False, False, True, True, False]
    assert fast.shard.live.snapshot() == slow.shard.live.snapshot()


# --- classic Heartbeat (``heartbeat_now``) --------------------------------------------------------


class ClassicSide(Side):
    """A world for a classic group (no rebalance delay); ``at_once``: Heartbeat by ``heartbeat_now``."""

    def __init__(self, at_once: bool) -> None:
        super().__init__(at_once, ClassicGroupConfig(initial_rebalance_delay_ms=0))
        self.parked: list[Coroutine[Any, Any, Any]] = []

    def call(self, answer: Awaitable[R]) -> R:
        return self._settle(answer, stalled=False)

    def start(self, answer: Coroutine[Any, Any, Any]) -> None:
        """A request that stays parked (a JoinGroup waiting for the others)."""
        answer.send(None)
        self.run()
        self.parked.append(answer)

    def classic_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        if not self.at_once:
            return self.call(self.service.heartbeat(request, client(4)))
        answer = self.service.heartbeat_now(request, client(4))
        self.immediate.append(isinstance(answer, HeartbeatResponse))
        if isinstance(answer, HeartbeatResponse):
            return answer
        return self._settle(answer, stalled=True)


def test_classic_heartbeats_answered_at_once_get_the_queued_paths_answers() -> None:
    slow, fast = ClassicSide(at_once=False), ClassicSide(at_once=True)
    sides = (slow, fast)
    protocols = [join_protocol("range", b"meta")]

    def same(answers: list[Any]) -> Any:
        assert answers[0] == answers[1]
        return answers[1]

    def join(member: str) -> JoinGroupResponse:
        request = join_request(GROUP, 10_000, member, "consumer", protocols, rebalance_timeout_ms=30_000)
        return same([side.call(side.service.join_group(request, client(3))) for side in sides])

    def heartbeat(generation: int, member: str) -> HeartbeatResponse:
        now = max(side.loop.clock.now_ms() for side in sides) + 10
        for side in sides:
            side.loop.clock.advance(now - side.loop.clock.now_ms())
        return same([side.classic_heartbeat(heartbeat_request(GROUP, generation, member)) for side in sides])

    joined = join("")
    assert joined.error_code == ErrorCode.NONE and joined.generation_id == 1
    m1 = joined.member_id
    sync = sync_request(GROUP, 1, m1, protocol_type="consumer", protocol_name="range", assignments={m1: b"all"})
    synced = same([side.call(side.service.sync_group(sync, client(3))) for side in sides])
    assert synced.error_code == ErrorCode.NONE
    assert heartbeat(1, m1).error_code == ErrorCode.NONE  # stable
    assert heartbeat(0, m1).error_code == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(1, "nobody").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    # A second member joins: it waits for m1 to rejoin, and m1's heartbeat says so.
    for side in sides:
        side.start(side.service.join_group(join_request(GROUP, 10_000, "", "consumer", protocols, 30_000), client(3)))
    assert heartbeat(1, m1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert fast.immediate == [True, True, True, True]
    assert fast.shard.live.snapshot() == slow.shard.live.snapshot()
