"""Online migration with real clients: a classic group rolled member by member to the consumer
protocol and back, consuming throughout, every partition owned by exactly one member at a time
(checked on every rebalance callback) and no committed offset lost."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from tests.clients.support import Member, Ownership, Record, create_topic, drive, produce, settled
from tests.clients.test_rebalance import CLASSIC, CLASSIC_RACES, QUIET
from tests.integration.serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 6
PER_PARTITION = 5
PHASE_TIMEOUT = 60


def group_type(sidecar: ServeProcess, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": sidecar.bootstrap})
    listed = admin.list_consumer_groups(request_timeout=20).result()
    (found,) = [g for g in listed.valid if g.group_id == group]
    return str(found.type.name).lower()


@pytest.mark.parametrize("assignor", ["cooperative-sticky", "range"])
def test_roll_classic_to_consumer_and_back(
    assignor: str, bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-group"
    create_topic(bootstrap, topic, PARTITIONS)
    ownership = Ownership()
    everyone: list[Member] = []
    classic_conf = {**CLASSIC, "partition.assignment.strategy": assignor}
    consumer_conf = {"group.protocol": "consumer"}
    # During a conversion a commit can race a generation or epoch change; the member keeps the
    # offsets pending and commits them again.
    tolerated = CLASSIC_RACES | {113}  # STALE_MEMBER_EPOCH

    def member(name: str, conf: dict[str, Any]) -> Member:
        m = Member(name, sidecar.bootstrap, group, topic, ownership, conf, tolerated)
        everyone.append(m)
        return m

    def consumed() -> set[Record]:
        return {r for m in everyone for r in m.records}

    expected: set[Record] = set()

    def settle(members: list[Member], what: str) -> None:
        drive(
            members,
            lambda: expected <= consumed() and settled(members, ownership, PARTITIONS, QUIET),
            PHASE_TIMEOUT,
            what,
            ownership,
        )
        assert ownership.violations == [], ownership.describe()

    try:
        expected |= produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, "start")
        members = [member(f"classic-{i}", classic_conf) for i in range(3)]
        settle(members, "the classic group to settle")
        for step, (new_conf, label) in enumerate([(consumer_conf, "consumer")] * 3 + [(classic_conf, "classic")] * 3):
            leaving = members.pop(0)
            leaving.close()
            members.append(member(f"{label}-{step}", new_conf))
            expected |= produce(sidecar.bootstrap, topic, PER_PARTITION, PARTITIONS, f"roll-{step}")
            settle(members, f"roll step {step} ({leaving.name} -> {members[-1].name})")
            if step in (0, 2):
                assert group_type(sidecar, group) == "consumer"  # upgraded when the first one joined
            if step == 5:
                assert group_type(sidecar, group) == "classic"  # downgraded when the last one left
        assert expected <= consumed()
        high = {p: max(o for q, o in expected if q == p) + 1 for p in range(PARTITIONS)}
        committed = members[0].consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == high
    finally:
        for m in everyone:
            m.close()
