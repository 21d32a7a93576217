"""How a workload runs KIP-848 consumers: the one place where a ``ConsumerClient``'s answer
becomes its next request, so every workload reacts to the same answer the same way.

``ConsumerDriver`` sends heartbeats over the simulated network to a shard, times requests out,
rejoins after a fence, backs off on coordinator errors, runs the revocation callback (committing
first, as the Java consumer does), acknowledges at once, heartbeats at the interval and
auto-commits. A workload subclasses it and says where requests go (``destination``/``shard_at``)
and how commits travel (``commit``); the rest is its scenario.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import Counter
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.schema import topic_id_string
from groupcoord.coordinator.runtime.shard import Shard
from tests.sim import invariants, shard_api
from tests.sim.clients import TP, ConsumerClient
from tests.sim.kernel import Network, SimLoop

REQUEST_TIMEOUT_MS = 1200  # request.timeout.ms, scaled to the simulations' seconds
COMMIT_EVERY_MS = 700  # auto.commit.interval.ms, scaled
FENCED_REJOIN_MS = 50
RETRY_BACKOFF_MS = 300  # retry.backoff.ms, scaled
REVOCATION_CALLBACK_MS = (0, 0, 5, 40, 300)  # how long onPartitionsRevoked takes


class ConsumerDriver(ABC):
    loop: SimLoop
    net: Network
    rng: random.Random
    handlers: GroupCoordinatorShard
    heartbeat_interval_ms: int
    stats: Counter[str]
    trace: list[str]
    seq: int

    # --- what a workload provides --------------------------------------------------------------
    def destination(self, c: ConsumerClient) -> Any:
        """Where the client's next request goes (looked up again after ``c.rediscover``)."""
        return None

    @abstractmethod
    def shard_at(self, destination: Any) -> Shard[Any]: ...

    def heartbeat_op(self, request: ConsumerGroupHeartbeatRequest) -> shard_api.Op:
        return shard_api.consumer_heartbeat(self.handlers, request)

    @abstractmethod
    def commit(self, c: ConsumerClient, parts: set[TP], sync: bool) -> None:
        """Commit ``parts`` (``sync``: before a revocation or a close; otherwise an auto-commit)."""

    @abstractmethod
    def started(self, c: ConsumerClient) -> None:
        """The client (re)started: a new process."""

    @abstractmethod
    def stopped(self, c: ConsumerClient) -> None:
        """A fatal error stopped the client (the application's poll threw)."""

    @abstractmethod
    def fail(self, message: str) -> None: ...

    # --- plumbing --------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.loop.clock.now_ms()

    def at(self, delay_ms: int, fn: Any, *args: Any) -> None:
        self.loop.at(self.now + delay_ms, self.event, fn, args)

    def event(self, fn: Any, args: tuple[Any, ...]) -> None:
        fn(*args)

    def note(self, line: str) -> None:
        self.trace.append(f"{self.now} {line}")

    # --- the consumer's life ---------------------------------------------------------------------
    def start(self, c: ConsumerClient) -> None:
        if c.alive:
            return
        c.start()
        self.note(f"start {c.member_id} instance={c.instance_id}")
        self.started(c)
        self.send(c)
        self.at(COMMIT_EVERY_MS, self.auto_commit, c, c.incarnation)

    def send(self, c: ConsumerClient) -> None:
        if not c.alive or c.in_flight:
            return
        destination = self.destination(c)
        request = c.heartbeat()
        self.seq += 1
        seq = c.in_flight = self.seq
        incarnation = c.incarnation
        self.at(REQUEST_TIMEOUT_MS, self.timeout, c, incarnation, seq)
        if not self.net.request(c.slot, lambda: self.serve(destination, c, incarnation, seq, request)):
            self.note(f"{c.member_id} request lost")

    def leave(self, c: ConsumerClient) -> None:
        """Close: commit, give the partitions up, send the leave heartbeat (answer ignored)."""
        self.commit(c, set(c.owned), sync=True)
        destination, incarnation = self.destination(c), c.incarnation
        request = c.leave()
        self.net.request(c.slot, lambda: self.serve(destination, c, incarnation, 0, request))

    def tick(self, c: ConsumerClient, incarnation: int) -> None:
        if c.alive and c.incarnation == incarnation:
            self.send(c)

    def timeout(self, c: ConsumerClient, incarnation: int, seq: int) -> None:
        if c.alive and c.incarnation == incarnation and c.in_flight == seq:
            c.on_timeout()
            self.send(c)

    def serve(
        self, destination: Any, c: ConsumerClient, incarnation: int, seq: int, request: ConsumerGroupHeartbeatRequest
    ) -> None:
        def answer(response: ConsumerGroupHeartbeatResponse) -> None:
            self.note(
                f"hb {request.member_id}@{request.member_epoch} owned={_fmt(request.topic_partitions)} "
                f"via {destination} -> err={response.error_code} e={response.member_epoch} "
                f"a={'-' if response.assignment is None else _fmt(response.assignment.topic_partitions)}"
            )
            self.net.respond(lambda: self.event(self.on_heartbeat, (c, incarnation, seq, response)))

        shard_api.call(self.shard_at(destination), self.heartbeat_op(request), shard_api.heartbeat_error, answer)

    def on_heartbeat(self, c: ConsumerClient, incarnation: int, seq: int, resp: ConsumerGroupHeartbeatResponse) -> None:
        if not c.alive or c.incarnation != incarnation or c.in_flight != seq:
            return  # a process that died, a duplicate, or a request it already gave up on
        before = c.epoch
        action = c.on_response(resp)
        error = ErrorCode(resp.error_code)
        self.stats[f"hb:{error.name}"] += 1
        if error is ErrorCode.NONE:
            invariants.invariant_2_client_epoch(c.member_id, before, c.epoch, self.fail)
        if action == "fenced":
            self.note(f"{c.member_id} fenced ({error.name}), rejoins")
            self.at(FENCED_REJOIN_MS, self.tick, c, incarnation)
            return
        if action == "retry":
            self.at(RETRY_BACKOFF_MS, self.tick, c, incarnation)
            return
        if action == "fatal":
            self.note(f"{c.member_id} stopped on {c.error.name}")
            self.stats[f"fatal:{c.error.name}"] += 1
            self.stopped(c)
            return
        if action == "revoke":
            self.commit(c, c.revoking, sync=True)  # the consumer commits before it gives partitions up
            self.at(self.rng.choice(REVOCATION_CALLBACK_MS), self.revoked, c, incarnation)
        elif action == "ack":
            self.send(c)  # acknowledge at once
        self.at(self.heartbeat_interval_ms, self.tick, c, incarnation)

    def revoked(self, c: ConsumerClient, incarnation: int) -> None:
        if c.alive and c.incarnation == incarnation and c.reconciling:
            if c.revoked() == "revoke":  # the newest target takes away more
                self.commit(c, c.revoking, sync=True)
                self.at(self.rng.choice(REVOCATION_CALLBACK_MS), self.revoked, c, incarnation)
            self.send(c)  # acknowledge what was given up

    def auto_commit(self, c: ConsumerClient, incarnation: int) -> None:
        if c.alive and c.incarnation == incarnation:
            if c.owned and c.epoch > 0 and c.in_flight >= 0:  # a paused process commits nothing
                self.commit(c, set(c.owned), sync=False)
            self.at(COMMIT_EVERY_MS, self.auto_commit, c, incarnation)


def _fmt(tps: Any) -> str:
    if tps is None:
        return "-"
    return ",".join(f"{topic_id_string(t.topic_id)}:{t.partitions}" for t in tps if t.partitions) or "[]"
