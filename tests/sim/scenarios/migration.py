"""Workload: one group rolled classic -> consumer -> classic, member by member, on the real shard.

Classic processes are ``ClassicClient`` models (all eager with the range assignor, or all
cooperative with a sticky cooperative assignor, per scenario) and never know whether a classic
group or a consumer group answers them; consumer processes are ``ConsumerClient`` models
(KIP-848, KIP-1082 client-generated ids). Requests go through the production composition with
the migration policy production uses by default (``bidirectional``): a classic group is upgraded
when a consumer-protocol member joins it, classic members live inside the consumer group, and
the group is downgraded when the last consumer-protocol member leaves.

The roll: a stable classic group of N processes; one by one a classic process stops (LeaveGroup
or a crash) and a consumer process starts, until all speak the consumer protocol; then one by
one back. Random crashes (a dead process owns nothing; its session expires) and coordinator
reloads (state rebuilt from the log, parked requests fail with NOT_COORDINATOR) are mixed in.

After every step and every client action: no partition is owned by two live processes; the
group epoch (generation for a classic group) never goes back while the group has members, and
group epoch >= assignment epoch >= every member epoch; the live state equals the replay of the
log. Halfway through each roll and at the end, without faults, the group settles with every
partition owned by exactly one live process.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import ClassicGroupState
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer import ConsumerGroupState
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.shard import ShardStatus
from tests.messages import tid
from tests.sim import invariants, shard_api
from tests.sim.clients import TP, ClassicClient, ConsumerClient
from tests.sim.kernel import InvariantViolation, SimHost, SimLog, sim_loop

GROUP = "mig"
STEP_MS = 250
HEARTBEAT_MS = 1_000
SESSION_MS = 6_000
REBALANCE_MS = 8_000


@dataclass
class Scenario:
    seed: int
    cooperative: bool
    members: int
    topics: dict[str, int]
    crash_rate: float
    reload_rate: float
    graceful_share: float
    retention_check_ms: int | None = None  # the retention sweep's interval (None: Kafka's 10 minutes)

    @classmethod
    def random(cls, seed: int) -> Scenario:
        rng = random.Random(seed)
        return cls(
            seed=seed,
            cooperative=rng.random() < 0.5,
            members=rng.randint(1, 5),
            topics={f"t{i}": rng.randint(1, 7) for i in range(rng.randint(1, 2))},
            crash_rate=rng.choice([0.0, 0.002, 0.01]),
            reload_rate=rng.choice([0.0, 0.003, 0.01]),
            graceful_share=rng.choice([1.0, 0.7, 0.3]),
            retention_check_ms=rng.choice(shard_api.SWEEPS),
        )


@dataclass
class Process:
    """One client process and what the simulation drives it with."""

    name: str
    client: ClassicClient | ConsumerClient
    pending: bool = False  # a request is on its way; the client waits for its answer
    todo: str | None = None  # classic: "join" or "sync" to send next
    next_beat: int = 0

    @property
    def protocol(self) -> str:
        return "consumer" if isinstance(self.client, ConsumerClient) else "classic"

    @property
    def alive(self) -> bool:
        return self.client.alive


class Simulation:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 31 + 7)
        self.image = TopicsImage.of([TopicImage(t, tid(t), n) for t, n in sorted(sc.topics.items())], 1)
        self.names = {tid(t): t for t in sc.topics}
        self.handlers = shard_api.handlers(
            lambda: self.image,
            ConsumerGroupConfig(
                session_timeout_ms=SESSION_MS,
                min_session_timeout_ms=1_000,
                heartbeat_interval_ms=HEARTBEAT_MS,
                min_heartbeat_interval_ms=500,
                assignment_interval_ms=0,
                migration_policy="bidirectional",  # production's default path
            ),
            retention_check_ms=sc.retention_check_ms,
        )
        self.loop = sim_loop()
        self.log = SimLog()
        self.host = SimHost(self.log, self.loop, "sim", random.Random(sc.seed))
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()
        self.procs: list[Process] = []
        self.name_seq = 0
        self.tokens = 0
        self.last_epoch: int | None = None
        self.last_kind: str | None = None
        self.steps = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.advance(0)

    # --- plumbing -------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    @property
    def state(self) -> shard_api.State:
        """The state the handlers see (it includes a classic rebalance in progress)."""
        return self.shard.live

    def advance(self, ms: int) -> None:
        end = self.now + ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()
        self.loop.clock.advance(end - self.now)

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now} {line}")

    def call(self, p: Process, kind: str, op: shard_api.Op, on_answer: Any) -> None:
        p.pending = True

        def answered(response: Any) -> None:
            p.pending = False
            self.stats[f"{kind}:{ErrorCode(response.error_code).name}"] += 1
            if p.alive:
                on_answer(p, response)

        shard_api.call(self.shard, op, shard_api.ERROR_RESPONSES[kind], answered)

    def token(self, p: Process, kind: str) -> Hashable:
        self.tokens += 1
        return (kind, p.name, self.tokens)

    # --- processes ------------------------------------------------------------------------------
    def start(self, protocol: str) -> Process:
        self.name_seq += 1
        name = f"{protocol[:2]}{self.name_seq}"
        if protocol == "consumer":
            c = ConsumerClient(self.name_seq, GROUP, sorted(self.sc.topics), rebalance_timeout_ms=REBALANCE_MS)
            c.start()
            p = Process(name, c)
        else:
            assignors = ("cooperative-sticky",) if self.sc.cooperative else ("range",)
            client = ClassicClient(
                name, GROUP, self.sc.topics, assignors, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS
            )
            p = Process(name, client, todo="join")
        self.procs.append(p)
        self.note(f"start {name}")
        return p

    def live(self) -> list[Process]:
        return [p for p in self.procs if p.alive]

    def owned(self, p: Process) -> set[TP]:
        """What a process owns, by topic name (consumer clients know topic ids)."""
        if isinstance(p.client, ConsumerClient):
            return {(self.names[t], n) for t, n in p.client.owned}
        return p.client.owned

    def stop(self, p: Process, graceful: bool) -> None:
        self.note(f"stop {p.name} graceful={graceful}")
        c = p.client
        if isinstance(c, ConsumerClient):
            if graceful and c.epoch > 0:
                op = shard_api.consumer_heartbeat_as(self.handlers, c.leave(), p.name, "/h")
                self.call(p, "cghb", op, lambda *_: None)
            c.crash()
        else:
            request = c.leave() if graceful else None
            if request is not None:
                self.call(p, "leave", shard_api.leave_group(self.handlers, request), lambda *_: None)
            c.crash()

    def stopped(self, p: Process, action: str) -> None:
        """A fatal error: the application stops; its supervisor starts a new process."""
        error = p.client.error
        self.note(f"{p.name} stopped on {error.name}")
        if action == "unexpected":
            self.fail(f"{p.name} got {error.name}, which the Java consumer does not expect")
        self.stats[f"fatal:{error.name}"] += 1
        self.start(p.protocol)

    # classic processes

    def act_classic(self, p: Process, c: ClassicClient) -> None:
        if p.todo == "join":
            p.todo = None
            token = self.token(p, "join")
            self.call(
                p,
                "join",
                shard_api.join_group(self.handlers, c.join(token), token, c.api_version, c.name),
                self.on_join,
            )
        elif p.todo == "sync":
            p.todo = None
            token = self.token(p, "sync")
            self.call(p, "sync", shard_api.sync_group(self.handlers, c.sync(token), token), self.on_sync)
        elif c.status == "stable" and self.now >= p.next_beat:
            p.next_beat = self.now + HEARTBEAT_MS
            request = c.heartbeat()
            self.call(
                p,
                "hb",
                shard_api.heartbeat(self.handlers, request),
                lambda p, r: self.react(p, c.on_heartbeat(request, r)),
            )

    def on_join(self, p: Process, resp: JoinGroupResponse) -> None:
        assert isinstance(p.client, ClassicClient)
        self.react(p, p.client.on_join(resp))

    def on_sync(self, p: Process, resp: SyncGroupResponse) -> None:
        assert isinstance(p.client, ClassicClient)
        self.react(p, p.client.on_sync(resp))
        if resp.error_code == ErrorCode.NONE:
            p.next_beat = self.now + HEARTBEAT_MS

    def react(self, p: Process, action: str) -> None:
        if action in ("join", "backoff"):
            p.todo = "join"
        elif action == "sync":
            p.todo = "sync"
        elif action in ("fatal", "unexpected"):
            self.stopped(p, action)

    # consumer processes

    def act_consumer(self, p: Process, c: ConsumerClient) -> None:
        if self.now < p.next_beat:
            return
        p.next_beat = self.now + HEARTBEAT_MS
        op = shard_api.consumer_heartbeat_as(self.handlers, c.heartbeat(), p.name, "/h")
        self.call(p, "cghb", op, self.on_beat)

    def on_beat(self, p: Process, resp: ConsumerGroupHeartbeatResponse) -> None:
        c = p.client
        assert isinstance(c, ConsumerClient)
        before = c.epoch
        action = c.on_response(resp)
        if resp.error_code == ErrorCode.NONE:
            invariants.invariant_2_client_epoch(p.name, before, c.epoch, self.fail)
        if action == "fenced":
            p.next_beat = self.now  # rejoin from epoch 0 at once
        elif action == "fatal":
            self.stopped(p, action)
        elif action == "ack":
            p.next_beat = self.now  # acknowledge promptly, like the real client
        elif action == "revoke":
            self.loop.at(self.now + self.rng.choice([0, 5, 40, 300]), self.revoked, p, c.incarnation)

    def revoked(self, p: Process, incarnation: int) -> None:
        c = p.client
        assert isinstance(c, ConsumerClient)
        if c.alive and c.incarnation == incarnation and c.reconciling:
            if c.revoked() == "revoke":
                self.loop.at(self.now + self.rng.choice([0, 5, 40, 300]), self.revoked, p, incarnation)
            p.next_beat = self.now  # acknowledge what was given up

    def act(self, p: Process) -> None:
        if not p.alive or p.pending:
            return
        if isinstance(p.client, ConsumerClient):
            self.act_consumer(p, p.client)
        else:
            self.act_classic(p, p.client)

    # --- invariants -----------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-30:])
        raise InvariantViolation(f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{tail}")

    def check(self) -> None:
        self.steps += 1
        invariants.invariant_shard_life(self.host.transitions, self.fail)
        invariants.invariant_1_no_partition_owned_twice(((p.name, self.owned(p)) for p in self.live()), self.fail)
        shard = self.shard
        if shard.status is ShardStatus.ACTIVE and shard.caught_up and not shard.replay_matches():
            self.fail("3. replayed log differs from the live state")
        kind = self.state.group_type(GROUP)
        epoch: int | None = None
        members = 0
        if kind == "consumer":
            g = self.state.consumer.group(GROUP)
            assert g is not None
            epoch, members = g.group_epoch, len(g.members)
            invariants.invariant_2_epochs(self.state, GROUP, {}, self.fail)
            if any(m.uses_classic_protocol for m in g.members.values()) and any(
                not m.uses_classic_protocol for m in g.members.values()
            ):
                self.stats["mixed-steps"] += 1
        elif kind == "classic":
            # A rebalance in progress is soft state (a reload goes back to the last record, as in
            # Kafka): the generation that must never go back is the persisted one.
            record = self.state.classic.records.get(GROUP)
            if record is not None:
                epoch, members = record.generation, len(record.members)
        if kind != self.last_kind and members and self.last_kind is not None:
            self.stats["upgrade" if kind == "consumer" else "downgrade"] += 1
        invariants.invariant_2_generation(f"{GROUP} ({kind})", self.last_epoch, epoch, self.fail)
        # An empty group may be replaced by a fresh one of the other type (epochs start over).
        self.last_kind = kind if members else None
        self.last_epoch = epoch if members else None

    # --- the run --------------------------------------------------------------------------------
    def step(self) -> None:
        self.advance(STEP_MS)
        self.check()
        order = self.live()
        self.rng.shuffle(order)
        for p in order:
            self.act(p)
            self.check()
        if self.sc.crash_rate and self.rng.random() < self.sc.crash_rate * len(self.live()):
            victims = self.live()
            if victims:
                victim = self.rng.choice(victims)
                self.stop(victim, graceful=False)
                self.start(victim.protocol)  # the process is restarted, same protocol
                self.stats["crash"] += 1
        if self.sc.reload_rate and self.rng.random() < self.sc.reload_rate:
            self.stats["reload"] += 1
            self.shard.reload("simulated coordinator reload")
            self.check()

    def settle(self, ms: int) -> None:
        end = self.now + ms
        while self.now < end:
            self.step()

    def roll(self, from_protocol: str, to_protocol: str) -> None:
        for i in range(self.sc.members):
            if i == self.sc.members // 2 and i > 0:
                self.quiet_check()
            candidates = [p for p in self.live() if p.protocol == from_protocol]
            if not candidates:
                break
            victim = self.rng.choice(candidates)
            self.stop(victim, graceful=self.rng.random() < self.sc.graceful_share)
            self.settle(self.rng.choice([0, STEP_MS, 2_000]))
            self.start(to_protocol)
            self.settle(self.rng.randint(1_000, 8_000))

    def run(self) -> Simulation:
        for _ in range(self.sc.members):
            self.start("classic")
        self.settle(10_000)
        self.roll("classic", "consumer")
        self.settle(5_000)
        self.roll("consumer", "classic")
        # Quiet end: no more faults; everyone settles.
        self.sc.crash_rate = 0.0
        self.sc.reload_rate = 0.0
        self.settle(40_000)
        self.check_final()
        return self

    def quiet_check(self) -> None:
        """Halfway through a roll (classic and consumer members together): without faults the
        group settles, every partition owned once and every member reconciled."""
        crash, reload = self.sc.crash_rate, self.sc.reload_rate
        self.sc.crash_rate = self.sc.reload_rate = 0.0
        self.settle(40_000)
        self.check_final()
        kind = self.state.group_type(GROUP)
        if kind == "consumer":
            g = self.state.consumer.group(GROUP)
            assert g is not None
            if g.state() is not ConsumerGroupState.STABLE:
                self.fail(f"6. quiet consumer group is {g.state().value}")
            if {p.protocol for p in self.live()} == {"classic", "consumer"}:
                self.stats["quiet-mixed"] += 1
        elif kind == "classic":
            group = self.state.classic.group(GROUP)
            assert group is not None
            if group.state is not ClassicGroupState.STABLE:
                self.fail(f"6. quiet classic group is {group.state.value}")
        self.sc.crash_rate, self.sc.reload_rate = crash, reload

    def check_final(self) -> None:
        every = {(t, p) for t, n in self.sc.topics.items() for p in range(n)}
        invariants.invariant_6_owned_exactly_once([(p.name, self.owned(p)) for p in self.live()], every, self.fail)
        self.stats[f"end:{self.state.group_type(GROUP)}"] += 1


def run_seed(seed: int) -> Simulation:
    return Simulation(Scenario.random(seed)).run()
