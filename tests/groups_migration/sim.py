"""A seeded simulation of one group rolled classic -> consumer -> classic, member by member.

Clients are modelled like the Java consumer. Classic clients (all eager with the range assignor,
or all cooperative with a sticky cooperative assignor, per scenario; the assignors and the
assignment codec come from the classic simulation) speak JoinGroup/SyncGroup/Heartbeat/
LeaveGroup and never know whether a classic group or a consumer group answers them.
Consumer clients speak ConsumerGroupHeartbeat (KIP-1082 client-generated ids) and take exactly
the assignment they are given (the coordinator only gives what is free).

The roll: a stable classic group of N clients; one by one a classic client stops (LeaveGroup or
a crash) and a consumer client starts, until all speak the consumer protocol; then one by one
back. Random crashes (a dead process owns nothing; its session expires) and coordinator reloads
(state rebuilt from the log, parked requests fail with NOT_COORDINATOR, timers re-armed) are
mixed in.

After every step: no partition is owned by two live clients; the group epoch (generation for a
classic group) never goes backwards while the group has members, and group epoch >= assignment
epoch >= every member epoch; a follower replaying the decoded log equals the live state. At the
quiet end every partition is owned by exactly one live client.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.groups.classic import ClassicGroupState
from coordinator.groups.classic.consumer_protocol import (
    Subscription,
    TopicPartitions,
    decode_subscription,
    encode_subscription,
)
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.consumer import (
    ConsumerGroupState,
)
from coordinator.groups.topics import TopicImage, TopicsImage
from coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from coordinator.messages.heartbeat import HeartbeatResponse
from coordinator.messages.join_group import JoinGroupResponse, JoinGroupResponseMember
from coordinator.messages.schema import topic_id_string
from coordinator.messages.sync_group import SyncGroupResponse
from coordinator.runtime.shard import ShardStatus
from tests.messages import (
    cg_request,
    heartbeat_request,
    join_protocol,
    join_request,
    leave_request,
    member_identity,
    owned_topic,
    sync_request,
    tid,
)
from tests.sim import shard_api
from tests.sim.clients import TP, cooperative_sticky_assign, from_assignment_bytes, range_assign, to_assignment_bytes
from tests.sim.kernel import InvariantViolation, SimHost, SimLog, SimLoop

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
        )


@dataclass
class Client:
    name: str
    protocol: str  # "classic" | "consumer"
    member_id: str = ""
    epoch: int = -1  # classic generation, or consumer member epoch
    owned: set[TP] = field(default_factory=set)
    status: str = "new"  # new | joining | syncing | stable | dead
    next_beat: int = 0
    wants_join: bool = False
    wants_sync: dict[str, bytes] | None = None
    ack: bool = False
    pending: bool = False  # a request is on its way; the client waits for its answer


class Simulation:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 31 + 7)
        self.image = TopicsImage.of([TopicImage(t, tid(t), n) for t, n in sorted(sc.topics.items())], 1)
        self.ids = {tid(t): t for t in sc.topics}
        self.handlers = shard_api.handlers(
            lambda: self.image,
            ConsumerGroupConfig(
                session_timeout_ms=SESSION_MS,
                min_session_timeout_ms=1_000,
                heartbeat_interval_ms=HEARTBEAT_MS,
                min_heartbeat_interval_ms=500,
                assignment_interval_ms=0,
            ),
        )
        # The real shard over a simulated log: answers (parked ones too) are released once their
        # records are read back, timers run through the shard, a reload rebuilds from the log.
        self.loop = SimLoop()
        self.log = SimLog()
        self.host = SimHost(self.log, self.loop, "sim", random.Random(sc.seed))
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()
        self.tokens = itertools.count()
        self.clients: list[Client] = []
        self.name_seq = 0
        self.last_epoch: int | None = None
        self.last_kind: str | None = None
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.advance(0)

    # --- coordinator plumbing -------------------------------------------------------------------

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

    def call(self, c: Client, kind: str, op: shard_api.Op, on_answer: Callable[[Client, Any], None]) -> None:
        c.pending = True

        def answered(fut: Any) -> None:
            c.pending = False
            if c.status == "dead":
                return
            exc = fut.exception()
            on_answer(c, shard_api.ERROR_RESPONSES[kind](shard_api.error_code(exc)) if exc else fut.result())

        self.shard.submit(op).add_done_callback(answered)

    def reload(self) -> None:
        """A new coordinator loads the log; waiting requests fail and clients retry."""
        self.stats["reload"] += 1
        self.shard.reload("simulated coordinator reload")

    # --- clients --------------------------------------------------------------------------------

    def start(self, protocol: str) -> Client:
        self.name_seq += 1
        c = Client(f"{protocol[:2]}{self.name_seq}", protocol)
        if protocol == "consumer":
            c.member_id = f"m-{c.name}"
            c.epoch = 0
        c.wants_join = True
        self.clients.append(c)
        self.trace.append(f"{self.now} start {c.name}")
        return c

    def live(self) -> list[Client]:
        return [c for c in self.clients if c.status != "dead"]

    def lose(self, c: Client) -> None:
        c.owned = set()

    def classic_assignors(self) -> tuple[str, ...]:
        return ("cooperative-sticky",) if self.sc.cooperative else ("range",)

    def subscription(self, c: Client) -> bytes:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(c.owned):
            by_topic.setdefault(t, []).append(p)
        return encode_subscription(
            Subscription(
                tuple(sorted(self.sc.topics)),
                None,
                tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items()),
                c.epoch,
            )
        )

    # classic client

    def send_join(self, c: Client) -> None:
        c.wants_join = False
        if not self.sc.cooperative:
            c.owned = set()  # eager: revoke everything before rejoining
        c.status = "joining"
        token = ("join", c.name, next(self.tokens))
        request = join_request(
            GROUP,
            SESSION_MS,
            member_id=c.member_id,
            protocol_type="consumer",
            protocols=[join_protocol(a, self.subscription(c)) for a in self.classic_assignors()],
            rebalance_timeout_ms=REBALANCE_MS,
        )
        self.call(c, "join", shard_api.join_group(self.handlers, request, token, 9, c.name), self.on_join)

    def on_join(self, c: Client, r: JoinGroupResponse) -> None:
        error = ErrorCode(r.error_code)
        self.stats[f"join:{error.name}"] += 1
        if error is ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = r.member_id
            c.wants_join = True
        elif error is ErrorCode.NONE:
            c.epoch = r.generation_id
            c.member_id = r.member_id
            c.status = "syncing"
            assignments: dict[str, bytes] = {}
            if r.leader == c.member_id and r.members:
                assignments = self.leader_assign(r.members)
            c.wants_sync = assignments
        else:
            if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                c.member_id = ""
                self.lose(c)
                c.epoch = -1
            elif error is ErrorCode.ILLEGAL_GENERATION:
                # As the Java consumer (and the classic simulation's client): the generation is
                # reset and the partitions are lost before the rejoin.
                self.lose(c)
                c.epoch = -1
            c.wants_join = True

    def leader_assign(self, members: list[JoinGroupResponseMember]) -> dict[str, bytes]:
        if self.sc.cooperative:
            subs = {m.member_id: decode_subscription(m.metadata) for m in members}
            plan = cooperative_sticky_assign(subs, self.sc.topics)
        else:
            plan = range_assign([m.member_id for m in members], self.sc.topics)
        return {mid: to_assignment_bytes(tps) for mid, tps in plan.items()}

    def send_sync(self, c: Client) -> None:
        assignments = c.wants_sync or {}
        c.wants_sync = None
        token = ("sync", c.name, next(self.tokens))
        request = sync_request(
            GROUP,
            c.epoch,
            c.member_id,
            protocol_type="consumer",
            protocol_name=self.classic_assignors()[0],
            assignments=dict(sorted(assignments.items())),
        )
        self.call(c, "sync", shard_api.sync_group(self.handlers, request, token), self.on_sync)

    def on_sync(self, c: Client, r: SyncGroupResponse) -> None:
        error = ErrorCode(r.error_code)
        self.stats[f"sync:{error.name}"] += 1
        if error is ErrorCode.NONE:
            assigned = from_assignment_bytes(r.assignment)
            revoked = c.owned - assigned
            c.owned = set(assigned)
            c.status = "stable"
            c.next_beat = self.now + HEARTBEAT_MS
            if self.sc.cooperative and revoked:
                c.wants_join = True  # KIP-429: rejoin after revoking
            return
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id = ""
            self.lose(c)
            c.epoch = -1
        elif error is ErrorCode.ILLEGAL_GENERATION:
            self.lose(c)
            c.epoch = -1
        c.wants_join = True

    def classic_beat(self, c: Client) -> None:
        c.next_beat = self.now + HEARTBEAT_MS
        request = heartbeat_request(GROUP, c.epoch, c.member_id)
        self.call(c, "hb", shard_api.heartbeat(self.handlers, request), self.on_classic_beat)

    def on_classic_beat(self, c: Client, response: HeartbeatResponse) -> None:
        error = ErrorCode(response.error_code)
        self.stats[f"hb:{error.name}"] += 1
        if error is ErrorCode.NONE:
            return
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id = ""
            self.lose(c)
            c.epoch = -1
        elif error is ErrorCode.ILLEGAL_GENERATION:
            self.lose(c)
            c.epoch = -1
        c.wants_join = True
        c.status = "joining"

    def classic_leave(self, c: Client) -> None:
        c.owned = set()
        if c.member_id:
            request = leave_request(GROUP, members=[member_identity(c.member_id)])
            self.call(c, "leave", shard_api.leave_group(self.handlers, request), lambda c, r: None)

    # consumer client

    def owned_list(self, c: Client) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
        by_id: dict[str, list[int]] = {}
        for t, p in sorted(c.owned):
            by_id.setdefault(tid(t), []).append(p)
        return [owned_topic(t, ps) for t, ps in sorted(by_id.items())]

    def consumer_beat(self, c: Client) -> None:
        c.next_beat = self.now + HEARTBEAT_MS
        joining = c.epoch == 0
        request = cg_request(
            GROUP,
            c.member_id,
            c.epoch,
            rebalance_timeout_ms=REBALANCE_MS if joining else -1,
            subscribed_topic_names=sorted(self.sc.topics) if joining else None,
            topic_partitions=[] if joining else self.owned_list(c),
        )
        self.call(c, "cghb", shard_api.consumer_heartbeat_as(self.handlers, request, c.name, "/h"), self.on_beat)

    def on_beat(self, c: Client, r: ConsumerGroupHeartbeatResponse) -> None:
        error = ErrorCode(r.error_code)
        self.stats[f"cghb:{error.name}"] += 1
        if error is ErrorCode.NONE:
            if r.member_epoch < c.epoch:
                self.fail(f"{c.name} epoch went back {c.epoch} -> {r.member_epoch}")
            c.epoch = r.member_epoch
            c.status = "stable"
            if r.assignment is not None:
                c.owned = {
                    (self.ids[topic_id_string(tp.topic_id)], p)
                    for tp in r.assignment.topic_partitions
                    for p in tp.partitions
                }
                c.next_beat = self.now  # acknowledge promptly, like the real client
            return
        if error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND):
            self.lose(c)
            c.epoch = 0
        # COORDINATOR_LOAD_IN_PROGRESS and other retriable errors: just retry later.

    def consumer_leave(self, c: Client) -> None:
        c.owned = set()
        if c.epoch > 0:
            request = cg_request(GROUP, c.member_id, -1)
            self.call(
                c, "cghb", shard_api.consumer_heartbeat_as(self.handlers, request, c.name, "/h"), lambda c, r: None
            )

    def stop(self, c: Client, graceful: bool) -> None:
        self.trace.append(f"{self.now} stop {c.name} graceful={graceful}")
        if graceful:
            if c.protocol == "classic":
                self.classic_leave(c)
            else:
                self.consumer_leave(c)
        c.owned = set()
        c.status = "dead"

    def act(self, c: Client) -> None:
        if c.status == "dead" or c.pending:
            return
        if c.protocol == "consumer":
            if self.now >= c.next_beat:
                self.consumer_beat(c)
            return
        if c.wants_join:
            self.send_join(c)
        elif c.wants_sync is not None:
            self.send_sync(c)
        elif c.status == "stable" and self.now >= c.next_beat and c.member_id and c.epoch >= 0:
            self.classic_beat(c)

    # --- invariants -----------------------------------------------------------------------------

    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-30:])
        raise InvariantViolation(f"seed {self.sc.seed} at {self.now}: {message}\n{tail}")

    def check(self) -> None:
        seen: dict[TP, str] = {}
        for c in self.live():
            for tp in c.owned:
                if tp in seen:
                    self.fail(f"{tp} owned by {seen[tp]} and {c.name}")
                seen[tp] = c.name
        shard = self.shard
        if shard.status is ShardStatus.ACTIVE and shard.caught_up and not shard.replay_matches():
            self.fail("replayed log differs from the live state")
        kind = self.state.group_type(GROUP)
        epoch: int | None = None
        members = 0
        if kind == "consumer":
            g = self.state.consumer.group(GROUP)
            assert g is not None
            epoch, members = g.group_epoch, len(g.members)
            if g.assignment_epoch > g.group_epoch:
                self.fail(f"assignment epoch {g.assignment_epoch} > group epoch {g.group_epoch}")
            for m in g.members.values():
                if m.member_epoch > g.assignment_epoch:
                    self.fail(f"member {m.member_id} epoch {m.member_epoch} > assignment epoch")
        elif kind == "classic":
            # A rebalance in progress is soft state (a reload goes back to the last record, as in
            # Kafka): the generation that must never go back is the persisted one.
            record = self.state.classic.records.get(GROUP)
            if record is not None:
                epoch, members = record.generation, len(record.members)
        if kind != self.last_kind and members and self.last_kind is not None:
            self.stats["upgrade" if kind == "consumer" else "downgrade"] += 1
        self.last_kind = kind if members else None
        if kind == "consumer" and members:
            g2 = self.state.consumer.group(GROUP)
            assert g2 is not None
            if any(m.uses_classic_protocol for m in g2.members.values()) and any(
                not m.uses_classic_protocol for m in g2.members.values()
            ):
                self.stats["mixed-steps"] += 1
        if epoch is not None and self.last_epoch is not None and epoch < self.last_epoch:
            self.fail(f"group epoch went back {self.last_epoch} -> {epoch} ({kind})")
        # An empty group may be replaced by a fresh one of the other type (epochs start over).
        self.last_epoch = epoch if members else None

    # --- the run ----------------------------------------------------------------------------------

    def step(self) -> None:
        self.advance(STEP_MS)
        self.check()
        order = list(self.live())
        self.rng.shuffle(order)
        for c in order:
            self.act(c)
            self.check()
        if self.sc.crash_rate and self.rng.random() < self.sc.crash_rate * len(self.live()):
            victims = self.live()
            if victims:
                victim = self.rng.choice(victims)
                self.stop(victim, graceful=False)
                self.start(victim.protocol)  # the process is restarted, same protocol
                self.stats["crash"] += 1
        if self.sc.reload_rate and self.rng.random() < self.sc.reload_rate:
            self.reload()
            self.check()

    def settle(self, ms: int) -> None:
        end = self.now + ms
        while self.now < end:
            self.step()

    def roll(self, from_protocol: str, to_protocol: str) -> None:
        for i in range(self.sc.members):
            if i == self.sc.members // 2 and i > 0:
                self.quiet_check()
            candidates = [c for c in self.live() if c.protocol == from_protocol]
            if not candidates:
                break
            victim = self.rng.choice(candidates)
            self.stop(victim, graceful=self.rng.random() < self.sc.graceful_share)
            self.settle(self.rng.choice([0, STEP_MS, 2_000]))
            self.start(to_protocol)
            self.settle(self.rng.randint(1_000, 8_000))

    def run(self) -> None:
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
                self.fail(f"quiet consumer group is {g.state().value}")
            if {c.protocol for c in self.live()} == {"classic", "consumer"}:
                self.stats["quiet-mixed"] += 1
        elif kind == "classic":
            cgroup = self.state.classic.group(GROUP)
            assert cgroup is not None
            if cgroup.state is not ClassicGroupState.STABLE:
                self.fail(f"quiet classic group is {cgroup.state.value}")
        self.sc.crash_rate, self.sc.reload_rate = crash, reload

    def check_final(self) -> None:
        owners: Counter[TP] = Counter()
        for c in self.live():
            owners.update(c.owned)
        every = {(t, p) for t, n in self.sc.topics.items() for p in range(n)}
        missing = sorted(every - set(owners))
        doubled = sorted(tp for tp, n in owners.items() if n > 1)
        if missing or doubled:
            self.fail(f"at the quiet end: unowned {missing}, doubly owned {doubled}")
        self.stats[f"end:{self.state.group_type(GROUP)}"] += 1


def run_seed(seed: int) -> Simulation:
    sim = Simulation(Scenario.random(seed))
    sim.run()
    return sim
