"""Client models, written once: how the Java consumer reacts to the coordinator's answers.

Every simulation workload uses these models, and every request message the simulations send is
built by the factories at the top of this file (one place to adapt when the message classes
change). The models hold no transport: a workload sends the request a model builds, and feeds
the answer (or a time-out) back; the model returns what to do next as a short action name.

``ConsumerClient`` is a KIP-848 consumer (``group.protocol=consumer``, client-generated member id
as KIP-1082), as Kafka's ``ConsumerMembershipManager`` and ``AbstractHeartbeatRequestManager``:

- it takes newly assigned partitions at once when nothing has to be revoked; otherwise it runs
  the revocation callback first (committing what it gives up), then takes the newest target;
- it acknowledges by sending its owned partitions, which it sends only when they changed or on
  a full heartbeat (after a (re)join or a lost answer);
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are lost (no commit), it rejoins from
  epoch 0 with the same member id;
- NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE: look the coordinator up again and retry;
  COORDINATOR_LOAD_IN_PROGRESS: retry after a back-off;
- any other error (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
  GROUP_ID_NOT_FOUND, ...) is fatal: the application's ``poll`` throws and the member stops.

``ClassicClient`` is a classic consumer (``AbstractCoordinator`` + ``ConsumerCoordinator``),
eager while an eager assignor (range) is configured, cooperative (KIP-429) otherwise:

- before a (re)join an eager client revokes everything; a cooperative one keeps its partitions
  and lists them in its subscription, gives up only what the new assignment leaves out, and then
  rejoins at once so a second rebalance can hand those out;
- UNKNOWN_MEMBER_ID (join, sync, heartbeat): generation and member id are reset and the
  partitions are lost; ILLEGAL_GENERATION (sync, heartbeat): the generation is reset and the
  partitions are lost, the member id is kept; both rejoin at once. A heartbeat error about a
  generation the client has already left is ignored (``generationUnchanged``);
- MEMBER_ID_REQUIRED / REBALANCE_IN_PROGRESS: rejoin at once (with the member id given);
  coordinator errors on join/sync: back off, then join again; on a heartbeat: retry later;
- FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, INVALID_SESSION_TIMEOUT
  are fatal; an answer the client does not expect (ILLEGAL_GENERATION to a JoinGroup, say) makes
  ``poll`` throw a KafkaException: ``"unexpected"``, which the workloads treat as a violation;
- only dynamic members send LeaveGroup when they close (static members rely on the session
  timeout, as since Kafka 2.3).

The client-side assignors of classic consumers (range for eager clients, a sticky cooperative one
for KIP-429 clients) and the assignment bytes they exchange are here too.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
)
from groupcoord.coordinator.messages.schema import topic_id_string
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from tests import messages

TP = tuple[str, int]  # (topic id or name, partition)
REBALANCE_TIMEOUT_MS = 2500

# --- request factories: every request the simulations send is built here ----------------------


def consumer_heartbeat_request(
    group: str,
    member_id: str,
    epoch: int,
    *,
    instance_id: str | None = None,
    rebalance_timeout_ms: int = -1,
    topics: list[str] | None = None,
    regex: str | None = None,
    assignor: str | None = None,
    owned: Iterable[TP] | None = None,
) -> ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat; ``None`` fields are "unchanged since the last heartbeat"."""
    return messages.cg_request(
        group,
        member_id,
        epoch,
        instance_id=instance_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions=None if owned is None else _by_topic(owned),
    )


def commit_request(
    group: str, member_id: str, epoch: int, offsets: Mapping[str, Iterable[tuple[int, int]]]
) -> OffsetCommitRequest:
    """OffsetCommit of ``{topic name: [(partition, offset), ...]}`` (the edge resolves topic ids;
    ``commit_offsets`` in ``shard_api`` names them as it would)."""
    return messages.commit_request(
        group,
        [
            messages.commit_topic(name, [messages.commit_partition(p, o) for p, o in parts])
            for name, parts in sorted(offsets.items())
        ],
        generation_id_or_member_epoch=epoch,
        member_id=member_id,
    )


