"""Client models, written once: how the Java consumer reacts to the coordinator's answers.

The client-side assignors of classic consumers (range for eager clients, a sticky cooperative one
for KIP-429 clients) and the assignment bytes they exchange are here too.

``ConsumerClient`` is a KIP-848 consumer (client-generated member id, KIP-1082): it takes new
partitions at once, gives revoked ones up only after its revocation callback (committing them
first), acknowledges by sending its owned partitions, rejoins from epoch 0 without its partitions
on FENCED_MEMBER_EPOCH/UNKNOWN_MEMBER_ID, and retries on coordinator errors after a back-off.
The simulation owns the transport: ``send`` is called with a request and must arrange for
``on_response`` (or ``on_timeout``) to be called later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.errors import ErrorCode
from coordinator.groups.classic import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
)
from coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from coordinator.messages.schema import topic_id_string
from tests.messages import cg_request, owned_topic

TP = tuple[str, int]  # (topic id or name, partition)
REBALANCE_TIMEOUT_MS = 2500

COORDINATOR_ERRORS = (
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_SERVER_ERROR,
)


@dataclass
class ConsumerClient:
    slot: int
    group: str
    topics: list[str]
    incarnation: int = 0
    member_id: str = ""
    epoch: int = 0
    owned: set[TP] = field(default_factory=set)
    alive: bool = False
    in_flight: int = 0  # sequence number of the request awaited, 0 = none
    need_full: bool = True
    last_sent_owned: frozenset[TP] | None = None
    reconciling: bool = False
    pending_target: frozenset[TP] | None = None
    revoking: set[TP] = field(default_factory=set)  # given up when the revocation callback ends
    rediscover: bool = False  # look the coordinator up again before the next request

    def start(self) -> None:
        self.incarnation += 1
        self.alive = True
        self.member_id = f"m{self.slot}-{self.incarnation}"
        self.epoch = 0
        self.owned = set()
        self.in_flight = 0
        self.need_full = True
        self.reconciling = False
        self.pending_target = None
        self.last_sent_owned = None

    def crash(self) -> None:
        self.alive = False
        self.owned = set()

    def heartbeat(self) -> tuple[ConsumerGroupHeartbeatRequest, frozenset[TP] | None]:
        """The next heartbeat, full after a (re)join or a lost answer; owned partitions only when
        they changed since last sent."""
        full = self.need_full or self.epoch == 0
        owned = frozenset(self.owned) if self.epoch else frozenset()
        send_owned = full or owned != self.last_sent_owned
        request = cg_request(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.epoch,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS if full else -1,
            subscribed_topic_names=list(self.topics) if full else None,
            topic_partitions=_owned_list(owned) if send_owned else None,
        )
        self.need_full = False
        if send_owned:
            self.last_sent_owned = owned
        return request, owned if send_owned else None

    def on_timeout(self) -> None:
        self.in_flight = 0
        self.need_full = True

    def on_response(self, resp: ConsumerGroupHeartbeatResponse, reconcile_delay: Callable[[], int]) -> str:
        """Apply an answer; returns what to do next: "fenced", "retry", "revoke" (after the
        callback delay, call ``revoked``), "ack" (send now) or "beat" (at the interval)."""
        self.in_flight = 0
        err = resp.error_code
        if err in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.owned = set()
            self.epoch = 0
            self.need_full = True
            self.reconciling = False
            self.pending_target = None
            self.revoking = set()
            return "fenced"
        if err != ErrorCode.NONE:
            self.need_full = True
            self.rediscover = err in COORDINATOR_ERRORS
            return "retry"
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            target = frozenset(
                (topic_id_string(tp.topic_id), p) for tp in resp.assignment.topic_partitions for p in tp.partitions
            )
            return self.reconcile(target)
        return "beat"

    def reconcile(self, target: frozenset[TP]) -> str:
        if self.reconciling:
            self.pending_target = target
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


def _owned_list(owned: frozenset[TP]) -> list[ConsumerGroupHeartbeatRequestTopicPartitions]:
    per: dict[str, list[int]] = {}
    for t, p in sorted(owned):
        per.setdefault(t, []).append(p)
    return [owned_topic(t, ps) for t, ps in per.items()]


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
