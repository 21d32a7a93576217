"""Workload: one KIP-848 consumer group on the real shard over a simulated log.

Members are ``ConsumerClient`` models (tests/sim/clients.py): they join, heartbeat, revoke then
assign, acknowledge, commit (synchronously before a revocation, and an auto-commit that travels
the network on its own and may land after the partitions moved on), crash, restart, leave,
bounce as static members, and pause (a long GC pause). The network loses, delays and duplicates
messages; topics grow, appear and are re-created; the coordinator reloads from the (compacted)
log mid-rebalance. Requests go through the production composition (``GroupCoordinatorShard``,
with the default ``bidirectional`` migration policy) into ``runtime.Shard``, which answers only
once the records are read back. After every event the invariants (tests/sim/invariants.py) are
checked; a failure names the seed, and ``python -m tests.sim.replay kip848 SEED`` replays it.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.offset_commit import OffsetCommitResponse
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus
from tests.messages import tid
from tests.sim import invariants, shard_api
from tests.sim.clients import TP, ConsumerClient, commit_request
from tests.sim.drivers import ConsumerDriver
from tests.sim.kernel import InvariantViolation, Network, SimHost, SimLog, sim_loop

GROUP = "sim-group"
RESTART_AFTER_FATAL_MS = 300  # the process supervisor restarts a consumer that stopped
SIM_CONFIG_BASE: dict[str, Any] = {
    "session_timeout_ms": 3000,
    "min_session_timeout_ms": 1000,
    "heartbeat_interval_ms": 500,
    "min_heartbeat_interval_ms": 100,
}


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
    retention_check_ms: int | None = None  # the retention sweep's interval (None: Kafka's 10 minutes)

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
            retention_check_ms=rng.choice(shard_api.SWEEPS),
        )


class Simulation(ConsumerDriver):
    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(sc.seed * 7919 + 1)
        self.loop = sim_loop()
        self.net = Network(self.loop, self.rng, sc.fault_rate)
        self.topic_version = 1
        self.topic_gen: dict[str, int] = {}
        topics = []
        per = max(1, sc.partitions // sc.topics)
        for i in range(sc.topics):
            name = f"topic-{i}"
            self.topic_gen[name] = 0
            topics.append(TopicImage(name, tid(f"{name}#0"), per))
        self.metadata = TopicsImage.of(topics, self.topic_version)
        self.config = ConsumerGroupConfig(**SIM_CONFIG_BASE, assignment_interval_ms=sc.assignment_interval_ms)
        self.heartbeat_interval_ms = self.config.heartbeat_interval_ms
        self.handlers = shard_api.handlers(lambda: self.metadata, self.config, retention_check_ms=sc.retention_check_ms)
        self.log = SimLog()
        self.deletions = invariants.Deletions(self.log, 0, GROUP)
        self.forgotten = [0]
        self.host = SimHost(self.log, self.loop, "sim", self.rng)
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()
        self.clients: list[ConsumerClient] = []
        names = sorted(t.name for t in topics)
        for slot in range(sc.members):
            static = self.rng.random() < sc.static_fraction
            subs = names
            if sc.heterogeneous and len(names) > 1:
                subs = sorted(self.rng.sample(names, self.rng.randint(1, len(names))))
            regex = None
            if sc.regex_members and self.rng.random() < 0.5:
                regex, subs = "topic-.*", []
            assignor = "range" if sc.range_assignor and self.rng.random() < 0.7 else None
            self.clients.append(
                ConsumerClient(slot, GROUP, subs, f"instance-{slot}" if static else None, regex, assignor)
            )
        self.left: set[int] = set()  # slots that left the group on purpose (not restarted when calm)
        self.seq = 0
        self.steps = 0
        self.epochs: dict[str, int] = {}
        self.member_epochs: dict[str, int] = {}
        self.committed = 0
        self.rejected = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.checked_offset = -1
        self.dispatched = False

    # --- plumbing ------------------------------------------------------------------------------
    @property
    def state(self) -> Any:
        """The consumer groups as the log has committed them (what clients have been told)."""
        return self.shard.committed.consumer

    def event(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.dispatched = True
        fn(*args)

    def fail(self, message: str) -> None:
        lines = []
        group = self.state.group(GROUP)
        if group is not None:
            lines.append(f"group epoch={group.group_epoch} assignment epoch={group.assignment_epoch}")
            for mid, cm in sorted(group.members.items()):
                lines.append(
                    f"  {mid} e={cm.member_epoch}/{cm.previous_member_epoch} {cm.state.name} "
                    f"assigned={_fmt(cm.assigned)} revoking={_fmt(cm.pending_revocation)} "
                    f"target={_fmt(group.target.get(mid, {}))}"
                )
        for c in self.clients:
            lines.append(f"  sim {c.member_id} alive={c.alive} e={c.epoch} owned={sorted(c.owned)} rec={c.reconciling}")
        state, tail = "\n".join(lines), "\n".join(self.trace[-25:])
        raise InvariantViolation(
            f"seed={self.sc.seed} t={self.now}ms step={self.steps}: {message}\n{self.sc}\n{state}\n{tail}"
        )

    # --- the run -------------------------------------------------------------------------------
    def run(self) -> Simulation:
        sc = self.sc
        for c in self.clients:
            self.at(self.rng.randint(0, 1500), self.start, c)
        t = 0
        while sc.fault_rate > 0:
            t += self.rng.randint(300, 1500)
            if t >= sc.chaos_ms:
                break
            self.at(t, self.chaos)
        if sc.reloads:
            for _ in range(self.rng.randint(1, 4)):
                self.at(self.rng.randint(500, sc.chaos_ms), self.reload, self.rng.random() < 0.5)
        self.at(sc.chaos_ms, self.calm)
        end = sc.chaos_ms + 40_000
        quiet_since: int | None = None
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()
            if not self.after_step() or self.now < sc.chaos_ms:
                continue
            if self.converged():
                quiet_since = self.now if quiet_since is None else quiet_since
                if self.now - quiet_since >= 2000:
                    break
            else:
                quiet_since = None
        if not self.converged():
            self.fail("the group did not converge within 40s of quiet")
        self.check_final()
        return self

    # --- the consumers (tests/sim/drivers.py runs them) ----------------------------------------
    def shard_at(self, destination: Any) -> Shard[Any]:
        return self.shard

    def started(self, c: ConsumerClient) -> None:
        self.left.discard(c.slot)

    def stopped(self, c: ConsumerClient) -> None:
        self.at(RESTART_AFTER_FATAL_MS, self.start, c)  # its supervisor starts it again

    def heartbeat_op(self, request: ConsumerGroupHeartbeatRequest) -> shard_api.Op:
        heartbeat = shard_api.consumer_heartbeat(self.handlers, request)
        check_purity = self.steps % self.sc.check_purity_every == 0

        def op(state: shard_api.State, now: int) -> Any:
            before = state.snapshot() if check_purity else None
            result = heartbeat(state, now)
            if before is not None and state.snapshot() != before:
                self.fail("a handler mutated the state")
            return result

        return op

    def commit(self, c: ConsumerClient, parts: set[TP], sync: bool) -> None:
        if not parts or c.epoch <= 0:
            return
        if sync:  # before giving partitions up: sent at once
            self.check_commit(c.member_id, c.epoch, sorted(parts))
        else:
            # An auto-commit is not ordered with the heartbeats: a retried commit may come over a
            # new connection long after the member gave the partitions up (KIP-1251's case).
            self.loop.at(self.now + self.net.latency(), self.check_commit, c.member_id, c.epoch, sorted(parts))

    def check_commit(self, member_id: str, epoch: int, parts: list[TP]) -> None:
        """5. Only the current holder of a partition may commit it; zombies and stale epochs fail.
        The check runs on the state the commit was validated on."""
        self.dispatched = True
        names = {t.topic_id: t.name for t in self.metadata.topics.values()}
        by_name: dict[str, list[tuple[int, int]]] = {}
        for topic_id, p in parts:
            if topic_id in names:  # a partition of a deleted topic incarnation cannot be named
                by_name.setdefault(names[topic_id], []).append((p, self.now))
        if not by_name:
            return
        request = commit_request(GROUP, member_id, epoch, by_name)
        commit = shard_api.commit_offsets(self.handlers, request)
        metadata = self.metadata

        def op(state: shard_api.State, now: int) -> Any:
            result = commit(state, now)
            assert isinstance(result.response, OffsetCommitResponse)  # a commit is never parked
            accepted = [
                (metadata.topic_id(t.name) or "", p.partition_index)
                for t in result.response.topics
                for p in t.partitions
                if p.error_code == ErrorCode.NONE
            ]
            invariants.invariant_5_only_the_holder_commits(state, GROUP, member_id, epoch, accepted, self.fail)
            return result

        def answer(response: OffsetCommitResponse) -> None:
            for t in response.topics:
                for p in t.partitions:
                    self.stats[f"commit:{ErrorCode(p.error_code).name}"] += 1
                    if p.error_code == ErrorCode.NONE:
                        self.committed += 1
                    else:
                        self.rejected += 1

        shard_api.call(self.shard, op, lambda code: shard_api.commit_error(request, code), answer)

    # --- faults --------------------------------------------------------------------------------
    def chaos(self) -> None:
        rng = self.rng
        roll = rng.random()
        alive = [c for c in self.clients if c.alive]
        if roll < 0.25 and alive:
            c = rng.choice(alive)
            self.note(f"crash {c.member_id}")
            c.crash()
            self.stats["crash"] += 1
            if rng.random() < 0.7:
                self.at(rng.randint(100, 5000), self.start, c)
        elif roll < 0.45 and alive:
            c = rng.choice(alive)
            static = c.instance_id is not None
            self.note(f"{'bounce' if static else 'leave'} {c.member_id}")
            self.stats["bounce" if static else "leave"] += 1
            self.leave(c)
            self.left.add(c.slot)
            if static or rng.random() < 0.5:
                self.at(rng.randint(50, 2000), self.start, c)
        elif roll < 0.6:
            self.change_metadata()
        elif roll < 0.75 and alive:
            c = rng.choice(alive)  # a long GC pause: no heartbeats, the partitions stay owned
            pause = rng.randint(500, 4500)
            self.note(f"pause {c.member_id} {pause}ms")
            self.stats["pause"] += 1
            c.in_flight = -1
            self.at(pause, self.timeout, c, c.incarnation, -1)

    def change_metadata(self) -> None:
        rng = self.rng
        topics = dict(self.metadata.topics)
        names = sorted(topics)
        roll = rng.random()
        if roll < 0.6:
            name = rng.choice(names)
            t = topics[name]
            topics[name] = TopicImage(name, t.topic_id, t.partitions + rng.randint(1, 3))
            self.note(f"partitions added to {name}")
        elif roll < 0.8:
            name = f"topic-{len(names)}"
            self.topic_gen[name] = 0
            topics[name] = TopicImage(name, tid(f"{name}#0"), rng.randint(1, 4))
            self.note(f"topic {name} created")
        else:
            name = rng.choice(names)
            self.topic_gen[name] += 1
            topics[name] = TopicImage(name, tid(f"{name}#{self.topic_gen[name]}"), rng.randint(1, 6))
            self.note(f"topic {name} deleted and re-created")
        self.topic_version += 1
        self.metadata = TopicsImage(topics, self.topic_version)
        self.stats["metadata"] += 1

    def reload(self, compacted: bool) -> None:
        self.note(f"reload compacted={compacted}")
        self.stats["reload"] += 1
        if compacted:
            self.log.compact(0, keep_head=0)
        self.shard.reload("simulated coordinator reload")

    def calm(self) -> None:
        self.net.fault_rate = 0.0
        for c in self.clients:
            if not c.alive and c.slot not in self.left:
                self.at(self.rng.randint(0, 500), self.start, c)

    # --- invariants ----------------------------------------------------------------------------
    def after_step(self) -> bool:
        """Check the invariants if the step could have changed what they look at (a client event,
        or records read back into the committed state); False if it could not."""
        invariants.invariant_shard_life(self.host.transitions, self.fail)
        self.steps += 1
        shard = self.shard
        if not self.dispatched and shard.committed_offset == self.checked_offset:
            return False
        self.dispatched = False
        if shard.status is not ShardStatus.ACTIVE:
            return True
        group = self.state.group(GROUP)
        if shard.committed_offset != self.checked_offset:
            # Only a step that read records back changes the committed state, so checking after
            # those is checking after every step. The group part each step (as before commits
            # were written); the whole state at the end, and against a fresh load of the log.
            self.checked_offset = shard.committed_offset
            invariants.invariant_3_replay_matches(
                shard, self.log, self.fail, full=False, view=lambda s: s.consumer.snapshot()
            )
            invariants.within_one_life(self.deletions, self.forgotten, lambda: self.check_epochs(group), self.forget)
            if group is not None:
                invariants.invariant_1_coordinator_holders(group, self.fail)
        if group is not None:
            invariants.invariant_1_exclusive_ownership(self.clients, group.members, self.fail)
        return True

    def check_epochs(self, group: Any) -> None:
        invariants.invariant_2_epochs(self.shard.committed, GROUP, self.epochs, self.fail)
        if group is not None:
            invariants.invariant_2_member_epochs(group, self.member_epochs, self.fail)

    def forget(self) -> None:
        self.stats["group_recreated"] += 1
        self.epochs.clear()
        self.member_epochs.clear()

    def converged(self) -> bool:
        group = self.state.group(GROUP)
        live = [c for c in self.clients if c.alive]
        if group is None:
            return not live
        if group.state().value not in ("Stable", "Empty") or set(group.members) != {c.member_id for c in live}:
            return False
        # A group's regexes are resolved again at most every 10 s (as in Kafka): a group may look
        # settled on a resolution older than the topics for that long.
        if any(r not in group.regexes or group.regexes[r].version < self.metadata.version for r in group.regex_counts):
            return False
        for c in live:
            if c.reconciling or c.in_flight < 0:
                return False
            held = {(t, p) for t, ps in group.members[c.member_id].assigned.items() for p in ps}
            if c.owned != held:
                return False
        return True

    def wanted(self) -> set[TP]:
        img = self.metadata
        out: set[TP] = set()
        for c in self.clients:
            if c.alive:
                names = set(c.topics) if c.regex is None else {n for n in img.topics if n.startswith("topic-")}
                for name in names:
                    t = img.topic(name)
                    if t is not None:
                        out.update((t.topic_id, p) for p in range(t.partitions))
        return out

    def check_final(self) -> None:
        invariants.invariant_shard_life(self.host.transitions, self.fail)
        invariants.invariant_6_quiet_group_covered(self.shard.committed, GROUP, self.clients, self.wanted(), self.fail)
        shard = self.shard
        for _ in range(10_000):  # let writes in flight be read back (a few ms of simulated time)
            if shard.caught_up and shard.committed_offset >= self.log.end.get(0, 0):
                break
            self.loop.step()
        else:
            self.fail("the shard never caught up with the log")
        # 3. A new owner loading the full log, and the compacted log, gets the same state.
        invariants.invariant_3_replay_matches(shard, self.log, self.fail, full=True)
        self.log.compact(0, keep_head=0)
        invariants.invariant_3_replay_matches(shard, self.log, self.fail, full=True)


def _fmt(epochs: Any) -> str:
    return ",".join(f"{t}:{sorted(ps)}" for t, ps in sorted(epochs.items()) if ps) or "[]"


def run_seed(seed: int, **kwargs: Any) -> Simulation:
    return Simulation(Scenario.random(seed, **kwargs)).run()


def run_many(seeds: range, **kwargs: Any) -> Counter[str]:
    """Run every seed; raise on the first violation with the seed in the message."""
    stats: Counter[str] = Counter()
    for seed in seeds:
        stats.update(run_seed(seed, **kwargs).stats)
    return stats