def join_group_request(
    group: str,
    member_id: str,
    protocols: Iterable[tuple[str, bytes]],
    *,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    instance_id: str | None = None,
) -> JoinGroupRequest:
    """JoinGroup; the client's API version and id travel beside it (``shard_api.join_group``)."""
    return messages.join_request(
        group,
        session_timeout_ms,
        member_id,
        protocol_type="consumer",
        protocols=[messages.join_protocol(name, metadata) for name, metadata in protocols],
        rebalance_timeout_ms=rebalance_timeout_ms,
        group_instance_id=instance_id,
    )


def sync_group_request(
    group: str,
    generation: int,
    member_id: str,
    protocol_name: str | None,
    assignments: Mapping[str, bytes],
    instance_id: str | None = None,
) -> SyncGroupRequest:
    return messages.sync_request(
        group,
        generation,
        member_id,
        group_instance_id=instance_id,
        protocol_type="consumer",
        protocol_name=protocol_name,
        assignments=dict(sorted(assignments.items())),
    )


def heartbeat_request(group: str, generation: int, member_id: str, instance_id: str | None = None) -> HeartbeatRequest:
    return messages.heartbeat_request(group, generation, member_id, instance_id)


def leave_group_request(group: str, member_id: str, instance_id: str | None = None) -> LeaveGroupRequest:
    return messages.leave_request(group, members=[messages.member_identity(member_id, instance_id)])


def _by_topic(owned: Iterable[TP]) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
    per: dict[str, list[int]] = {}
    for t, p in sorted(owned):
        per.setdefault(t, []).append(p)
    return [messages.owned_topic(t, ps) for t, ps in per.items()]


# --- KIP-848 consumer ----------------------------------------------------------------------------

RETRY_WITH_LOOKUP = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
FENCED = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)


