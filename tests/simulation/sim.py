"""Deterministic simulation of one consumer group against the pure coordinator logic.

Everything runs on a simulated clock from one seed: members that behave like the Java consumer
(join, heartbeat, revoke then assign, acknowledge, commit, crash, restart, static bounce,
leave), a network that delays and loses requests and responses, metadata changes, and
coordinator reloads that rebuild the state from the (compacted) log mid-rebalance. After every
event the DESIGN.md invariants are checked; a failure raises ``InvariantViolation`` naming the
seed, and running the same seed again replays the same history.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer import (
    ConsumerGroupsState,
)
from coordinator.groups.topics import TopicImage, TopicsImage
from coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from coordinator.messages.schema import topic_id_string
from coordinator.runtime.shard import ShardStatus
from tests.messages import cg_request, commit_partition, commit_topic, owned_topic, tid
from tests.sim import invariants, shard_api
from tests.sim.kernel import InvariantViolation, Network, SimHost, SimLog, SimLoop

GROUP = "sim-group"
TP = tuple[str, int]


@dataclass(frozen=True)
class Scenario:
    seed: int
    members: int
    topics: int
    partitions: int
    static_fraction: float
    regex_members: bool
    heterogeneous: bool
    range_assignor: bool
    assignment_interval_ms: int
    chaos_ms: int
    fault_rate: float
    reloads: bool
    check_purity_every: int
    replay_check_every: int = 1

    @classmethod
    def random(cls, seed: int, max_members: int = 50, max_partitions: int = 200, chaos_ms: int = 10_000) -> Scenario:
        rng = random.Random(seed)
        # Mostly small groups, sometimes large ones: large groups are slow to simulate and small
        # ones reach the interesting interleavings just as well.
        members = min(
            max_members, 1 + int(rng.paretovariate(1.2)) if rng.random() < 0.75 else rng.randint(1, max_members)
        )
        topics = rng.randint(1, 4)
        partitions = rng.randint(topics, max(topics, min(max_partitions, rng.choice([4, 8, 16, 32, max_partitions]))))
        return cls(
            seed=seed,
            members=members,
            topics=topics,
            partitions=partitions,
            static_fraction=rng.choice([0.0, 0.0, 0.5, 1.0]),
            regex_members=rng.random() < 0.25,
            heterogeneous=rng.random() < 0.3,
            range_assignor=rng.random() < 0.2,
            assignment_interval_ms=rng.choice([0, 0, 200, 1000]),
            chaos_ms=chaos_ms,
            fault_rate=rng.choice([0.0, 0.02, 0.05, 0.15]),
            reloads=rng.random() < 0.5,
            check_purity_every=25,
        )


SIM_CONFIG_BASE: dict[str, Any] = {
    "session_timeout_ms": 3000,
    "min_session_timeout_ms": 1000,
    "heartbeat_interval_ms": 500,
    "min_heartbeat_interval_ms": 100,
}
REBALANCE_TIMEOUT_MS = 2500
REQUEST_TIMEOUT_MS = 1200


@dataclass
class SimMember:
    """A consumer process (one per slot; a restart is a new incarnation with a new member id)."""

    slot: int
    instance_id: str | None
    topics: list[str]
    regex: str | None
    assignor: str | None
    incarnation: int = 0
    member_id: str = ""
    epoch: int = 0
    owned: set[TP] = field(default_factory=set)
    alive: bool = False
    in_flight: int = 0  # request sequence number awaited, 0 = none
    need_full: bool = True
    last_sent_owned: frozenset[TP] | None = None
    reconciling: bool = False
    pending_target: frozenset[TP] | None = None
    leaving: bool = False
    next_beat_at: int = 0
    joined_ever: bool = False


class SimCoordinator:
    """The real shard (``runtime.Shard`` with the production ``GroupCoordinatorShard``) over
    a simulated log, on the simulation's loop: answers are released once read back from the
    log, timers run through the shard, and reloads rebuild the state from the (compacted) log."""

    def __init__(self, loop: SimLoop, rng: random.Random, metadata: TopicsImage, config: ConsumerGroupConfig) -> None:
        self.metadata = metadata
        self.config = config
        self.handlers = shard_api.handlers(lambda: self.metadata, config)
        self.log = SimLog()
        self.host = SimHost(self.log, loop, "sim", rng)
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()

    @property
    def state(self) -> ConsumerGroupsState:
        """The consumer groups as the log has committed them (what clients have been told)."""
        return self.shard.committed.consumer

    @property
    def active(self) -> bool:
        return self.shard.status is ShardStatus.ACTIVE

    def reload(self, compacted: bool) -> None:
        if compacted:
            self.log.compact(0, keep_head=0)
        self.shard.reload("simulated coordinator reload")


class Simulation:
    def __init__(self, scenario: Scenario) -> None:
        self.sc = scenario
        self.rng = random.Random(scenario.seed * 7919 + 1)
        self.loop = SimLoop()
        self.net = Network(self.loop, self.rng, scenario.fault_rate)
        self.req_seq = 0
        self.topic_version = 1
        self.topic_gen: dict[str, int] = {}
        topics = []
        per = max(1, scenario.partitions // scenario.topics)
        for i in range(scenario.topics):
            name = f"topic-{i}"
            self.topic_gen[name] = 0
            topics.append(TopicImage(name, tid(f"{name}#0"), per))
        config = ConsumerGroupConfig(**SIM_CONFIG_BASE, assignment_interval_ms=scenario.assignment_interval_ms)
        self.coord = SimCoordinator(self.loop, self.rng, TopicsImage.of(topics, self.topic_version), config)
        self.members: list[SimMember] = []
        names = sorted(t.name for t in topics)
        for slot in range(scenario.members):
            static = self.rng.random() < scenario.static_fraction
            subs = names
            if scenario.heterogeneous and len(names) > 1:
                subs = sorted(self.rng.sample(names, self.rng.randint(1, len(names))))
            regex = None
            if scenario.regex_members and self.rng.random() < 0.5:
                regex, subs = "topic-.*", []
            assignor = "range" if scenario.range_assignor and self.rng.random() < 0.7 else None
            self.members.append(SimMember(slot, f"instance-{slot}" if static else None, subs, regex, assignor))
        self.steps = 0
        self.max_epoch_seen: dict[str, int] = {}
        self.last_group_epoch = 0
        self.last_assignment_epoch = 0
        self.committed = 0
        self.rejected = 0
        self.trace: list[str] = []
        self.last_arrival: dict[int, int] = {}
        self.checked_offset = -1
        self.dispatched = False
        self.holders: dict[TP, str] = {}

    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    # --- event plumbing ------------------------------------------------------------------------

    def schedule(self, at: int, kind: str, payload: Any = None) -> None:
        self.loop.at(at, self.dispatch, kind, payload)

    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-25:])
        group = self.coord.state.group(GROUP)
        lines = []
        if group is not None:
            lines.append(
                f"group epoch={group.group_epoch} assignment epoch={group.assignment_epoch} state={group.state()}"
            )
            for mid, cm in sorted(group.members.items()):
                lines.append(
                    f"  {mid} e={cm.member_epoch}/{cm.previous_member_epoch} {cm.state.name} "
                    f"assigned={_fmt_epochs(cm.assigned)} revoking={_fmt_epochs(cm.pending_revocation)} "
                    f"target={_fmt_epochs(group.target.get(mid, {}))}"
                )
        for m in self.members:
            lines.append(f"  sim {m.member_id} alive={m.alive} e={m.epoch} owned={sorted(m.owned)} rec={m.reconciling}")
        state = "\n".join(lines)
        raise InvariantViolation(
            f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{state}\n{tail}"
        )

    def run(self) -> None:
        sc = self.sc
        for m in self.members:
            self.schedule(self.rng.randint(0, 1500), "start", m.slot)
        if sc.fault_rate > 0:
            t = 0
            while True:
                t += self.rng.randint(300, 1500)
                if t >= sc.chaos_ms:
                    break
                self.schedule(t, "chaos", None)
        if sc.reloads:
            for _ in range(self.rng.randint(1, 4)):
                self.schedule(self.rng.randint(500, sc.chaos_ms), "reload", self.rng.random() < 0.5)
        self.schedule(sc.chaos_ms, "calm", None)
        end = sc.chaos_ms + 40_000
        quiet_since: int | None = None
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()
            if not self.after_step():
                continue
            if self.now >= sc.chaos_ms:
                if self.converged():
                    if quiet_since is None:
                        quiet_since = self.now
                    elif self.now - quiet_since >= 2000:
                        self.check_final()
                        return
                else:
                    quiet_since = None
        if not self.converged():
            self.fail("the group did not converge within 40s of quiet")
        self.check_final()

    def dispatch(self, kind: str, payload: Any) -> None:
        self.dispatched = True
        if kind == "start":
            self.start(self.members[payload])
        elif kind == "tick":
            slot, incarnation = payload
            m = self.members[slot]
            if m.alive and m.incarnation == incarnation:
                self.maybe_send(m)
        elif kind == "arrive":
            self.on_request(*payload)
        elif kind == "response":
            self.on_response(*payload)
        elif kind == "timeout":
            slot, incarnation, req = payload
            m = self.members[slot]
            if m.alive and m.incarnation == incarnation and m.in_flight == req:
                m.in_flight = 0
                m.need_full = True
                self.maybe_send(m)
        elif kind == "reconciled":
            self.on_reconciled(*payload)
        elif kind == "chaos":
            self.chaos()
        elif kind == "reload":
            self.coord.reload(compacted=payload)
            self.trace.append(f"{self.now} reload compacted={payload}")
        elif kind == "restart":
            self.start(self.members[payload])
        elif kind == "commit_arrive":
            self.check_commit(*payload)
        elif kind == "commit":
            slot, incarnation = payload
            m = self.members[slot]
            if m.alive and m.incarnation == incarnation:
                if m.in_flight >= 0:  # a paused process commits nothing
                    self.commit_async(m)
                self.schedule(self.now + 700, "commit", payload)
        elif kind == "calm":
            self.net.fault_rate = 0.0
            for m in self.members:
                if not m.alive and not m.leaving:
                    self.schedule(self.now + self.rng.randint(0, 500), "restart", m.slot)

    # --- members -------------------------------------------------------------------------------

    def start(self, m: SimMember) -> None:
        if m.alive:
            return
        m.incarnation += 1
        m.alive = True
        m.leaving = False
        m.member_id = f"m{m.slot}-{m.incarnation}"
        m.epoch = 0
        m.owned = set()
        m.in_flight = 0
        m.need_full = True
        m.reconciling = False
        m.pending_target = None
        m.last_sent_owned = None
        self.trace.append(f"{self.now} start {m.member_id} instance={m.instance_id}")
        self.maybe_send(m)
        self.schedule(self.now + 700, "commit", (m.slot, m.incarnation))

    def owned_list(self, owned: set[TP]) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
        per: dict[str, list[int]] = {}
        for t, p in sorted(owned):
            per.setdefault(t, []).append(p)
        return [owned_topic(t, ps) for t, ps in per.items()]

    def maybe_send(self, m: SimMember) -> None:
        if not m.alive or m.in_flight:
            return
        full = m.need_full or m.epoch == 0
        owned = frozenset(m.owned)
        send_owned = full or owned != m.last_sent_owned
        req = cg_request(
            group_id=GROUP,
            member_id=m.member_id,
            member_epoch=m.epoch,
            instance_id=m.instance_id if full else None,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS if full else -1,
            subscribed_topic_names=(list(m.topics) if m.regex is None else []) if full else None,
            subscribed_topic_regex=m.regex if full else None,
            server_assignor=m.assignor if full else None,
            topic_partitions=([] if m.epoch == 0 else self.owned_list(m.owned)) if send_owned else None,
        )
        if m.epoch == 0:
            owned = frozenset()
        self.send(m, req, owned if send_owned else None)

    def send(self, m: SimMember, req: ConsumerGroupHeartbeatRequest, owned: frozenset[TP] | None) -> None:
        self.req_seq += 1
        seq = self.req_seq
        m.in_flight = seq
        if owned is not None:
            m.last_sent_owned = owned
        m.need_full = False
        self.schedule(self.now + REQUEST_TIMEOUT_MS, "timeout", (m.slot, m.incarnation, seq))
        if self.net.lost():
            self.trace.append(f"{self.now} {m.member_id} request lost")
            return
        self.schedule(self.arrival(m.slot), "arrive", (m.slot, m.incarnation, seq, req))

    def arrival(self, slot: int) -> int:
        """Requests from one client reach the coordinator in the order sent (TCP): a delayed
        request delays the ones behind it instead of being overtaken."""
        at = max(self.now + self.net.latency(), self.last_arrival.get(slot, 0) + 1)
        self.last_arrival[slot] = at
        return at

    def on_request(self, slot: int, incarnation: int, seq: int, req: ConsumerGroupHeartbeatRequest) -> None:
        c = self.coord
        heartbeat = shard_api.consumer_heartbeat(c.handlers, req)
        check_purity = self.steps % self.sc.check_purity_every == 0

        def op(state: shard_api.State, now: int) -> Any:
            before = state.snapshot() if check_purity else None
            result = heartbeat(state, now)
            if before is not None and state.snapshot() != before:
                self.fail("a handler mutated the state")
            return result

        c.shard.submit(op).add_done_callback(lambda f: self.answer(slot, incarnation, seq, req, f))

    def answer(self, slot: int, incarnation: int, seq: int, req: ConsumerGroupHeartbeatRequest, fut: Any) -> None:
        exc = fut.exception()
        response = shard_api.heartbeat_error(shard_api.error_code(exc)) if exc is not None else fut.result()
        self.trace.append(
            f"{self.now} hb {req.member_id} e={req.member_epoch} owned={_fmt(req.topic_partitions)} -> "
            f"err={response.error_code} e={response.member_epoch} a={_fmt_a(response)}"
        )
        if self.net.lost():
            self.trace.append(f"{self.now} response to {req.member_id} lost")
            return
        self.schedule(self.now + self.net.latency(), "response", (slot, incarnation, seq, req, response))

    def on_response(
        self,
        slot: int,
        incarnation: int,
        seq: int,
        req: ConsumerGroupHeartbeatRequest,
        resp: ConsumerGroupHeartbeatResponse,
    ) -> None:
        m = self.members[slot]
        if not m.alive or m.incarnation != incarnation or m.in_flight != seq:
            return  # a process that died, or a request it already gave up on
        m.in_flight = 0
        err = resp.error_code
        if m.leaving:
            return
        if err in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            # Abandon everything without committing (we may not own it any more), rejoin from 0.
            self.trace.append(f"{self.now} {m.member_id} fenced ({ErrorCode(err).name}), rejoins")
            m.owned = set()
            m.epoch = 0
            m.need_full = True
            m.reconciling = False
            m.pending_target = None
            self.schedule(self.now + 50, "tick", (m.slot, m.incarnation))
            return
        if err != ErrorCode.NONE:
            # UNRELEASED_INSTANCE_ID (the previous incarnation is still there) or loading: retry.
            m.need_full = True
            self.schedule(self.now + 300, "tick", (m.slot, m.incarnation))
            return
        m.epoch = resp.member_epoch
        if resp.assignment is not None:
            target = frozenset(
                (topic_id_string(tp.topic_id), p) for tp in resp.assignment.topic_partitions for p in tp.partitions
            )
            self.reconcile(m, target)
        self.schedule(self.now + self.coord.config.heartbeat_interval_ms, "tick", (m.slot, m.incarnation))

    def reconcile(self, m: SimMember, target: frozenset[TP]) -> None:
        """The Java consumer's reconciliation: revocations go through the listener callback (the
        partitions stay owned meanwhile), newly assigned partitions are taken at once. A new
        target arriving during a callback waits, and only the latest one is applied."""
        if m.reconciling:
            m.pending_target = target
            return
        if m.owned - target:
            m.reconciling = True
            delay = self.rng.choice([0, 0, 5, 40, 300])
            self.schedule(self.now + delay, "reconciled", (m.slot, m.incarnation, target))
            return
        m.owned = set(target)
        if frozenset(m.owned) != m.last_sent_owned:
            self.maybe_send(m)  # acknowledge at once

    def on_reconciled(self, slot: int, incarnation: int, target: frozenset[TP]) -> None:
        m = self.members[slot]
        if not m.alive or m.incarnation != incarnation or m.leaving:
            return
        m.reconciling = False
        revoked = m.owned - target
        self.commit(m, revoked)
        m.owned = set(target)
        if m.pending_target is not None:
            nxt, m.pending_target = m.pending_target, None
            self.reconcile(m, nxt)
            if m.reconciling:
                return
        if frozenset(m.owned) != m.last_sent_owned:
            self.maybe_send(m)  # acknowledge the revocation at once

    def commit(self, m: SimMember, partitions: set[TP] | None = None) -> None:
        """Synchronous commit (before giving partitions up): checked at once."""
        parts = sorted(partitions if partitions is not None else m.owned)
        if parts and m.epoch > 0:
            self.check_commit(m.member_id, m.epoch, parts)

    def commit_async(self, m: SimMember) -> None:
        """Auto-commit: travels the network and may land after the partitions moved on."""
        parts = sorted(m.owned)
        if parts and m.epoch > 0:
            # Not ordered with the heartbeats: a retried commit may come over a new connection
            # long after the member gave the partitions up (what KIP-1251's epochs are for).
            self.schedule(self.now + self.net.latency(), "commit_arrive", (m.member_id, m.epoch, parts))

    def check_commit(self, member_id: str, epoch: int, parts: list[TP]) -> None:
        """5. Only the current holder of a partition may commit it; zombies and stale epochs fail.
        The commit goes through the shard; the check runs on the state it was validated on."""
        c = self.coord
        names = {t.topic_id: t.name for t in c.metadata.topics.values()}
        by_name: dict[str, list[int]] = {}
        for topic_id, p in parts:
            if topic_id in names:  # a partition of a deleted topic incarnation cannot be named
                by_name.setdefault(names[topic_id], []).append(p)
        if not by_name:
            return
        request = OffsetCommitRequest(
            group_id=GROUP,
            generation_id_or_member_epoch=epoch,
            member_id=member_id,
            topics=[
                commit_topic(n, [commit_partition(p, self.now) for p in ps], c.metadata.topic_id(n))
                for n, ps in sorted(by_name.items())
            ],
        )
        commit = shard_api.commit_offsets(c.handlers, request)

        def op(state: shard_api.State, now: int) -> Any:
            result = commit(state, now)
            accepted = [
                (c.metadata.topic_id(t.name) or "", p.partition_index)
                for t in result.response.topics
                for p in t.partitions
                if p.error_code == ErrorCode.NONE
            ]
            invariants.invariant_5_only_the_holder_commits(state, GROUP, member_id, epoch, accepted, self.fail)
            return result

        c.shard.submit(op).add_done_callback(lambda f: self.count_commit(request, f))

    def count_commit(self, request: OffsetCommitRequest, fut: Any) -> None:
        exc = fut.exception()
        response: OffsetCommitResponse = (
            shard_api.commit_error(request, shard_api.error_code(exc)) if exc is not None else fut.result()
        )
        for t in response.topics:
            for p in t.partitions:
                if p.error_code == ErrorCode.NONE:
                    self.committed += 1
                else:
                    self.rejected += 1

    # --- faults ---------------------------------------------------------------------------------

    def chaos(self) -> None:
        rng = self.rng
        roll = rng.random()
        alive = [m for m in self.members if m.alive and not m.leaving]
        if roll < 0.25 and alive:
            m = rng.choice(alive)
            self.trace.append(f"{self.now} crash {m.member_id}")
            m.alive = False
            m.owned = set()
            if rng.random() < 0.7:
                self.schedule(self.now + rng.randint(100, 5000), "restart", m.slot)
        elif roll < 0.45 and alive:
            m = rng.choice(alive)
            static_leave = m.instance_id is not None
            self.trace.append(f"{self.now} {'bounce' if static_leave else 'leave'} {m.member_id}")
            # The consumer commits and gives up its partitions before the leave heartbeat.
            self.commit(m)
            m.owned = set()
            m.leaving = True
            req = cg_request(GROUP, m.member_id, -2 if static_leave else -1, instance_id=m.instance_id)
            self.req_seq += 1
            if not self.net.lost():
                self.schedule(self.arrival(m.slot), "arrive", (m.slot, m.incarnation, self.req_seq, req))
            m.alive = False
            if static_leave or rng.random() < 0.5:
                self.schedule(self.now + rng.randint(50, 2000), "restart", m.slot)
        elif roll < 0.6:
            self.change_metadata()
        elif roll < 0.75 and alive:
            # A long GC pause: the member stops heartbeating but keeps its partitions.
            m = rng.choice(alive)
            pause = rng.randint(500, 4500)
            self.trace.append(f"{self.now} pause {m.member_id} {pause}ms")
            m.in_flight = -1
            self.schedule(self.now + pause, "timeout", (m.slot, m.incarnation, -1))
        # else: nothing this time

    def change_metadata(self) -> None:
        rng = self.rng
        img = self.coord.metadata
        topics = dict(img.topics)
        names = sorted(topics)
        roll = rng.random()
        if roll < 0.6:
            name = rng.choice(names)
            t = topics[name]
            topics[name] = TopicImage(name, t.topic_id, t.partitions + rng.randint(1, 3))
            self.trace.append(f"{self.now} partitions added to {name}")
        elif roll < 0.8:
            name = f"topic-{len(names)}"
            self.topic_gen[name] = 0
            topics[name] = TopicImage(name, tid(f"{name}#0"), rng.randint(1, 4))
            self.trace.append(f"{self.now} topic {name} created")
        else:
            name = rng.choice(names)
            self.topic_gen[name] += 1
            topics[name] = TopicImage(name, tid(f"{name}#{self.topic_gen[name]}"), rng.randint(1, 6))
            self.trace.append(f"{self.now} topic {name} deleted and re-created")
        self.topic_version += 1
        self.coord.metadata = TopicsImage(topics, self.topic_version)

    # --- invariants -----------------------------------------------------------------------------

    def after_step(self) -> bool:
        """Check the invariants if the step could have changed what they look at (a client event,
        or records read back into the committed state); False if it could not."""
        self.steps += 1
        shard = self.coord.shard
        if not self.dispatched and shard.committed_offset == self.checked_offset:
            return False
        self.dispatched = False
        if not self.coord.active:
            return True
        # 3. Only a step that read records back can change the committed state, so checking
        # after those is checking after every step.
        group = self.coord.state.group(GROUP)
        if shard.committed_offset != self.checked_offset:
            self.checked_offset = shard.committed_offset
            if self.steps % self.sc.replay_check_every == 0:
                # The group part after each step, as before commits were written; the whole
                # state (offsets too) at the end, and against a fresh load of the log.
                invariants.invariant_3_replay_matches(
                    shard, self.coord.log, self.fail, full=False, view=lambda s: s.consumer.snapshot()
                )
            self.holders = {} if group is None else self.check_coordinator_view(group)
        if group is None:
            return True
        # 1. Consumer view: a live member the group still knows owns only what the coordinator
        #    says it holds, so no two of them consume the same partition.
        holders = self.holders
        owner_of: dict[TP, str] = {}
        for m in self.members:
            if not m.alive or not m.owned:
                continue
            if m.member_id not in group.members:
                continue  # a zombie: fenced, its commits are refused (checked in commit())
            for tp in m.owned:
                if holders.get(tp) != m.member_id:
                    self.fail(f"{m.member_id} consumes {tp} which the coordinator gives to {holders.get(tp)}")
                if tp in owner_of:
                    self.fail(f"{tp} consumed by {owner_of[tp]} and {m.member_id}")
                owner_of[tp] = m.member_id
        return True

    def check_coordinator_view(self, group: Any) -> dict[TP, str]:
        """Invariants 2 and 1 on the committed state (it changes only when records are read back)."""
        # 2. Epochs never go backwards: group >= assignment >= member, all monotonic.
        if group.group_epoch < self.last_group_epoch or group.assignment_epoch < self.last_assignment_epoch:
            self.fail("group or assignment epoch went backwards")
        self.last_group_epoch = group.group_epoch
        self.last_assignment_epoch = group.assignment_epoch
        if group.assignment_epoch > group.group_epoch:
            self.fail(f"assignment epoch {group.assignment_epoch} > group epoch {group.group_epoch}")
        # 1. Coordinator view: no partition held by two members.
        holders: dict[TP, str] = {}
        for mid, cm in group.members.items():
            if cm.member_epoch > group.assignment_epoch:
                self.fail(f"member {mid} epoch {cm.member_epoch} > assignment epoch {group.assignment_epoch}")
            seen = self.max_epoch_seen.get(mid)
            if cm.member_epoch >= 0:
                if seen is not None and cm.member_epoch < seen:
                    self.fail(f"member {mid} epoch went back from {seen} to {cm.member_epoch}")
                self.max_epoch_seen[mid] = cm.member_epoch
            for epochs in (cm.assigned, cm.pending_revocation):
                for t, ps in epochs.items():
                    for p in ps:
                        other = holders.get((t, p))
                        if other is not None and other != mid:
                            self.fail(f"partition {(t, p)} held by {other} and {mid} in the coordinator")
                        holders[(t, p)] = mid
        return holders

    def converged(self) -> bool:
        group = self.coord.state.group(GROUP)
        live = [m for m in self.members if m.alive]
        if group is None:
            return not live
        if group.state().value not in ("Stable", "Empty") or set(group.members) != {m.member_id for m in live}:
            return False
        for m in live:
            if m.reconciling or m.in_flight < 0:
                return False
            held = {(t, p) for t, ps in group.members[m.member_id].assigned.items() for p in ps}
            if m.owned != held:
                return False
        return True

    def check_final(self) -> None:
        """6. Quiet group: every subscribed partition is consumed by exactly one live subscriber."""
        img = self.coord.metadata
        live = [m for m in self.members if m.alive]
        consumed: dict[TP, str] = {}
        for m in live:
            for tp in m.owned:
                if tp in consumed:
                    self.fail(f"{tp} consumed twice at the end")
                consumed[tp] = m.member_id
        wanted: set[TP] = set()
        for m in live:
            names = set(m.topics) if m.regex is None else {n for n in img.topics if n.startswith("topic-")}
            for name in names:
                t = img.topic(name)
                if t is not None:
                    wanted.update((t.topic_id, p) for p in range(t.partitions))
        if set(consumed) != wanted:
            missing = sorted(wanted - set(consumed))[:5]
            extra = sorted(set(consumed) - wanted)[:5]
            self.fail(f"quiet group does not cover its partitions: missing {missing} extra {extra}")
        # 3. A new owner loading the full log, and the compacted log, gets the same state.
        shard = self.coord.shard
        for _ in range(10_000):  # let writes in flight be read back (a few ms of simulated time)
            if shard.caught_up and shard.committed_offset >= self.coord.log.end.get(0, 0):
                break
            self.loop.step()
        else:
            self.fail("the shard never caught up with the log")
        invariants.invariant_3_replay_matches(shard, self.coord.log, self.fail, full=True)
        self.coord.log.compact(0, keep_head=0)
        invariants.invariant_3_replay_matches(shard, self.coord.log, self.fail, full=True)


def _fmt_epochs(epochs: Any) -> str:
    return ",".join(f"{t}:{sorted(ps)}" for t, ps in sorted(epochs.items()) if ps) or "[]"


def _fmt(tps: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None) -> str:
    if tps is None:
        return "-"
    return ",".join(f"{topic_id_string(t.topic_id)}:{t.partitions}" for t in tps if t.partitions) or "[]"


def _fmt_a(resp: ConsumerGroupHeartbeatResponse) -> str:
    return "-" if resp.assignment is None else _fmt(resp.assignment.topic_partitions)


def run_seed(seed: int, **kwargs: Any) -> Simulation:
    sim = Simulation(Scenario.random(seed, **kwargs))
    sim.run()
    return sim


def run_many(seeds: range, on_each: Callable[[Simulation], None] | None = None, **kwargs: Any) -> int:
    """Run every seed; raise on the first violation with the seed in the message."""
    steps = 0
    for seed in seeds:
        sim = run_seed(seed, **kwargs)
        steps += sim.steps
        if on_each is not None:
            on_each(sim)
    return steps
