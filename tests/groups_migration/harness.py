"""Drives the composed shard (GroupCoordinatorShard) the way the runtime does, for groups that
move between the classic and the consumer protocol: records go through the real codec before
replay, timers are kept by key, parked requests are answered by completions, and the whole log
can be replayed into a fresh shard to compare with the live state."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups import classic
from groupcoord.coordinator.groups.classic import ClassicGroupConfig
from groupcoord.coordinator.groups.classic.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.leave_group import LeaveGroupResponse
from groupcoord.coordinator.offsets.config import OffsetsConfig
from groupcoord.coordinator.runtime.api import CancelTimer, Park, Result, ScheduleTimer
from groupcoord.records import CoordinatorRecord, RecordType, decode, encode
from groupcoord.records.definitions import ClassicMemberMetadata, GroupMetadataKey, GroupMetadataValue
from tests.messages import (
    COMMIT_CONTEXT,
    cg_request,
    client,
    commit_partition,
    commit_request,
    commit_topic,
    heartbeat_request,
    join_protocol,
    join_request,
    leave_request,
    member_identity,
    owned_topic,
    sync_request,
    tid,
)

GROUP = "grp"
FOO = "foo"
FOO_ID = tid(FOO)


def image(partitions: int = 6) -> TopicsImage:
    return TopicsImage.of([TopicImage(FOO, FOO_ID, partitions)], 1)


def subscription(topics: Iterable[str] = (FOO,), owned: Iterable[int] = (), version: int = 3) -> bytes:
    owned_tps = (TopicPartitions(FOO, tuple(sorted(owned))),) if owned else ()
    return encode_subscription(Subscription(tuple(topics), None, owned_tps), version)


def assignment(partitions: Iterable[int]) -> bytes:
    ps = tuple(sorted(partitions))
    return encode_assignment(Assignment((TopicPartitions(FOO, ps),) if ps else ()))


def partitions_of(assignment_bytes: bytes) -> list[int]:
    if not assignment_bytes:
        return []
    return sorted(p for tp in decode_assignment(assignment_bytes).assigned_partitions for p in tp.partitions)


@dataclass
class Shard:
    policy: str = "bidirectional"
    metadata: TopicsImage = field(default_factory=image)
    state: GroupCoordinatorState = field(default_factory=GroupCoordinatorState)
    log: list[CoordinatorRecord] = field(default_factory=list)
    timers: dict[str, ScheduleTimer] = field(default_factory=dict)
    answers: dict[Hashable, Any] = field(default_factory=dict)
    now: int = 100_000
    _tokens: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.handlers = GroupCoordinatorShard(
            offsets_config=OffsetsConfig(),
            classic_config=ClassicGroupConfig(initial_rebalance_delay_ms=0),
            consumer_config=ConsumerGroupConfig(assignment_interval_ms=0, migration_policy=self.policy),
            metadata=lambda: self.metadata,
        )

    # --- runtime behaviour --------------------------------------------------------------------

    def apply(self, result: Result[Any], token: Hashable | None = None) -> Any:
        for record in result.records:
            decoded = decode(*encode(record))
            self.state.replay(decoded)
            self.log.append(decoded)
        for op in result.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)
        for t, answer in result.completions:
            self.answers[t] = answer
        if isinstance(result.response, Park):
            return result.response
        if token is not None:
            self.answers[token] = result.response
        return result.response

    def load(self, *records: CoordinatorRecord) -> None:
        """Records as if loaded from the log (what a previous coordinator wrote)."""
        for record in records:
            decoded = decode(*encode(record))
            self.state.replay(decoded)
            self.log.append(decoded)

    def fire(self, key_prefix: str) -> None:
        for key in sorted(self.timers):
            if key.startswith(key_prefix):
                op = self.timers.pop(key)
                self.apply(self.handlers.on_timer(self.state, op.event, self.now))

    def advance(self, ms: int) -> None:
        """Move time forward, firing every timer that falls due, in deadline order."""
        target = self.now + ms
        while due := [t for t in self.timers.values() if t.deadline_ms <= target]:
            timer = min(due, key=lambda t: (t.deadline_ms, t.key))
            del self.timers[timer.key]
            self.now = max(self.now, timer.deadline_ms)
            self.apply(self.handlers.on_timer(self.state, timer.event, self.now))
        self.now = target

    def replayed(self) -> Any:
        fresh = GroupCoordinatorState()
        for record in self.log:
            fresh.replay(record)
        return fresh.snapshot()

    def check_replay(self) -> None:
        assert self.replayed() == self.state.snapshot()

    # --- requests -----------------------------------------------------------------------------

    def cg_heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        context = RequestContext(1, "client", "/127.0.0.1")
        response = self.apply(self.handlers.consumer_group_heartbeat(self.state, request, self.now, context))
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def cg_join(self, member_id: str, topics: list[str] | None = None) -> ConsumerGroupHeartbeatResponse:
        return self.cg_heartbeat(
            cg_request(
                GROUP,
                member_id,
                0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=topics or [FOO],
                topic_partitions=[],
            )
        )

    def cg_beat(self, member_id: str, epoch: int, owned: Iterable[int] | None = None) -> ConsumerGroupHeartbeatResponse:
        tps = None if owned is None else [owned_topic(FOO_ID, sorted(owned))]
        return self.cg_heartbeat(cg_request(GROUP, member_id, epoch, topic_partitions=tps))

    def join(
        self,
        member_id: str,
        owned: Iterable[int] = (),
        protocols: tuple[str, ...] = ("range",),
        session_timeout_ms: int = 10_000,
        instance_id: str | None = None,
        api_version: int = 9,
        topics: Iterable[str] = (FOO,),
    ) -> Any:
        """A classic JoinGroup; returns the response, or the Park token when it waits."""
        token = ("join", member_id, next(self._tokens))
        request = join_request(
            GROUP,
            session_timeout_ms,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[join_protocol(p, subscription(topics, owned=owned)) for p in protocols],
            rebalance_timeout_ms=20_000,
            group_instance_id=instance_id,
        )
        context = client(api_version, f"client-{member_id}", "/10.0.0.1")
        response = self.apply(self.handlers.join_group(self.state, request, token, self.now, context), token)
        return token if isinstance(response, Park) else response

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None, protocol: str = "range"
    ) -> Any:
        token = ("sync", member_id, next(self._tokens))
        request = sync_request(
            GROUP, generation, member_id, protocol_type="consumer", protocol_name=protocol, assignments=assignments
        )
        response = self.apply(self.handlers.sync_group(self.state, request, token, self.now, client(5)), token)
        return token if isinstance(response, Park) else response

    def heartbeat(self, member_id: str, generation: int) -> int:
        response = self.apply(
            self.handlers.heartbeat(self.state, heartbeat_request(GROUP, generation, member_id), self.now, client(4))
        )
        return int(response.error_code)

    def leave(self, *member_ids: str) -> LeaveGroupResponse:
        request = leave_request(GROUP, members=[member_identity(m) for m in member_ids])
        response = self.apply(self.handlers.leave_group(self.state, request, self.now, client(5)))
        assert isinstance(response, LeaveGroupResponse)
        return response

    def commit(self, member_id: str, generation: int, offsets: dict[int, int]) -> list[int]:
        request = commit_request(
            GROUP,
            [commit_topic(FOO, [commit_partition(p, o) for p, o in offsets.items()], FOO_ID)],
            generation_id_or_member_epoch=generation,
            member_id=member_id,
        )
        response = self.apply(self.handlers.commit_offsets(self.state, request, self.now, COMMIT_CONTEXT))
        return [p.error_code for t in response.topics for p in t.partitions]

    def answer(self, token_or_response: Any) -> Any:
        """The response of a request that may have been parked (then answered later)."""
        return self.answers[token_or_response] if isinstance(token_or_response, tuple) else token_or_response

    # --- views ------------------------------------------------------------------------------

    def kind(self) -> str | None:
        return self.state.group_type(GROUP)

    def cgroup(self) -> Any:
        g = self.state.consumer.group(GROUP)
        assert g is not None
        return g

    def epochs(self) -> tuple[int, int]:
        g = self.cgroup()
        return g.group_epoch, g.assignment_epoch

    def targets(self) -> dict[str, list[int]]:
        g = self.cgroup()
        return {m: sorted(p for ps in t.values() for p in ps) for m, t in sorted(g.target.items())}

    def members(self) -> dict[str, tuple[int, list[int], list[int]]]:
        """member -> (epoch, assigned, pending revocation)."""
        out = {}
        for mid, m in sorted(self.cgroup().members.items()):
            assigned = sorted(p for ps in m.assigned.values() for p in ps)
            pending = sorted(p for ps in m.pending_revocation.values() for p in ps)
            out[mid] = (m.member_epoch, assigned, pending)
        return out

    def classic_group(self) -> classic.ClassicGroup:
        g = self.state.classic.group(GROUP)
        assert g is not None
        return g


def classic_group_record(
    generation: int, assignments: dict[str, list[int]], protocol: str = "range", session_timeout_ms: int = 10_000
) -> CoordinatorRecord:
    """A Stable classic group as its GroupMetadata record states it."""
    members = [
        ClassicMemberMetadata(
            member_id=mid,
            group_instance_id=None,
            client_id=f"client-{mid}",
            client_host="/10.0.0.1",
            rebalance_timeout_ms=20_000,
            session_timeout_ms=session_timeout_ms,
            subscription=subscription(),
            assignment=assignment(ps),
        )
        for mid, ps in assignments.items()
    ]
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=generation,
        protocol=protocol,
        leader=next(iter(assignments)),
        current_state_timestamp=1000,
        members=members,
    )
    return CoordinatorRecord(RecordType.GROUP_METADATA, GroupMetadataKey(GROUP), value)