@dataclass
class ConsumerClient:
    slot: int
    group: str
    topics: list[str]
    instance_id: str | None = None
    regex: str | None = None
    assignor: str | None = None
    rebalance_timeout_ms: int = REBALANCE_TIMEOUT_MS
    incarnation: int = 0
    member_id: str = ""
    epoch: int = 0
    owned: set[TP] = field(default_factory=set)
    alive: bool = False
    in_flight: int = 0  # sequence number of the request awaited, 0 = none, -1 = paused
    need_full: bool = True
    last_sent_owned: frozenset[TP] | None = None
    reconciling: bool = False
    pending_target: frozenset[TP] | None = None
    revoking: set[TP] = field(default_factory=set)  # given up when the revocation callback ends
    rediscover: bool = False  # look the coordinator up again before the next request
    error: ErrorCode = ErrorCode.NONE  # the fatal error that stopped it

    def start(self) -> None:
        """A new process (incarnation) with a new member id, from epoch 0, owning nothing."""
        self.incarnation += 1
        self.alive = True
        self.member_id = f"m{self.slot}-{self.incarnation}"
        self.epoch = 0
        self.owned = set()
        self.in_flight = 0
        self.need_full = True
        self.reconciling = False
        self.pending_target = None
        self.revoking = set()
        self.last_sent_owned = None
        self.error = ErrorCode.NONE

    def crash(self) -> None:
        """The process dies: a dead process owns nothing."""
        self.alive = False
        self.owned = set()

    def heartbeat(self) -> ConsumerGroupHeartbeatRequest:
        """The next heartbeat: everything after a (re)join or a lost answer; the owned
        partitions only when they changed since last sent."""
        full = self.need_full or self.epoch == 0
        owned = frozenset(self.owned) if self.epoch else frozenset()
        send_owned = full or owned != self.last_sent_owned
        request = consumer_heartbeat_request(
            self.group,
            self.member_id,
            self.epoch,
            instance_id=self.instance_id if full else None,
            rebalance_timeout_ms=self.rebalance_timeout_ms if full else -1,
            topics=(list(self.topics) if self.regex is None else []) if full else None,
            regex=self.regex if full else None,
            assignor=self.assignor if full else None,
            owned=owned if send_owned else None,
        )
        self.need_full = False
        if send_owned:
            self.last_sent_owned = owned
        return request

    def leave(self) -> ConsumerGroupHeartbeatRequest:
        """Close: the partitions are given up (the caller commits them first) and the leave
        heartbeat is sent (epoch -2 for a static member, which keeps its place)."""
        self.owned = set()
        self.alive = False
        return consumer_heartbeat_request(
            self.group, self.member_id, -2 if self.instance_id is not None else -1, instance_id=self.instance_id
        )

    def on_timeout(self) -> None:
        """No answer in time: the connection is dropped, the coordinator looked up again, and
        the next heartbeat is a full one."""
        self.in_flight = 0
        self.need_full = True
        self.rediscover = True

    def on_response(self, resp: ConsumerGroupHeartbeatResponse) -> str:
        """Apply an answer; returns what to do next: "fenced" (rejoin soon), "retry" (after a
        back-off), "fatal" (the member stopped), "revoke" (after the callback, call
        ``revoked``), "ack" (send now) or "beat" (at the interval)."""
        self.in_flight = 0
        err = ErrorCode(resp.error_code)
        if err in FENCED:
            self.owned = set()
            self.epoch = 0
            self.need_full = True
            self.reconciling = False
            self.pending_target = None
            self.revoking = set()
            return "fenced"
        if err in RETRY_WITH_LOOKUP or err is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self.need_full = True
            self.rediscover = err in RETRY_WITH_LOOKUP
            return "retry"
        if err is not ErrorCode.NONE:
            self.error = err
            self.crash()
            return "fatal"
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            target = frozenset(
                (topic_id_string(tp.topic_id), p) for tp in resp.assignment.topic_partitions for p in tp.partitions
            )
            return self.reconcile(target)
        return "beat"

    def reconcile(self, target: frozenset[TP]) -> str:
        if self.reconciling:
            self.pending_target = target  # only the newest target is applied after the callback
            return "beat"
        if self.owned - target:
            self.reconciling = True
            self.revoking = self.owned - target
            self.pending_target = target
            return "revoke"
        self.owned = set(target)
        return "ack" if frozenset(self.owned) != self.last_sent_owned else "beat"

    def revoked(self) -> str:
        """The revocation callback finished: give up what the latest target no longer has."""
        self.reconciling = False
        self.owned -= self.revoking
        target, self.pending_target = self.pending_target, None
        assert target is not None
        return self.reconcile(target)


# --- classic consumer ----------------------------------------------------------------------------

CLASSIC_FATAL = (
    ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    ErrorCode.GROUP_MAX_SIZE_REACHED,
    ErrorCode.INVALID_SESSION_TIMEOUT,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)
CLASSIC_BACKOFF = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,) + RETRY_WITH_LOOKUP
EAGER_ASSIGNORS = ("range",)


