"""``serve``'s group handler chain over one shard on the simulated log, with a converged KIP-848
group: what ``bench/steady_heartbeat_bench.py`` times and tests/gateway/test_steady_answers.py
checks. Frames go to ``ClientConnection._answer_at_once`` as the gateway hands them on; the
connection's stream keeps the last answer instead of sending it."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.coordinator.gateway import GatewayServer
from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.connection import ClientConnection
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.topics import TopicImage, TopicsImage
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.schema import topic_id_string
from groupcoord.coordinator.observability.gateway import GatewayMetrics
from groupcoord.coordinator.observability.metrics import ShardMetrics
from groupcoord.coordinator.runtime.shard import ShardStatus
from groupcoord.coordinator.security.authorizer import AclAuthorizer
from groupcoord.coordinator.server import group_handler
from groupcoord.coordinator.service.gateway_handler import CoordinatorApiHandler
from groupcoord.coordinator.service.handover_relay import HandoverRelay
from groupcoord.coordinator.service.service import GroupCoordinatorService
from tests.sim.kernel import OneShardRuntime, SimHost, SimLog, sim_loop

HB_KEY, HB_VERSION = 68, 1
GROUP, TOPIC = "steady", "large"


class _Topics:
    """The metadata cache: every topic known (no refresh on a heartbeat)."""

    def knows(self, name: str) -> bool:
        return True


class _Stream:
    """The connection's byte stream: answers counted and the last one kept, not sent."""

    write_paused = False

    def __init__(self) -> None:
        self.written = 0
        self.last = b""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written += 1
        self.last = data


class _Listener:
    node_id = None
    port = 9094


class World:
    """One shard on the simulated log, its service and ``serve``'s handler chain."""

    def __init__(
        self, members: int, partitions: int, converge: bool = True, authorizer: AclAuthorizer | None = None
    ) -> None:
        self.loop = sim_loop()
        self.host = SimHost(SimLog(), self.loop, "o", random.Random(1))
        self.image = TopicsImage.of([TopicImage(TOPIC, topic_id_string(uuid.UUID(int=1)), partitions)])
        self.handlers = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(), metadata=lambda: self.image)
        self.shard = self.host.shard(0, self.handlers)
        self.shard.observer = ShardMetrics()
        self.shard.load()
        self.run(1000)
        assert self.shard.status is ShardStatus.ACTIVE
        self.service = GroupCoordinatorService(OneShardRuntime(self.shard), self.handlers)  # type: ignore[arg-type]
        api = CoordinatorApiHandler(self.service, _Topics())  # type: ignore[arg-type]
        self.relay = relay = HandoverRelay(api, self.service.partition_for)
        self.handler = group_handler(relay, _Topics(), authorizer, frozenset(), frozenset())  # type: ignore[arg-type]
        self.gateway = GatewayServer(
            GatewayConfig(bootstrap_servers=["127.0.0.1:1"], listen_port=0, max_group_request_elements=2 * partitions),
            self.handler,
            observer=GatewayMetrics(),
        )
        self.members = self._converge(members) if converge else {}

    def run(self, ms: int) -> None:
        end = self.loop.clock.now_ms() + ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()

    def _send(self, requests: list[ConsumerGroupHeartbeatRequest]) -> list[ConsumerGroupHeartbeatResponse]:
        context = RequestContext(api_version=HB_VERSION, client_id="bench", client_host="/127.0.0.1")
        handlers = self.handlers

        def heartbeat(r: ConsumerGroupHeartbeatRequest) -> Callable[[Any, int], Any]:
            return lambda s, now: handlers.consumer_group_heartbeat(s, r, now, context)

        futures = [self.shard.submit(heartbeat(r)) for r in requests]
        while not all(f.done() for f in futures):
            self.run(10)
        return [f.result() for f in futures]

    @staticmethod
    def joins(members: int) -> list[ConsumerGroupHeartbeatRequest]:
        """``members`` first heartbeats (epoch 0), one per member, as a mass join sends them."""
        return [
            ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=f"member-{i:05d}",
                member_epoch=0,
                rebalance_timeout_ms=300_000,
                subscribed_topic_names=[TOPIC],
                topic_partitions=[],
            )
            for i in range(members)
        ]

    def _converge(self, members: int) -> dict[str, int]:
        """Join ``members`` at once, then heartbeat (acknowledging every assignment) until every
        member is at the group's epoch with nothing left to acknowledge: member id -> epoch."""
        joins = self.joins(members)
        ids = [join.member_id for join in joins]
        epochs: dict[str, int] = {}
        owned: dict[str, list[ConsumerGroupHeartbeatRequestTopicPartitions] | None] = {}

        def took(member: str, answer: ConsumerGroupHeartbeatResponse) -> None:
            assert answer.error_code == 0, answer
            epochs[member] = answer.member_epoch
            owned[member] = (
                [
                    ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
                    for tp in answer.assignment.topic_partitions
                ]
                if answer.assignment is not None
                else None
            )

        for member, answer in zip(ids, self._send(joins), strict=True):
            took(member, answer)
        for _ in range(20):
            self.loop.clock.advance(1500)  # past the assignment interval
            self.run(0)
            # A member still at epoch 0 (no target yet) joins again, as a client does.
            requests = [
                join
                if epochs[m] == 0
                else ConsumerGroupHeartbeatRequest(
                    group_id=GROUP, member_id=m, member_epoch=epochs[m], topic_partitions=owned[m]
                )
                for m, join in zip(ids, joins, strict=True)
            ]
            answers = self._send(requests)
            for member, answer in zip(ids, answers, strict=True):
                took(member, answer)
            if all(a.assignment is None for a in answers) and len(set(epochs.values())) == 1:
                return epochs
        raise RuntimeError("the group did not converge")

    def frames(self) -> list[bytes]:
        """Each member's steady heartbeat frame, as the gateway hands it on (no length prefix)."""
        return [
            encode_request(
                RequestHeader(HB_KEY, HB_VERSION, 7, "bench"),
                ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=m, member_epoch=e),
            )[4:]
            for m, e in self.members.items()
        ]

    def connections(self, count: int) -> list[ClientConnection]:
        return [ClientConnection(self.gateway, _Listener(), _Stream()) for _ in range(count)]  # type: ignore[arg-type]
