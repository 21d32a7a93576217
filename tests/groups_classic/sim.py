"""A seeded, deterministic simulation of classic-protocol clients against the pure handlers.

Clients behave like the Java consumer: eager ones revoke everything before they rejoin,
cooperative ones (KIP-429) keep their partitions, advertise them in the subscription, and give
up only what the assignment moves away, then rejoin so a second rebalance hands those out.
The leader runs a client-side assignor written here (range for eager, a sticky cooperative one
that never assigns a partition its owner still has to revoke). Besides all-eager and
all-cooperative groups, the two stages of KIP-429's rolling upgrade are simulated: clients
configured with both assignors behave eagerly (as the Java consumer does while an eager
assignor is configured), and the group's protocol is whatever the coordinator's vote selects.

Faults: crashes (a dead process owns nothing), restarts (static members come back with their
group.instance.id and no member id), graceful leaves, new members, and coordinator reloads
(state rebuilt from the log; parked requests fail with NOT_COORDINATOR and clients rejoin).

After every step the checker asserts: no partition is owned by two live clients; generations
never go backwards (live between reloads, and in the log); a follower replaying the decoded log
has the same snapshot, and every Stable/Empty live group equals its replayed record. At the
quiet end every partition is owned by exactly one live member.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from coordinator.errors import ErrorCode
from coordinator.groups.classic import (
    ClassicGroupConfig,
    ClassicGroupsState,
    Subscription,
    TopicPartitions,
    decode_subscription,
    encode_subscription,
)
from coordinator.groups.config import ConsumerGroupConfig
from coordinator.groups.topics import TopicsImage
from coordinator.messages.join_group import JoinGroupResponse, JoinGroupResponseMember
from coordinator.messages.sync_group import SyncGroupResponse
from coordinator.runtime.api import Park
from coordinator.runtime.shard import ShardStatus
from records import RecordType, decode
from tests.messages import heartbeat_request, join_protocol, join_request, leave_request, member_identity, sync_request
from tests.sim import shard_api
from tests.sim.clients import TP, cooperative_sticky_assign, from_assignment_bytes, range_assign, to_assignment_bytes
from tests.sim.kernel import InvariantViolation, SimHost, SimLog, SimLoop

GROUP = "sim-group"
INT_MAX = 2**31 - 1
SESSION_TIMEOUT_MS = 10_000
REBALANCE_TIMEOUT_MS = 20_000
HEARTBEAT_INTERVAL_MS = 3_000


# --- clients ------------------------------------------------------------------------------------


@dataclass
class Client:
    name: str
    instance_id: str | None
    api_version: int
    # Assignors in preference order; a client revokes everything before joining (eager) as long
    # as an eager assignor is among them.
    assignors: tuple[str, ...]
    member_id: str = ""
    generation: int = -1
    owned: set[TP] = field(default_factory=set)
    status: str = "idle"  # idle | joining | syncing | stable | dead
    join_token: Hashable | None = None
    sync_token: Hashable | None = None
    protocol_name: str | None = None
    last_assignments: dict[str, bytes] = field(default_factory=dict)
    followup_generation: int | None = None

    @property
    def eager(self) -> bool:
        return "range" in self.assignors


@dataclass
class Scenario:
    seed: int
    # eager | cooperative | upgrade-1 (range-only and both) | upgrade-2 (both and cooperative-only)
    mode: str
    topics: dict[str, int]
    initial_members: int
    static_share: float
    initial_delay_ms: int
    max_size: int
    chaos_ms: int
    faults: int
    # Chance that a JoinGroup/SyncGroup answer never reaches the client (connection dropped);
    # the client retries, which exercises Kafka's "lost response" paths.
    loss_rate: float

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
        )


class Simulation:
    def __init__(self, scenario: Scenario) -> None:
        self.sc = scenario
        self.rng = random.Random(scenario.seed * 7919 + 1)
        self.config = ClassicGroupConfig(
            initial_rebalance_delay_ms=scenario.initial_delay_ms, max_size=scenario.max_size
        )
        # The real shard over a simulated log, through the production composition: answers
        # (parked ones too) are released once read back, timers run through the shard, and a
        # reload rebuilds the state from the log and fails whatever was waiting.
        self.handlers = shard_api.handlers(TopicsImage.empty, ConsumerGroupConfig(), self.config)
        self.loop = SimLoop()
        self.log = SimLog()
        self.host = SimHost(self.log, self.loop, "sim", random.Random(scenario.seed))
        self.shard = self.host.shard(0, self.handlers)
        self.shard.load()
        self.clients: list[Client] = []
        self.tokens: dict[Hashable, tuple[Client, str]] = {}
        self.next_token = 0
        self.parked: set[Hashable] = set()
        self.last_generation = 0
        self.last_logged_generation = 0
        self.logged = 0  # log entries checked so far
        self.compared_offset = -1
        self.shard_generation = 0
        self.trace: list[str] = []
        self.stats: Counter[str] = Counter()
        self.reloads = 0

    # --- plumbing -----------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    @property
    def state(self) -> ClassicGroupsState:
        """The live state, which handlers see (it includes rebalances in progress)."""
        return self.shard.live.classic

    @property
    def follower(self) -> ClassicGroupsState:
        """The committed state: the replay of what was read back from the log."""
        return self.shard.committed.classic

    def at(self, when: int, kind: str, payload: Any = None) -> None:
        self.loop.at(when, self.dispatch, kind, payload)

    def request(self, client: Client, kind: str, op: shard_api.Op, token: Hashable) -> None:
        def run(state: shard_api.State, now: int) -> Any:
            result = op(state, now)
            if isinstance(result.response, Park):
                self.parked.add(token)
            return result

        self.shard.submit(run).add_done_callback(lambda fut: self.answered(client, kind, token, fut))

    def answered(self, client: Client, kind: str, token: Hashable, fut: Any) -> None:
        exc = fut.exception()
        response = shard_api.ERROR_RESPONSES[kind](shard_api.error_code(exc)) if exc else fut.result()
        if token not in self.parked:
            static_rejoin = kind == "join" and client.instance_id is not None and not client.member_id
            if static_rejoin and response.error_code == 0:
                # A restarted static instance took its old place in a Stable group: no rebalance.
                self.stats["static_rejoin_without_rebalance"] += 1
            if kind == "join" and response.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
                group = self.state.group(GROUP)
                # Legitimate only against members sharing no protocol with the client; after a reload
                # a member is known by its chosen protocol alone, so a newcomer can be refused then
                # (as in Kafka). A group without members must never refuse a consumer.
                if group is None or not group.members:
                    raise InvariantViolation(f"{client.name} refused with INCONSISTENT_GROUP_PROTOCOL by {group}")
        self.parked.discard(token)
        if kind in ("join", "sync", "heartbeat"):
            self.stats[f"{kind}:{ErrorCode(response.error_code).name}"] += 1
        self.deliver(token, response)

    def new_token(self, client: Client, kind: str) -> Hashable:
        self.next_token += 1
        token = self.next_token
        self.tokens[token] = (client, kind)
        return token

    def deliver(self, token: Hashable, response: Any) -> None:
        entry = self.tokens.pop(token, None)
        if entry is None:
            return
        client, kind = entry
        if client.status == "dead":
            return
        current = token in (client.join_token, client.sync_token)
        if current and kind in ("join", "sync") and self.rng.random() < self.sc.loss_rate:
            self.stats[f"lost:{kind}"] += 1
            self.at(self.now + self.rng.randint(100, 2000), "retry", (client, kind, token))
            return
        if kind == "join" and token == client.join_token:
            self.on_join(client, response)
        elif kind == "sync" and token == client.sync_token:
            self.on_sync(client, response)
        elif kind == "heartbeat":
            self.on_heartbeat(client, response)

    # --- client behaviour ---------------------------------------------------------------------

    def subscription(self, client: Client) -> bytes:
        owned: dict[str, list[int]] = {}
        for t, p in sorted(client.owned):
            owned.setdefault(t, []).append(p)
        sub = Subscription(
            topics=tuple(sorted(self.sc.topics)),
            owned_partitions=tuple(TopicPartitions(t, tuple(ps)) for t, ps in owned.items()),
            generation_id=client.generation,
        )
        return encode_subscription(sub)

    def send_join(self, client: Client) -> None:
        if client.eager:
            client.owned = set()  # eager: revoke everything before rejoining
        client.status = "joining"
        metadata = self.subscription(client)
        token = self.new_token(client, "join")
        client.join_token = token
        request = join_request(
            group_id=GROUP,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            member_id=client.member_id,
            protocol_type="consumer",
            protocols=[join_protocol(name, metadata) for name in client.assignors],
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            group_instance_id=client.instance_id,
        )
        join = shard_api.join_group(self.handlers, request, token, client.api_version, client.name)
        self.request(client, "join", join, token)

    def reset(self, client: Client, forget_member_id: bool) -> None:
        client.owned = set()  # partitions lost: the generation is gone
        client.generation = -1
        if forget_member_id:
            client.member_id = ""

    def on_join(self, client: Client, response: JoinGroupResponse) -> None:
        client.join_token = None
        error = ErrorCode(response.error_code)
        if error is ErrorCode.MEMBER_ID_REQUIRED:
            client.member_id = response.member_id
            self.send_join(client)
        elif error in (
            ErrorCode.FENCED_INSTANCE_ID,
            ErrorCode.GROUP_MAX_SIZE_REACHED,
            ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        ):
            # Fatal for the Java consumer: the application gets the exception and stops.
            self.stats[error.name] += 1
            if error is ErrorCode.FENCED_INSTANCE_ID:
                self.fenced(client)
            else:
                self.kill(client)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset(client, forget_member_id=error is ErrorCode.UNKNOWN_MEMBER_ID)
            self.send_join(client)
        elif error is not ErrorCode.NONE:
            self.retry_join(client)
        else:
            client.member_id = response.member_id
            client.generation = response.generation_id
            client.protocol_name = response.protocol_name
            if response.skip_assignment:
                self.stats["skip_assignment"] += 1
            assignments: dict[str, bytes] = {}
            if response.leader == client.member_id and not response.skip_assignment:
                assignments = self.assign(response.protocol_name, response.members)
                withheld = self.every_partition() - {
                    tp for a in assignments.values() for tp in from_assignment_bytes(a)
                }
                client.followup_generation = response.generation_id if withheld else None
            self.send_sync(client, assignments)

    def assign(self, protocol: str | None, members: tuple[JoinGroupResponseMember, ...]) -> dict[str, bytes]:
        ids = [m.member_id for m in members]
        self.stats[f"assignor:{protocol}"] += 1
        if protocol == "cooperative-sticky":
            subs = {m.member_id: decode_subscription(m.metadata) for m in members}
            plan = cooperative_sticky_assign(subs, self.sc.topics)
        else:
            plan = range_assign(ids, self.sc.topics)
        return {m: to_assignment_bytes(tps) for m, tps in plan.items()}

    def send_sync(self, client: Client, assignments: dict[str, bytes]) -> None:
        client.status = "syncing"
        client.last_assignments = assignments
        token = self.new_token(client, "sync")
        client.sync_token = token
        request = sync_request(
            group_id=GROUP,
            generation_id=client.generation,
            member_id=client.member_id,
            group_instance_id=client.instance_id,
            protocol_type="consumer",
            protocol_name=client.protocol_name,
            assignments=dict(sorted(assignments.items())),
        )
        self.request(client, "sync", shard_api.sync_group(self.handlers, request, token), token)

    def on_sync(self, client: Client, response: SyncGroupResponse) -> None:
        client.sync_token = None
        error = ErrorCode(response.error_code)
        if error is ErrorCode.NONE:
            assigned = from_assignment_bytes(response.assignment)
            revoked = client.owned - assigned
            client.owned = assigned
            client.status = "stable"
            if not client.eager and revoked:
                self.stats["cooperative_revocations"] += 1
                self.send_join(client)  # KIP-429: revoked something, so rejoin at once
            elif client.followup_generation == client.generation:
                # KIP-429 relies on the revoking member to rejoin. A static member restarted in a
                # Stable group inherits an assignment that already dropped what its dead
                # predecessor had to revoke, owns nothing, and so never rejoins; the withheld
                # partitions would wait for an unrelated rebalance. This leader therefore forces a
                # follow-up rebalance (a leader's JoinGroup always rebalances) if none came.
                self.at(self.now + 2 * REBALANCE_TIMEOUT_MS, "followup", (client, client.generation))
        elif error is ErrorCode.FENCED_INSTANCE_ID:
            self.fenced(client)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset(client, forget_member_id=error is ErrorCode.UNKNOWN_MEMBER_ID)
            self.send_join(client)
        else:
            self.send_join(client)

    def heartbeat(self, client: Client) -> None:
        token = self.new_token(client, "heartbeat")
        request = heartbeat_request(GROUP, client.generation, client.member_id, client.instance_id)
        self.request(client, "heartbeat", shard_api.heartbeat(self.handlers, request), token)

    def on_heartbeat(self, client: Client, response: Any) -> None:
        if client.status != "stable":
            return
        error = ErrorCode(response.error_code)
        if error is ErrorCode.NONE:
            return
        if error is ErrorCode.FENCED_INSTANCE_ID:
            self.fenced(client)
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset(client, forget_member_id=error is ErrorCode.UNKNOWN_MEMBER_ID)
            self.send_join(client)
        else:
            self.send_join(client)

    def retry_join(self, client: Client) -> None:
        """Back off before retrying, as clients do, so a refused join cannot spin."""
        client.status = "backoff"
        self.at(self.now + 100, "rejoin", client)

    def fenced(self, client: Client) -> None:
        # One process per instance id here, so only a reload can fence a live one: the log may
        # still map its instance id to the member id it had before a replacement that was never
        # persisted (a restart during a rebalance), exactly as in Kafka.
        if not self.reloads:
            self.fail(f"{client.name} fenced although it is the only process of its instance")
        self.kill(client)

    def kill(self, client: Client) -> None:
        client.status = "dead"
        client.owned = set()
        client.join_token = client.sync_token = None

    # --- scenario -----------------------------------------------------------------------------

    def new_client(self, static: bool) -> Client:
        n = len(self.clients)
        client = Client(
            name=f"c{n}",
            instance_id=f"i{n}" if static else None,
            api_version=self.rng.choice([5, 9]) if static else self.rng.choice([3, 9]),
            assignors=self.assignors(),
        )
        self.clients.append(client)
        return client

    def assignors(self) -> tuple[str, ...]:
        both = ("cooperative-sticky", "range")
        choices: dict[str, list[tuple[str, ...]]] = {
            "eager": [("range",)],
            "cooperative": [("cooperative-sticky",)],
            "upgrade-1": [("range",), both],
            "upgrade-2": [both, ("cooperative-sticky",)],
        }
        return self.rng.choice(choices[self.sc.mode])

    def start(self, client: Client) -> None:
        self.send_join(client)
        self.at(self.now + self.rng.randint(1, HEARTBEAT_INTERVAL_MS), "tick", client)

    def run(self, quiet_ms: int = 240_000) -> None:
        for _ in range(self.sc.initial_members):
            self.at(self.rng.randint(0, 2000), "start", self.new_client(self.rng.random() < self.sc.static_share))
        for _ in range(self.sc.faults):
            self.at(self.rng.randint(1000, self.sc.chaos_ms), "fault", None)
        end = self.sc.chaos_ms + quiet_ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()
            self.check()
        self.loop.clock.advance(max(0, end - self.now))
        self.check_quiet()

    def dispatch(self, kind: str, payload: Any) -> None:
        self.trace.append(f"{self.now} {kind} {getattr(payload, 'name', payload)}")
        if kind == "start":
            if payload.status != "dead":  # it may have crashed before it started
                self.start(payload)
        elif kind == "tick":
            client = payload
            if client.status == "dead":
                return
            if client.status == "stable":
                self.heartbeat(client)
            # Jittered, always well inside the session timeout.
            self.at(self.now + self.rng.randint(HEARTBEAT_INTERVAL_MS // 2, 2 * HEARTBEAT_INTERVAL_MS), "tick", client)
        elif kind == "retry":
            client, lost, token = payload
            # Resend what went unanswered, unless the client has moved on meanwhile.
            if lost == "join" and client.status == "joining" and client.join_token == token:
                self.send_join(client)
            elif lost == "sync" and client.status == "syncing" and client.sync_token == token:
                self.send_sync(client, client.last_assignments)
        elif kind == "followup":
            client, generation = payload
            if client.status == "stable" and client.generation == generation:
                self.stats["leader_followup"] += 1
                self.send_join(client)
        elif kind == "rejoin":
            if payload.status == "backoff":
                self.send_join(payload)
        elif kind == "restart":
            old = payload
            client = Client(old.name, old.instance_id, old.api_version, old.assignors)
            self.clients[self.clients.index(old)] = client
            self.start(client)
        elif kind == "fault":
            self.fault()

    def fault(self) -> None:
        alive = [c for c in self.clients if c.status != "dead"]
        roll = self.rng.random()
        if roll < 0.3 and alive:
            victim = self.rng.choice(alive)
            self.trace.append(f"{self.now} crash {victim.name}")
            self.kill(victim)
            if self.rng.random() < 0.7:
                self.at(self.now + self.rng.randint(100, 2 * SESSION_TIMEOUT_MS), "restart", victim)
        elif roll < 0.45 and alive:
            leaver = self.rng.choice(alive)
            self.trace.append(f"{self.now} leave {leaver.name}")
            if leaver.member_id:
                request = leave_request(GROUP, members=[member_identity(leaver.member_id, leaver.instance_id)])
                self.request(
                    leaver, "leave", shard_api.leave_group(self.handlers, request), self.new_token(leaver, "leave")
                )
            self.kill(leaver)
        elif roll < 0.75:
            self.start(self.new_client(self.rng.random() < self.sc.static_share))
        else:
            self.reload()

    def reload(self) -> None:
        """Coordinator failover: rebuild from the log; whatever was waiting fails (clients get
        COORDINATOR_LOAD_IN_PROGRESS and rejoin)."""
        self.trace.append(f"{self.now} reload")
        self.reloads += 1
        self.shard.reload("simulated coordinator failover")

    # --- invariants ---------------------------------------------------------------------------

    def fail(self, message: str) -> NoReturn:
        tail = "\n".join(self.trace[-40:])
        raise InvariantViolation(f"seed {self.sc.seed} at {self.now}: {message}\n{self.sc}\n{tail}")

    def check(self) -> None:
        seen: dict[TP, str] = {}
        for client in self.clients:
            if client.status == "dead":
                continue
            for tp in client.owned:
                if tp in seen:
                    self.fail(f"{tp} owned by {seen[tp]} and {client.name}")
                seen[tp] = client.name
        self.check_log()
        shard = self.shard
        if shard.status is not ShardStatus.ACTIVE:
            return
        group = self.state.group(GROUP)
        if shard.generation != self.shard_generation:
            # Reloaded: a rebalance in progress is soft state, so the generation may go back to
            # the last persisted one (as in Kafka); the log's generations never go back.
            self.shard_generation = shard.generation
            self.last_generation = 0 if group is None else group.generation_id
        if group is not None:
            if group.generation_id < self.last_generation:
                self.fail(f"generation went back from {self.last_generation} to {group.generation_id}")
            self.last_generation = group.generation_id
        if not shard.caught_up or shard.committed_offset == self.compared_offset:
            return
        self.compared_offset = shard.committed_offset
        if not shard.replay_matches():
            self.fail("replayed log differs from the live persisted state")
        for group_id, live in self.state.groups.items():
            if live.state.value in ("Stable", "Empty"):
                replayed = self.follower.group(group_id)
                if replayed is None or replayed.to_record_value() != live.to_record_value():
                    self.fail(f"live {live} is not what its record says")

    def check_log(self) -> None:
        """Generations in the log never go back."""
        entries = self.log.entries.get(0, [])
        for entry in entries[self.logged :]:
            record = decode(entry.key, entry.value)
            if record.type is RecordType.GROUP_METADATA and record.value is not None:
                if record.value.generation < self.last_logged_generation and record.value.members:
                    self.fail(f"logged generation went back to {record.value.generation}")
                self.last_logged_generation = max(self.last_logged_generation, record.value.generation)
        self.logged = len(entries)

    def every_partition(self) -> set[TP]:
        return {(t, p) for t, n in self.sc.topics.items() for p in range(n)}

    def check_quiet(self) -> None:
        alive = [c for c in self.clients if c.status != "dead"]
        group = self.state.group(GROUP)
        every = self.every_partition()
        if not alive:
            return
        if group is None or group.state.value != "Stable":
            self.fail(f"group not stable at the end: {group}")
        for client in alive:
            if client.status != "stable" or client.generation != group.generation_id:
                self.fail(f"{client} not settled in generation {group.generation_id}")
        if set(group.members) != {c.member_id for c in alive}:
            self.fail(f"members {list(group.members)} != live clients {[c.member_id for c in alive]}")
        owned = [tp for c in alive for tp in c.owned]
        if sorted(owned) != sorted(every):
            self.fail(f"partitions not owned exactly once: {sorted(owned)} vs {sorted(every)}")