@dataclass
class ClassicClient:
    name: str
    group: str
    topics: dict[str, int]  # subscription; the leader's metadata for its assignor
    assignors: tuple[str, ...]  # in preference order
    instance_id: str | None = None
    api_version: int = 9
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 20_000
    member_id: str = ""
    generation: int = -1
    protocol_name: str | None = None
    owned: set[TP] = field(default_factory=set)
    status: str = "idle"  # idle | joining | syncing | stable | backoff | dead
    awaiting: Hashable | None = None  # token of the JoinGroup/SyncGroup awaited
    assignments: dict[str, bytes] = field(default_factory=dict)  # the leader's plan to send
    followup_generation: int | None = None
    error: ErrorCode = ErrorCode.NONE  # the fatal error that stopped it

    @property
    def eager(self) -> bool:
        """The Java consumer is eager as long as an eager assignor is configured (KIP-429)."""
        return any(a in EAGER_ASSIGNORS for a in self.assignors)

    @property
    def alive(self) -> bool:
        return self.status != "dead"

    def subscription(self) -> bytes:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.owned):
            by_topic.setdefault(t, []).append(p)
        return encode_subscription(
            Subscription(
                topics=tuple(sorted(self.topics)),
                owned_partitions=tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items()),
                generation_id=self.generation,
            )
        )

    def join(self, token: Hashable) -> JoinGroupRequest:
        """onJoinPrepare, then JoinGroup: an eager client revokes everything first."""
        if self.eager:
            self.owned = set()
        self.status = "joining"
        self.awaiting = token
        metadata = self.subscription()
        return join_group_request(
            self.group,
            self.member_id,
            [(name, metadata) for name in self.assignors],
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            instance_id=self.instance_id,
        )

    def on_join(self, resp: JoinGroupResponse) -> str:
        """Returns "sync" (send ``sync``), "join" (rejoin now), "backoff" (rejoin after a
        back-off), "fatal" or "unexpected"."""
        self.awaiting = None
        err = ErrorCode(resp.error_code)
        if err is ErrorCode.NONE:
            self.member_id = resp.member_id
            self.generation = resp.generation_id
            self.protocol_name = resp.protocol_name
            self.assignments = {}
            self.followup_generation = None
            if resp.leader == self.member_id and not resp.skip_assignment:
                self.assignments = self.assign(resp.protocol_name, resp.members)
                handed_out = {tp for a in self.assignments.values() for tp in from_assignment_bytes(a)}
                if self.every_partition() - handed_out:
                    self.followup_generation = resp.generation_id
            self.status = "syncing"
            return "sync"
        if err is ErrorCode.MEMBER_ID_REQUIRED:
            # Java keeps the given member id in a generation with no id (-1) and no protocol.
            self.member_id, self.generation, self.protocol_name = resp.member_id, -1, None
            return "join"
        if err is ErrorCode.UNKNOWN_MEMBER_ID:
            self.reset(forget_member_id=True)
            return "join"
        if err is ErrorCode.REBALANCE_IN_PROGRESS:
            return "join"
        if err in CLASSIC_BACKOFF:
            self.status = "backoff"
            return "backoff"
        return self.stop(err) if err in CLASSIC_FATAL else self.unexpected(err)

    def assign(self, protocol: str | None, members: Iterable[JoinGroupResponseMember]) -> dict[str, bytes]:
        """The leader runs the assignor the coordinator selected."""
        if protocol == "cooperative-sticky":
            plan = cooperative_sticky_assign(
                {m.member_id: decode_subscription(m.metadata) for m in members}, self.topics
            )
        else:
            plan = range_assign([m.member_id for m in members], self.topics)
        return {m: to_assignment_bytes(tps) for m, tps in plan.items()}

    def every_partition(self) -> set[TP]:
        return {(t, p) for t, n in self.topics.items() for p in range(n)}

    def sync(self, token: Hashable) -> SyncGroupRequest:
        self.status = "syncing"
        self.awaiting = token
        return sync_group_request(
            self.group, self.generation, self.member_id, self.protocol_name, self.assignments, self.instance_id
        )

    def on_sync(self, resp: SyncGroupResponse) -> str:
        """Returns "stable", "join" (rejoin now: KIP-429 after a revocation, or the generation
        moved on), "backoff", "fatal" or "unexpected"."""
        self.awaiting = None
        err = ErrorCode(resp.error_code)
        if err is ErrorCode.NONE:
            assigned = from_assignment_bytes(resp.assignment)
            revoked = self.owned - assigned
            self.owned = assigned
            self.status = "stable"
            if not self.eager and revoked:
                return "join"  # KIP-429: gave something up, so rejoin for it to be handed out
            return "stable"
        if err in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.reset(forget_member_id=err is ErrorCode.UNKNOWN_MEMBER_ID)
            return "join"
        if err is ErrorCode.REBALANCE_IN_PROGRESS:
            return "join"
        if err in CLASSIC_BACKOFF:
            self.status = "backoff"
            return "backoff"
        return self.stop(err) if err in CLASSIC_FATAL else self.unexpected(err)

    def heartbeat(self) -> HeartbeatRequest:
        return heartbeat_request(self.group, self.generation, self.member_id, self.instance_id)

    def on_heartbeat(self, sent: HeartbeatRequest, resp: HeartbeatResponse) -> str:
        """Returns "ok" (heartbeat again at the interval), "join" (rejoin now) or "fatal"."""
        err = ErrorCode(resp.error_code)
        if err is ErrorCode.REBALANCE_IN_PROGRESS:
            return "join" if self.status == "stable" else "ok"
        if err in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            if (sent.generation_id, sent.member_id) != (self.generation, self.member_id):
                return "ok"  # about a generation this client has already left
            self.reset(forget_member_id=err is not ErrorCode.ILLEGAL_GENERATION)
            return self.stop(err) if err is ErrorCode.FENCED_INSTANCE_ID else "join"
        # NONE; coordinator errors (look it up again) and the rest: heartbeat again later.
        return "ok"

    def leave(self) -> LeaveGroupRequest | None:
        """Close: partitions given up; a dynamic member sends LeaveGroup, a static one does not."""
        request = None
        if self.instance_id is None and self.member_id and self.status != "idle":
            request = leave_group_request(self.group, self.member_id)
        self.crash()
        return request

    def reset(self, forget_member_id: bool) -> None:
        """resetStateAndGeneration, then onJoinPrepare with no generation: partitions lost."""
        self.owned = set()
        self.generation = -1
        self.protocol_name = None
        if forget_member_id:
            self.member_id = ""

    def crash(self) -> None:
        self.status = "dead"
        self.owned = set()
        self.awaiting = None

    def stop(self, err: ErrorCode) -> str:
        self.error = err
        self.crash()
        return "fatal"

    def unexpected(self, err: ErrorCode) -> str:
        self.error = err
        self.crash()
        return "unexpected"


