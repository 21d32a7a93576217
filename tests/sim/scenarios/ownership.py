"""Workload: a KIP-848 group served by the REAL ``runtime.Shard`` over a simulated log, while the
shard moves between coordinator processes, a zombie owner keeps writing, appends fail, the log
is compacted and records too large for the log are refused.

Clients reach "their" coordinator over a faulty network and look it up again on a coordinator
error. Ownership moves: the owner unloads the shard and another process loads it (writing a new
ShardEpoch). Zombie: the old owner's reader stalls, the new owner loads, and the old owner keeps
serving the clients still routed to it until its reader sees the new epoch. After every event
the invariants (tests/sim/invariants.py) are checked; at the quiet end the group must cover every
partition. ``python -m tests.sim.replay ownership SEED`` replays one seed with its trace.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus
from tests.messages import tid
from tests.sim import invariants, shard_api
from tests.sim.clients import TP, ConsumerClient, commit_request
from tests.sim.drivers import ConsumerDriver
from tests.sim.kernel import InvariantViolation, LogFaults, Network, SimHost, SimLog, sim_loop

GROUP = "sim-group"
T0_ID = tid("t0")
PARTITION = 0  # the log partition (shard) the group lives on
COMPACTION_LAG_MS = 1000
CONFIG = ConsumerGroupConfig(
    session_timeout_ms=3000,
    min_session_timeout_ms=1000,
    heartbeat_interval_ms=500,
    min_heartbeat_interval_ms=100,
    assignment_interval_ms=0,
)


@dataclass(frozen=True)
class Scenario:
    seed: int
    members: int
    partitions: int
    fault_rate: float
    append_fail_rate: float
    ambiguous_rate: float
    compaction: bool
    moves: int
    zombies: int
    reloads: int
    oversize: bool
    chaos_ms: int = 8_000
    retention_check_ms: int | None = None  # the retention sweep's interval (None: Kafka's 10 minutes)

    @classmethod
    def random(cls, seed: int, chaos_ms: int = 8_000) -> Scenario:
        rng = random.Random(seed)
        return cls(
            seed=seed,
            members=rng.randint(1, 6),
            partitions=rng.randint(1, 12),
            fault_rate=rng.choice([0.0, 0.02, 0.1]),
            append_fail_rate=rng.choice([0.0, 0.0, 0.01, 0.03]),
            ambiguous_rate=rng.choice([0.0, 0.01]),
            compaction=rng.random() < 0.5,
            moves=rng.choice([0, 1, 2]),
            zombies=rng.choice([0, 0, 1]),
            reloads=rng.choice([0, 1]),
            oversize=rng.random() < 0.3,
            chaos_ms=chaos_ms,
            retention_check_ms=rng.choice(shard_api.SWEEPS),
        )


class Simulation(ConsumerDriver):
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 7919 + 3)
        self.loop = sim_loop()
        self.net = Network(self.loop, self.rng, sc.fault_rate)
        self.log = SimLog(clock=self.loop.clock)
        self.faults = LogFaults(sc.append_fail_rate, sc.ambiguous_rate)
        self.hosts = [SimHost(self.log, self.loop, f"owner-{i}", self.rng, self.faults) for i in range(2)]
        topics = [TopicImage("t0", T0_ID, sc.partitions)]
        self.image = TopicsImage.of(topics, 1)
        self.all_partitions: set[TP] = {(T0_ID, p) for p in range(sc.partitions)}
        self.handlers = shard_api.handlers(lambda: self.image, CONFIG, retention_check_ms=sc.retention_check_ms)
        self.heartbeat_interval_ms = CONFIG.heartbeat_interval_ms
        self.owner = 0  # the process clients are sent to when they look the coordinator up
        self.route: dict[int, int] = {}
        self.clients = [ConsumerClient(slot, GROUP, ["t0"]) for slot in range(sc.members)]
        self.seq = 0
        self.commit_seq = 0
        self.acked: dict[tuple[str, int], int] = {}
        self.epochs: dict[str, int] = {}
        self.deletions = invariants.Deletions(self.log, PARTITION, GROUP)
        self.forgotten = [0]
        self.steps = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.calm = False
        self.zombie_episode = False
        self.shard(0).load()

    # --- plumbing ------------------------------------------------------------------------------
    def shard(self, host: int) -> Shard[Any]:
        return self.hosts[host].shard(PARTITION, self.handlers)

    def fail(self, message: str) -> None:
        tail = "\n".join(self.trace[-30:])
        raise InvariantViolation(f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{tail}")

    # --- the run -------------------------------------------------------------------------------
    def run(self) -> Simulation:
        sc = self.sc
        for c in self.clients:
            self.at(self.rng.randint(0, 1000), self.start, c)
        t = 0
        while sc.fault_rate or sc.append_fail_rate:
            t += self.rng.randint(300, 1500)
            if t >= sc.chaos_ms:
                break
            self.at(t, self.chaos)
        for _ in range(sc.moves):
            self.at(self.rng.randint(500, sc.chaos_ms), self.move)
        for _ in range(sc.zombies):
            self.at(self.rng.randint(500, sc.chaos_ms - 500), self.zombie)
        for _ in range(sc.reloads):
            self.at(self.rng.randint(500, sc.chaos_ms), self.reload)
        if sc.compaction:
            for _ in range(3):
                self.at(self.rng.randint(500, sc.chaos_ms + 2000), self.compact)
        if sc.oversize:
            self.at(self.rng.randint(200, sc.chaos_ms), self.oversize)
        self.at(sc.chaos_ms, self.calm_down)
        end = sc.chaos_ms + 40_000
        quiet_since: int | None = None
        while self.loop.step():
            self.steps += 1
            self.check()
            if self.now > end:
                self.fail("the group did not converge within 40s of quiet")
            if self.calm and self.converged():
                quiet_since = self.now if quiet_since is None else quiet_since
                if self.now - quiet_since >= 2000:
                    break
            else:
                quiet_since = None
        self.check_final()
        return self

    # --- the consumers (tests/sim/drivers.py runs them) ----------------------------------------
    def destination(self, c: ConsumerClient) -> int:
        if c.rediscover:  # FindCoordinator again: the process placement names now
            c.rediscover = False
            self.route[c.slot] = self.owner
        return self.route[c.slot]

    def shard_at(self, destination: Any) -> Shard[Any]:
        return self.shard(destination)

    def started(self, c: ConsumerClient) -> None:
        self.route[c.slot] = self.owner

    def stopped(self, c: ConsumerClient) -> None:
        self.fail(f"{c.member_id} stopped on {c.error.name}")

    def commit(self, c: ConsumerClient, parts: set[TP], sync: bool) -> None:
        if not parts or c.epoch <= 0:
            return
        self.commit_seq += 1
        offset = self.commit_seq
        request = commit_request(GROUP, c.member_id, c.epoch, {"t0": [(p, offset) for _, p in sorted(parts)]})
        self.send_commit(self.route[c.slot], request, c.slot)

    def send_commit(self, host: int, request: OffsetCommitRequest, client: Any) -> None:
        def validated(state: shard_api.State, now: int) -> Any:
            result = shard_api.commit_offsets(self.handlers, request)(state, now)
            assert isinstance(result.response, OffsetCommitResponse)  # a commit is never parked
            accepted = [
                (T0_ID, p.partition_index) for t in result.response.topics for p in t.partitions if p.error_code == 0
            ]
            if accepted and request.group_id == GROUP:
                invariants.invariant_5_only_the_holder_commits(
                    state, GROUP, request.member_id, request.generation_id_or_member_epoch, accepted, self.fail
                )
            return result

        def answer(response: OffsetCommitResponse) -> None:
            for t in response.topics:
                for p in t.partitions:
                    self.stats[f"commit:{ErrorCode(p.error_code).name}"] += 1
                    if request.group_id != GROUP:  # the oversized commit
                        if p.error_code == 0:
                            self.fail("a commit larger than the log accepts was acknowledged")
                        continue
                    if p.error_code == 0:
                        key = (t.name, p.partition_index)
                        self.acked[key] = max(self.acked.get(key, 0), request.topics[0].partitions[0].committed_offset)

        def arrive() -> None:
            shard_api.call(self.shard(host), validated, lambda code: shard_api.commit_error(request, code), answer)

        self.net.request(client, arrive)

    # --- faults --------------------------------------------------------------------------------
    def chaos(self) -> None:
        alive = [c for c in self.clients if c.alive]
        if alive and self.rng.random() < 0.3:
            c = self.rng.choice(alive)
            self.note(f"crash {c.member_id}")
            c.crash()
            self.stats["crash"] += 1
            if self.rng.random() < 0.7:
                self.at(self.rng.randint(100, 4000), self.start, c)

    def move(self) -> None:
        """The shard moves: the owner unloads it, another process loads it."""
        old, new = self.owner, 1 - self.owner
        if self.shard(new).status is not ShardStatus.CLOSED:
            return  # a zombie episode is still being cleaned up
        self.note(f"move {old} -> {new}")
        self.stats["move"] += 1
        self.shard(old).close()
        self.owner = new
        self.shard(new).load()

    def zombie(self) -> None:
        """The owner stops reading (a long pause) while another process takes the shard."""
        old, new = self.owner, 1 - self.owner
        if self.shard(new).status is not ShardStatus.CLOSED or self.shard(old).status is not ShardStatus.ACTIVE:
            return
        self.note(f"zombie {old}; {new} takes over")
        self.stats["zombie"] += 1
        self.hosts[old].stall()
        self.zombie_episode = True
        self.owner = new
        self.shard(new).load()
        self.at(self.rng.randint(300, 2000), self.zombie_wakes, old)

    def zombie_wakes(self, old: int) -> None:
        self.hosts[old].resume()
        self.at(self.rng.randint(0, 200), self.zombie_unloaded, old)

    def zombie_unloaded(self, old: int) -> None:
        """Placement notices the old owner and unloads it; the new owner serves (reloading if the
        zombie's writes had made it reload and it was fenced by the zombie's reload)."""
        self.note(f"zombie {old} unloaded (was {self.shard(old).status.value})")
        if self.shard(old).status is ShardStatus.FENCED:
            self.stats["zombie-fenced"] += 1
        self.shard(old).close()
        self.zombie_episode = False
        if self.shard(self.owner).status in (ShardStatus.FENCED, ShardStatus.CLOSED):
            self.shard(self.owner).load()

    def reload(self) -> None:
        shard = self.shard(self.owner)
        if shard.status is ShardStatus.ACTIVE:
            self.stats["reload"] += 1
            shard.reload("simulated reload")

    def compact(self) -> None:
        # The log topic's min.compaction.lag.ms, scaled to the simulation's seconds: far longer
        # than a read-back or a reload, as an hour is on a real cluster.
        lag = COMPACTION_LAG_MS
        self.stats["compacted"] += self.log.compact(PARTITION, keep_head=self.rng.randint(0, 30), min_lag_ms=lag)

    def oversize(self) -> None:
        """A commit whose record is larger than the log accepts: refused alone, nothing applied.
        Sometimes the writer's own limit is the lower one (a misconfigured log): then the shard
        reloads, and still nothing of the refused write is applied."""
        misconfigured = self.rng.random() < 0.5
        host = self.hosts[self.owner]
        host.max_record_bytes = 4_000
        self.faults.writer_limit = 2_000 if misconfigured else 1_000_000
        request = commit_request("g" * 3_000, "", -1, {"t0": [(0, 1)]})
        request_small = commit_request("g" * 4_500, "", -1, {"t0": [(0, 1)]})
        self.stats["oversize"] += 1
        self.send_commit(self.owner, request if misconfigured else request_small, "admin")

    def calm_down(self) -> None:
        self.calm = True
        self.net.fault_rate = 0.0
        self.faults.fail_rate = self.faults.ambiguous_rate = 0.0
        for c in self.clients:
            if not c.alive:
                self.at(self.rng.randint(0, 500), self.start, c)

    # --- checks --------------------------------------------------------------------------------
    def check(self) -> None:
        for host in self.hosts:
            invariants.invariant_shard_life(host.transitions, self.fail)
        shard = self.shard(self.owner)
        if shard.status is ShardStatus.ACTIVE:
            group = shard.committed.consumer.group(GROUP)
            known = {} if group is None else group.members
            invariants.invariant_1_exclusive_ownership(self.clients, known, self.fail)
        if shard.status is ShardStatus.FENCED and not self.zombie_episode:
            # The unloaded zombie's last ShardEpoch landed after all; placement loads the
            # shard again where it belongs (what the high-availability layer does).
            self.stats["fenced-by-unloaded-zombie"] += 1
            shard.load()
        if shard.status is not ShardStatus.ACTIVE:
            return
        invariants.within_one_life(
            self.deletions,
            self.forgotten,
            lambda: invariants.invariant_2_epochs(shard.committed, GROUP, self.epochs, self.fail),
            self.forget,
        )
        invariants.invariant_3_replay_matches(shard, self.log, self.fail, full=self.steps % 50 == 0)
        if shard.caught_up:
            invariants.invariant_4_acknowledged_commits_survive(shard.committed, GROUP, self.acked, self.fail)
        for other in self.hosts:
            zombie = other.shards.get(PARTITION)
            if zombie is not None and zombie is not shard and zombie.status is ShardStatus.ACTIVE:
                self.stats["zombie-steps"] += 1

    def forget(self) -> None:
        self.stats["group_recreated"] += 1
        self.epochs.clear()

    def converged(self) -> bool:
        shard = self.shard(self.owner)
        if shard.status is not ShardStatus.ACTIVE:
            return False
        group = shard.committed.consumer.group(GROUP)
        if group is None:
            return False
        for c in self.clients:
            if not c.alive or c.in_flight and c.epoch == 0 or c.reconciling:
                return False
            member = group.members.get(c.member_id)
            if member is None or member.member_epoch != group.group_epoch:
                return False
            if {(t, p) for t, ps in member.assigned.items() for p in ps} != c.owned:
                return False
        return len(group.members) == len(self.clients)

    def check_final(self) -> None:
        shard = self.shard(self.owner)
        if shard.status is not ShardStatus.ACTIVE:
            self.fail(f"the owner's shard ended {shard.status.value}")
        invariants.invariant_3_replay_matches(shard, self.log, self.fail, full=True)
        invariants.invariant_4_acknowledged_commits_survive(shard.committed, GROUP, self.acked, self.fail)
        invariants.invariant_6_quiet_group_covered(shard.committed, GROUP, self.clients, self.all_partitions, self.fail)
        for key in self.acked:
            if key[0] != "t0":
                self.fail(f"unexpected acknowledged commit {key}")
        if any(len(g) > 1000 for g in shard.committed.offsets.offsets):
            self.fail("an oversized group id was applied")
        self.stats["skipped-zombie-records"] += self.log.replay(PARTITION, type(shard.committed)()).skipped
        for host in self.hosts:
            invariants.invariant_shard_life(host.transitions, self.fail)
            self.stats.update(f"phase:{before.value}->{after.value}" for _, before, after in host.transitions.seen)


def run_seed(seed: int, **kwargs: Any) -> Simulation:
    return Simulation(Scenario.random(seed, **kwargs)).run()
