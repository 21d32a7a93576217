"""confluent-kafka (librdkafka) consumer groups through the gateway: KIP-848 and classic.

One scenario, three protocols: three members share six partitions, a fourth joins, one leaves,
everyone commits, and after the whole group has gone a new member resumes from the committed
offsets. Then static membership: an instance restarted with the same group.instance.id takes its
partitions back without anyone else rebalancing. Every rebalance callback is checked against a
shared ownership map, so a partition assigned to one member while another still holds it fails
the test at once.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from tests.clients.conftest import HEARTBEAT_INTERVAL_MS
from tests.clients.support import Member, Ownership, Record, create_topic, drive, produce, settled
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 6
PER_PARTITION = 10
QUIET = 2.5  # seconds without a rebalance callback before a group counts as settled
PHASE_TIMEOUT = 40

CLASSIC = {"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
# A classic commit sent just as the group moves to a new generation fails, in Kafka too; the member
# keeps the offsets pending and commits them again (or, in its revoke callback, gives them up).
CLASSIC_RACES = frozenset({KafkaError.ILLEGAL_GENERATION, KafkaError.REBALANCE_IN_PROGRESS})


@dataclass(frozen=True)
class Protocol:
    conf: dict[str, Any]
    incremental: bool  # members keep what does not move
    tolerated: frozenset[int] = frozenset()  # commit errors a member may see during a rebalance


PROTOCOLS = {
    # KIP-848: server-side assignment (uniform), incremental reconciliation. Commits of owned
    # partitions never fail (KIP-1251 assignment epochs).
    "consumer": Protocol({"group.protocol": "consumer"}, True),
    # Classic eager: every rebalance revokes everything first.
    "classic-range": Protocol({**CLASSIC, "partition.assignment.strategy": "range"}, False, CLASSIC_RACES),
    # Classic cooperative (KIP-429): only the partitions that move are revoked.
    "classic-cooperative-sticky": Protocol(
        {**CLASSIC, "partition.assignment.strategy": "cooperative-sticky"}, True, CLASSIC_RACES
    ),
}


def test_server_side_heartbeat_interval_comes_from_the_environment(sidecar: ServeProcess, unique_name: str) -> None:
    """GROUPCOORD_GROUP reached the coordinator: a KIP-848 member is told to heartbeat every second."""

    async def main() -> ConsumerGroupHeartbeatResponse:
        client = await WireClient.connect("127.0.0.1", sidecar.port)
        try:
            join = ConsumerGroupHeartbeatRequest(
                group_id=unique_name,
                member_epoch=0,
                rebalance_timeout_ms=5000,
                subscribed_topic_names=[unique_name],
                topic_partitions=[],
            )
            joined = await client.call(68, 0, join)
            assert isinstance(joined, ConsumerGroupHeartbeatResponse)
            leave = ConsumerGroupHeartbeatRequest(
                group_id=unique_name, member_id=joined.member_id or "", member_epoch=-1
            )
            await client.call(68, 0, leave)
            return joined
        finally:
            await client.close()

    joined = asyncio.run(asyncio.wait_for(main(), 30))
    assert joined.error_code == 0, joined
    assert joined.heartbeat_interval_ms == HEARTBEAT_INTERVAL_MS


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_group_rebalances_commits_and_resumes(
    protocol: str, bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    spec = PROTOCOLS[protocol]
    incremental = spec.incremental
    topic, group = unique_name, f"{unique_name}-group"
    create_topic(bootstrap, topic, PARTITIONS)
    ownership = Ownership()
    everyone: list[Member] = []

    def member(name: str) -> Member:
        m = Member(name, sidecar.bootstrap, group, topic, ownership, spec.conf, spec.tolerated)
        everyone.append(m)
        return m

    def consumed() -> list[Record]:
        return [r for m in everyone for r in m.records]

    def caught_up_and_settled(members: list[Member], expected: set[Record]) -> Any:
        return lambda: len(consumed()) >= len(expected) and settled(members, ownership, PARTITIONS, QUIET)

    try:
        # 1. Three members: every partition assigned exactly once, two each.
        expected = produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "a")
        members = [member(f"m{i}") for i in range(3)]
        drive(members, caught_up_and_settled(members, expected), PHASE_TIMEOUT, "three members to settle", ownership)
        assert ownership.violations == []
        assert sorted(len(ownership.of(m.name)) for m in members) == [2, 2, 2]

        # 2. A fourth member joins while records keep arriving.
        before = {m.name: ownership.of(m.name) for m in members}
        mark = len(ownership.history)
        members.append(member("m3"))
        arriving = produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "b")
        expected |= arriving
        drive(
            members, caught_up_and_settled(members, expected), PHASE_TIMEOUT, "the fourth member to settle", ownership
        )
        assert ownership.violations == []
        after = {m.name: ownership.of(m.name) for m in members}
        assert after["m3"], ownership.describe()
        if incremental:
            for name, kept in before.items():
                # Only shrinks: nothing new, and what it keeps was never revoked in between.
                assert after[name] <= kept, ownership.describe()
                assert ownership.since(mark, name, "assign") == set(), ownership.describe()
                assert ownership.since(mark, name, "revoke") == kept - after[name], ownership.describe()
                assert ownership.since(mark, name, "lost") == set(), ownership.describe()
                # It kept consuming its partitions through the rebalance.
                keeper = next(m for m in members if m.name == name)
                assert {r for r in arriving if r[0] in after[name]} <= set(keeper.records)

        # 3. A member leaves: its partitions move to the others.
        leaving = members.pop(0)
        gone = ownership.of(leaving.name)
        before = {m.name: ownership.of(m.name) for m in members}
        mark = len(ownership.history)
        leaving.close()
        assert ownership.of(leaving.name) == set(), ownership.describe()
        expected |= produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "c")
        drive(members, caught_up_and_settled(members, expected), PHASE_TIMEOUT, "the leave to settle", ownership)
        assert ownership.violations == []
        after = {m.name: ownership.of(m.name) for m in members}
        assert gone <= set().union(*after.values())
        if incremental:
            for name, kept in before.items():
                assert kept <= after[name], ownership.describe()
                assert ownership.since(mark, name, "revoke") == set(), ownership.describe()
                assert ownership.since(mark, name, "lost") == set(), ownership.describe()

        # 4. Everything consumed and committed; twice only after a commit that lost a race.
        assert ownership.violations == []
        assert set(consumed()) == expected
        if not any(m.commit_errors for m in everyone):
            assert len(consumed()) == len(expected)
        high = {p: max(o for q, o in expected if q == p) + 1 for p in range(PARTITIONS)}
        committed = members[0].consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == high

        # 5. The whole group goes; a new member resumes exactly at the committed offsets.
        for m in members:
            m.close()
        later = produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "d")
        fresh = member("m4")
        drive([fresh], lambda: len(fresh.records) >= len(later), PHASE_TIMEOUT, "the new member to catch up", ownership)
        assert sorted(fresh.records) == sorted(later)
        assert all(o >= high[p] for p, o in fresh.records)
        assert ownership.violations == []
        expected |= later
        assert set(consumed()) == expected
    finally:
        for m in everyone:
            m.close()


@pytest.mark.parametrize("protocol", ["consumer", "classic-range"])
def test_static_member_restart_keeps_its_partitions_without_a_rebalance(
    protocol: str, bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    """KIP-345 / KIP-848 static membership: an instance that restarts with the same group.instance.id
    gets its partitions back and nobody else is revoked anything, even with the eager protocol."""
    spec = PROTOCOLS[protocol]
    topic, group = unique_name, f"{unique_name}-group"
    create_topic(bootstrap, topic, PARTITIONS)
    ownership = Ownership()
    everyone: list[Member] = []

    def member(name: str, instance: str) -> Member:
        conf = {**spec.conf, "group.instance.id": instance}
        m = Member(name, sidecar.bootstrap, group, topic, ownership, conf, spec.tolerated)
        everyone.append(m)
        return m

    try:
        expected = produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "a")
        members = [member(f"m{i}", f"instance-{i}") for i in range(3)]

        def caught_up_and_settled() -> bool:
            total = sum(len(m.records) for m in everyone)
            return total >= len(expected) and settled(members, ownership, PARTITIONS, QUIET)

        drive(members, caught_up_and_settled, PHASE_TIMEOUT, "three static members to settle", ownership)
        before = {m.name: ownership.of(m.name) for m in members}
        mark = len(ownership.history)

        # Restart instance-1: a new client (new member id) with the same instance id.
        restarted = members.pop(1)
        restarted.close()
        members.insert(1, member("m1-restarted", "instance-1"))
        expected |= produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "b")
        drive(members, caught_up_and_settled, PHASE_TIMEOUT, "the restarted instance to settle", ownership)
        # Watch past the classic session timeout (6 s): the replaced member id must not expire into a rebalance.
        watch_until = time.monotonic() + 7
        drive(members, lambda: time.monotonic() >= watch_until, 15, "the watch window", ownership)

        assert ownership.violations == []
        assert ownership.of("m1-restarted") == before[restarted.name], ownership.describe()
        for name in ("m0", "m2"):
            assert ownership.of(name) == before[name], ownership.describe()
            for kind in ("assign", "revoke", "lost"):
                assert ownership.since(mark, name, kind) == set(), ownership.describe()
        consumed = [r for m in everyone for r in m.records]
        assert set(consumed) == expected
        if not any(m.commit_errors for m in everyone):
            assert len(consumed) == len(expected)
    finally:
        for m in everyone:
            m.close()