# --- client-side assignors ----------------------------------------------------------------------


def range_assign(members: list[str], topics: dict[str, int]) -> dict[str, set[TP]]:
    """Kafka's RangeAssignor with every member subscribed to every topic."""
    out: dict[str, set[TP]] = {m: set() for m in members}
    ordered = sorted(members)
    for topic, count in sorted(topics.items()):
        base, extra = divmod(count, len(ordered))
        start = 0
        for i, member in enumerate(ordered):
            n = base + (1 if i < extra else 0)
            out[member].update((topic, p) for p in range(start, start + n))
            start += n
    return out


def cooperative_sticky_assign(subscriptions: dict[str, Subscription], topics: dict[str, int]) -> dict[str, set[TP]]:
    """Keep what each member owns up to its fair share; a partition over someone's share is
    revoked by leaving it out of everyone's assignment this round; free partitions go to the
    members with the fewest."""
    all_tps = sorted((t, p) for t, n in topics.items() for p in range(n))
    members = sorted(subscriptions)
    claims: dict[TP, tuple[int, str]] = {}
    for member in members:
        sub = subscriptions[member]
        for tps in sub.owned_partitions:
            for p in tps.partitions:
                tp = (tps.topic, p)
                if tps.topic in topics and p < topics[tps.topic]:
                    current = claims.get(tp)
                    if current is None or sub.generation_id > current[0]:
                        claims[tp] = (sub.generation_id, member)
    owned: dict[str, list[TP]] = {m: [] for m in members}
    for tp, (_, member) in sorted(claims.items()):
        owned[member].append(tp)
    base, extra = divmod(len(all_tps), len(members))
    by_claims = sorted(members, key=lambda m: (-len(owned[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_claims)}
    out: dict[str, set[TP]] = {m: set(owned[m][: quota[m]]) for m in members}
    free = [tp for tp in all_tps if tp not in claims]
    for tp in free:
        room = [m for m in members if len(out[m]) < quota[m]]
        target = min(room, key=lambda m: (len(out[m]), m))
        out[target].add(tp)
    return out


def to_assignment_bytes(tps: set[TP]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        by_topic.setdefault(t, []).append(p)
    return encode_assignment(Assignment(tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())))


def from_assignment_bytes(data: bytes) -> set[TP]:
    if not data:
        return set()
    return {(tp.topic, p) for tp in decode_assignment(data).assigned_partitions for p in tp.partitions}
