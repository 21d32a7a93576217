"""Workload: classic-protocol consumers, eager and cooperative (KIP-429), on the real shard.

Clients are ``ClassicClient`` models (tests/sim/clients.py). Besides all-eager and
all-cooperative groups, the two stages of KIP-429's rolling upgrade run: clients configured with
both assignors behave eagerly (as the Java consumer does while an eager assignor is configured),
and the group's protocol is whatever the coordinator's vote selects.

Faults: crashes (a dead process owns nothing), restarts (static members come back with their
group.instance.id and no member id), graceful closes, new members, JoinGroup/SyncGroup answers
lost (the client resends), and coordinator reloads (state rebuilt from the log; parked requests
fail with NOT_COORDINATOR and clients rejoin). After every event the invariants are checked; at
the quiet end every partition is owned by exactly one live member of the Stable group.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NoReturn

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups import classic
from groupcoord.coordinator.groups.classic import ClassicGroupConfig
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.heartbeat import HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupResponse
from groupcoord.coordinator.messages.sync_group import SyncGroupResponse
from groupcoord.coordinator.runtime.api import Park
from groupcoord.coordinator.runtime.shard import ShardStatus
from tests.sim import invariants, shard_api
from tests.sim.clients import ClassicClient
from tests.sim.kernel import InvariantViolation, SimHost, SimLog, sim_loop

GROUP = "sim-group"
INT_MAX = 2**31 - 1
SESSION_TIMEOUT_MS = 10_000
REBALANCE_TIMEOUT_MS = 20_000
HEARTBEAT_INTERVAL_MS = 3_000
BACKOFF_MS = 100
ASSIGNORS: dict[str, list[tuple[str, ...]]] = {
    "eager": [("range",)],
    "cooperative": [("cooperative-sticky",)],
    "upgrade-1": [("range",), ("cooperative-sticky", "range")],
    "upgrade-2": [("cooperative-sticky", "range"), ("cooperative-sticky",)],
}


@dataclass
class Scenario:
    seed: int
    mode: str  # eager | cooperative | upgrade-1 (range-only and both) | upgrade-2 (both and cooperative-only)
    topics: dict[str, int]
    initial_members: int
    static_share: float
    initial_delay_ms: int
    max_size: int
    chaos_ms: int
    faults: int
    loss_rate: float  # chance that a JoinGroup/SyncGroup answer never reaches the client
    retention_check_ms: int | None = None  # the retention sweep's interval (None: Kafka's 10 minutes)

    @classmethod
    def random(cls, seed: int, chaos_ms: int = 60_000) -> Scenario:
        rng = random.Random(seed)
        topics = {f"t{i}": rng.randint(1, 8) for i in range(rng.randint(1, 3))}
        return cls(
            seed=seed,
            mode=rng.choice(["eager", "cooperative", "eager", "cooperative", "upgrade-1", "upgrade-2"]),
            topics=topics,
            initial_members=rng.randint(1, 6),
            static_share=rng.choice([0.0, 0.5, 1.0]),
            initial_delay_ms=rng.choice([0, 3000]),
            max_size=rng.choice([INT_MAX, INT_MAX, INT_MAX, 3]),
            chaos_ms=chaos_ms,
            faults=rng.randint(0, 25),
            loss_rate=rng.choice([0.0, 0.0, 0.05, 0.2]),
            retention_check_ms=rng.choice(shard_api.SWEEPS),
        )


class Simulation:
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 7919 + 1)
        config = ClassicGroupConfig(initial_rebalance_delay_ms=sc.initial_delay_ms, max_size=sc.max_size)
        self.handlers = shard_api.handlers(TopicsImage.empty, ConsumerGroupConfig(), config, sc.retention_check_ms)
        self.swept = 0  # times the sweep deleted the group (the live state lost it at once)
        self.loop = sim_loop()
        self.log = SimLog()
        self.host = SimHost(self.log, self.loop, "sim", random.Random(sc.seed))
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()
        self.clients: list[ClassicClient] = []
        self.next_token = 0
        self.parked: set[Hashable] = set()
        self.last_generation: int | None = None
        self.logged = [0, 0]  # log entries checked, highest logged generation
        self.compared_offset = -1
        self.shard_generation = 0
        self.steps = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.reloads = 0

    # --- plumbing -----------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    @property
    def state(self) -> classic.ClassicGroupsState:
        """The live state, which handlers see (it includes rebalances in progress)."""
        return self.shard.live.classic

    def at(self, delay_ms: int, fn: Any, *args: Any) -> None:
        self.loop.at(self.now + delay_ms, fn, *args)

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now} {line}")

    def token(self) -> Hashable:
        self.next_token += 1
        return self.next_token

    def call(self, c: ClassicClient, kind: str, op: shard_api.Op, token: Hashable, on_answer: Any) -> None:
        """Submit through the shard; remember whether the handler parked the request (its answer
        then comes when the rebalance completes)."""

        def run(state: shard_api.State, now: int) -> Any:
            result = op(state, now)
            if isinstance(result.response, Park):
                self.parked.add(token)
            return result

        def answer(response: Any) -> None:
            parked = token in self.parked
            self.parked.discard(token)
            self.stats[f"{kind}:{ErrorCode(response.error_code).name}"] += 1
            if c.alive:
                on_answer(c, token, response, parked)

        shard_api.call(self.shard, run, shard_api.ERROR_RESPONSES[kind], answer)

    # --- clients ------------------------------------------------------------------------------
    def new_client(self, static: bool) -> ClassicClient:
        n = len(self.clients)
        c = ClassicClient(
            name=f"c{n}",
            group=GROUP,
            topics=self.sc.topics,
            assignors=self.rng.choice(ASSIGNORS[self.sc.mode]),
            instance_id=f"i{n}" if static else None,
            api_version=self.rng.choice([5, 9]) if static else self.rng.choice([3, 9]),
            session_timeout_ms=SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        )
        self.clients.append(c)
        return c

    def start(self, c: ClassicClient) -> None:
        if not c.alive:
            return  # it crashed before it started
        self.note(f"start {c.name}")
        self.join(c)
        self.at(self.rng.randint(1, HEARTBEAT_INTERVAL_MS), self.tick, c)

    def join(self, c: ClassicClient) -> None:
        token = self.token()
        request = c.join(token)
        self.call(
            c, "join", shard_api.join_group(self.handlers, request, token, c.api_version, c.name), token, self.on_join
        )

    def sync(self, c: ClassicClient) -> None:
        token = self.token()
        request = c.sync(token)
        self.call(c, "sync", shard_api.sync_group(self.handlers, request, token), token, self.on_sync)

    def lost(self, c: ClassicClient, kind: str, token: Hashable) -> bool:
        """The answer to the JoinGroup/SyncGroup the client waits for may never arrive (connection
        dropped): the client sends it again later."""
        if token != c.awaiting or self.rng.random() >= self.sc.loss_rate:
            return False
        self.stats[f"lost:{kind}"] += 1
        self.at(self.rng.randint(100, 2000), self.resend, c, kind, token)
        return True

    def resend(self, c: ClassicClient, kind: str, token: Hashable) -> None:
        if c.alive and c.awaiting == token:
            self.join(c) if kind == "join" else self.sync(c)

    def on_join(self, c: ClassicClient, token: Hashable, resp: JoinGroupResponse, parked: bool) -> None:
        if token != c.awaiting or self.lost(c, "join", token):
            return
        if not parked:
            if c.instance_id is not None and not c.member_id and resp.error_code == ErrorCode.NONE:
                # A restarted static instance took its old place in a Stable group: no rebalance.
                self.stats["static_rejoin_without_rebalance"] += 1
            if resp.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
                group = self.state.group(GROUP)
                # Legitimate only against members sharing no protocol with the client; after a
                # reload a member is known by its chosen protocol alone, so a newcomer can be refused
                # then (as in Kafka). A group without members must never refuse a consumer.
                if group is None or not group.members:
                    self.fail(f"{c.name} refused with INCONSISTENT_GROUP_PROTOCOL by {group}")
        action = c.on_join(resp)
        if action == "sync" and c.assignments:
            self.stats[f"assignor:{resp.protocol_name}"] += 1
        if resp.skip_assignment:
            self.stats["skip_assignment"] += 1
        self.react(c, action)

    def on_sync(self, c: ClassicClient, token: Hashable, resp: SyncGroupResponse, parked: bool) -> None:
        if token != c.awaiting or self.lost(c, "sync", token):
            return
        action = c.on_sync(resp)
        if action == "join" and resp.error_code == ErrorCode.NONE:
            self.stats["cooperative_revocations"] += 1
        if action == "stable" and c.followup_generation == c.generation:
            # KIP-429 relies on the revoking member to rejoin. A static member restarted in a
            # Stable group inherits an assignment that already dropped what its dead predecessor
            # had to revoke, owns nothing, and so never rejoins; the withheld partitions would
            # wait for an unrelated rebalance. This leader therefore forces a follow-up
            # rebalance (a leader's JoinGroup always rebalances) if none came.
            self.at(2 * REBALANCE_TIMEOUT_MS, self.followup, c, c.generation)
        self.react(c, action)

    def react(self, c: ClassicClient, action: str) -> None:
        if action == "sync":
            self.sync(c)
        elif action == "join":
            self.join(c)
        elif action == "backoff":
            self.at(BACKOFF_MS, self.rejoin, c)
        elif action == "fatal":
            self.stats[f"fatal:{c.error.name}"] += 1
            if c.error is ErrorCode.FENCED_INSTANCE_ID and not self.reloads:
                # One process per instance id here, so only a reload can fence a live one: the log
                # may still map its instance id to the member id it had before a replacement that
                # was never persisted (a restart during a rebalance), exactly as in Kafka.
                self.fail(f"{c.name} fenced although it is the only process of its instance")
        elif action == "unexpected":
            self.fail(f"{c.name} got {c.error.name}, which the Java consumer does not expect")

    def rejoin(self, c: ClassicClient) -> None:
        if c.status == "backoff":
            self.join(c)

    def followup(self, c: ClassicClient, generation: int) -> None:
        if c.status == "stable" and c.generation == generation:
            self.stats["leader_followup"] += 1
            self.join(c)

    def tick(self, c: ClassicClient) -> None:
        if not c.alive:
            return
        if c.status == "stable":
            request = c.heartbeat()

            def answer(c: ClassicClient, token: Hashable, resp: HeartbeatResponse, parked: bool) -> None:
                action = c.on_heartbeat(request, resp)
                if action != "ok":
                    self.react(c, action)

            self.call(c, "heartbeat", shard_api.heartbeat(self.handlers, request), self.token(), answer)
        # Jittered, always well inside the session timeout.
        self.at(self.rng.randint(HEARTBEAT_INTERVAL_MS // 2, 2 * HEARTBEAT_INTERVAL_MS), self.tick, c)

    def restart(self, old: ClassicClient) -> None:
        c = ClassicClient(
            old.name,
            GROUP,
            old.topics,
            old.assignors,
            old.instance_id,
            old.api_version,
            SESSION_TIMEOUT_MS,
            REBALANCE_TIMEOUT_MS,
        )
        self.clients[self.clients.index(old)] = c
        self.start(c)

    # --- faults -------------------------------------------------------------------------------
    def fault(self) -> None:
        alive = [c for c in self.clients if c.alive]
        roll = self.rng.random()
        if roll < 0.3 and alive:
            victim = self.rng.choice(alive)
            self.note(f"crash {victim.name}")
            victim.crash()
            if self.rng.random() < 0.7:
                self.at(self.rng.randint(100, 2 * SESSION_TIMEOUT_MS), self.restart, victim)
        elif roll < 0.45 and alive:
            leaver = self.rng.choice(alive)
            self.note(f"close {leaver.name}")
            request = leaver.leave()
            if request is not None:
                op = shard_api.leave_group(self.handlers, request)
                self.call(leaver, "leave", op, self.token(), lambda *_: None)
        elif roll < 0.75:
            self.start(self.new_client(self.rng.random() < self.sc.static_share))
        else:
            self.note("reload")
            self.reloads += 1
            self.shard.reload("simulated coordinator failover")

    # --- the run ------------------------------------------------------------------------------
    def run(self, quiet_ms: int = 240_000) -> Simulation:
        for _ in range(self.sc.initial_members):
            self.at(self.rng.randint(0, 2000), self.start, self.new_client(self.rng.random() < self.sc.static_share))
        for _ in range(self.sc.faults):
            self.at(self.rng.randint(1000, self.sc.chaos_ms), self.fault)
        end = self.sc.chaos_ms + quiet_ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()
            self.steps += 1
            self.check()
        self.loop.clock.advance(max(0, end - self.now))
        self.check_quiet()
        return self

    # --- invariants ---------------------------------------------------------------------------
    def fail(self, message: str) -> NoReturn:
        tail = "\n".join(self.trace[-40:])
        raise InvariantViolation(f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{tail}")

    def check(self) -> None:
        invariants.invariant_shard_life(self.host.transitions, self.fail)
        invariants.invariant_1_no_partition_owned_twice(((c.name, c.owned) for c in self.clients if c.alive), self.fail)
        invariants.invariant_2_logged_generations(self.log, 0, self.logged, self.fail)
        shard = self.shard
        if shard.status is not ShardStatus.ACTIVE:
            return
        group = self.state.group(GROUP)
        generation = None if group is None else group.generation_id
        if self.handlers.swept[GROUP] != self.swept:
            # Deleted by the retention sweep, empty: the next join creates it again from
            # generation 0, as in Kafka.
            self.swept = self.handlers.swept[GROUP]
            self.stats["deleted_by_sweep"] += 1
            self.last_generation = None
        if shard.generation != self.shard_generation:
            # Reloaded: a rebalance in progress is soft state, so the generation may go back to
            # the last persisted one (as in Kafka); the log's generations never go back.
            self.shard_generation = shard.generation
            self.last_generation = generation
        if generation is not None:
            invariants.invariant_2_generation(GROUP, self.last_generation, generation, self.fail)
            self.last_generation = generation
        if not shard.caught_up or shard.committed_offset == self.compared_offset:
            return
        self.compared_offset = shard.committed_offset
        if not shard.replay_matches():
            self.fail("3. replayed log differs from the live persisted state")
        invariants.invariant_3_classic_groups_match_records(self.state, shard.committed.classic, self.fail)

    def check_quiet(self) -> None:
        alive = [c for c in self.clients if c.alive]
        if not alive:
            return
        group = self.state.group(GROUP)
        if group is None or group.state.value != "Stable":
            self.fail(f"6. group not stable at the quiet end: {group}")
        for c in alive:
            if c.status != "stable" or c.generation != group.generation_id:
                self.fail(f"6. {c} not settled in generation {group.generation_id}")
        if set(group.members) != {c.member_id for c in alive}:
            self.fail(f"6. members {list(group.members)} != live clients {[c.member_id for c in alive]}")
        every = {(t, p) for t, n in self.sc.topics.items() for p in range(n)}
        invariants.invariant_6_owned_exactly_once([(c.name, c.owned) for c in alive], every, self.fail)


def run_seed(seed: int, **kwargs: Any) -> Simulation:
    return Simulation(Scenario.random(seed, **kwargs)).run()
