"""Topic rights on ConsumerGroupHeartbeat subscriptions, through a real sidecar with ACLs from a
local file: a regex resolves only to topics the member's principal may DESCRIBE (KIP-848), the
coordinator's log topic never matches; a subscription by name to a topic the principal may not
DESCRIBE is refused with TOPIC_AUTHORIZATION_FAILED (Kafka 4.x)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient
from tests.security.conftest import SaslCluster, Sidecar, sidecar_config
from tests.security.test_authentication import authenticated, create_topic

pytestmark = pytest.mark.integration

# carol may DESCRIBE topics "orders-*" only; alice every topic (the wildcard, which also covers
# the log topic as far as ACLs go); bob none. Each may use its own groups.
ACLS = """
[[acls]]
principal = "User:carol"
resource_type = "GROUP"
resource_name = "carol-"
pattern_type = "PREFIXED"
operation = "READ"

[[acls]]
principal = "User:carol"
resource_type = "TOPIC"
resource_name = "orders-"
pattern_type = "PREFIXED"
operation = "DESCRIBE"

[[acls]]
principal = "User:alice"
resource_type = "GROUP"
resource_name = "alice-"
pattern_type = "PREFIXED"
operation = "READ"

[[acls]]
principal = "User:alice"
resource_type = "TOPIC"
resource_name = "*"
operation = "DESCRIBE"

[[acls]]
principal = "User:bob"
resource_type = "GROUP"
resource_name = "bob-"
pattern_type = "PREFIXED"
operation = "READ"
"""


@pytest.fixture(scope="module")
def acl_sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    directory = tmp_path_factory.mktemp("regex-sidecar")
    acl_file = directory / "acls.toml"
    acl_file.write_text(ACLS)
    port = free_port()
    log_topic = f"__gc_log_{uuid.uuid4().hex[:8]}"
    config = sidecar_config(
        directory / "sidecar.toml",
        sasl_cluster.bootstrap,
        port,
        {"authentication": "required"},
        f'\n[gateway.authorization]\nacls = "file"\nacl_file = "{acl_file}"\nsuper_users = ["User:gcadmin"]\n',
        log_topic=log_topic,
    )
    running = Sidecar(config, port, directory / "sidecar.log", log_topic)
    try:
        yield running
    finally:
        running.stop()


async def topic_names(client: WireClient) -> dict[uuid.UUID, str]:
    answer = await client.call(3, 12, MetadataRequest(topics=None))
    assert isinstance(answer, MetadataResponse)
    return {t.topic_id: t.name for t in answer.topics if t.name is not None}


async def assigned_by_regex(client: WireClient, group: str, regex: str, wait_s: float = 30) -> dict[str, list[int]]:
    """Join ``group`` subscribed to ``regex`` and heartbeat until it is assigned something (or
    ``wait_s`` passes)."""
    member_id, epoch = str(uuid.uuid4()), 0
    assignment: dict[uuid.UUID, list[int]] = {}
    deadline = time.monotonic() + wait_s
    while True:
        request = ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=10_000,
            subscribed_topic_regex=regex if epoch == 0 else None,
            topic_partitions=[],
        )
        answer = await client.call(68, 1, request)
        assert isinstance(answer, ConsumerGroupHeartbeatResponse)
        assert answer.error_code == 0, answer.error_message
        epoch = answer.member_epoch
        if answer.assignment is not None:
            assignment = {tp.topic_id: sorted(tp.partitions) for tp in answer.assignment.topic_partitions}
            if assignment or time.monotonic() > deadline:
                break
        elif time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    names = await topic_names(client)
    # Every assigned id is a topic the caller can see; the log topic (hidden) would show as None.
    return {names.get(topic_id, f"<unknown {topic_id}>"): parts for topic_id, parts in assignment.items()}


def test_regex_resolves_only_to_topics_the_member_may_describe(sasl_cluster: SaslCluster, acl_sidecar: Sidecar) -> None:
    tag = uuid.uuid4().hex[:8]
    orders_a, orders_b, payments = f"orders-{tag}-a", f"orders-{tag}-b", f"payments-{tag}"
    for name, partitions in ((orders_a, 2), (orders_b, 1), (payments, 3)):
        create_topic(sasl_cluster, name, partitions)

    async def scenario() -> None:
        carol = await authenticated(acl_sidecar, "carol")
        alice = await authenticated(acl_sidecar, "alice")
        bob = await authenticated(acl_sidecar, "bob")
        # carol, DESCRIBE on orders-* only, subscribes to everything: she gets orders-* only.
        assert await assigned_by_regex(carol, f"carol-{tag}", ".*") == {orders_a: [0, 1], orders_b: [0]}
        # alice, with DESCRIBE on every topic, in her own group gets more; never the log topic.
        got = await assigned_by_regex(alice, f"alice-{tag}", ".*")
        assert got == {orders_a: [0, 1], orders_b: [0], payments: [0, 1, 2]}
        # bob may DESCRIBE no topic: his regex matches nothing.
        assert await assigned_by_regex(bob, f"bob-{tag}", f".*{tag}.*", wait_s=3) == {}
        for client in (carol, alice, bob):
            await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 180))


def test_a_kip848_librdkafka_consumer_with_a_regex_gets_only_describable_topics(
    sasl_cluster: SaslCluster, acl_sidecar: Sidecar
) -> None:
    from confluent_kafka import Consumer

    tag = uuid.uuid4().hex[:8]
    orders, payments = f"orders-{tag}-lib", f"payments-{tag}-lib"
    for name in (orders, payments):
        create_topic(sasl_cluster, name, 2)
    assigned: set[tuple[str, int]] = set()
    consumer = Consumer(
        {
            "bootstrap.servers": acl_sidecar.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "carol",
            "sasl.password": "carol-secret",
            "group.id": f"carol-lib-{tag}",
            "group.protocol": "consumer",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(
            [f"^.*{tag}.*"], on_assign=lambda c, parts: assigned.update((p.topic, p.partition) for p in parts)
        )
        deadline = time.monotonic() + 30
        while len(assigned) < 2 and time.monotonic() < deadline:
            consumer.poll(0.2)
        # A little longer: nothing of payments-* may arrive later either.
        for _ in range(10):
            consumer.poll(0.2)
    finally:
        consumer.close()
    assert assigned == {(orders, 0), (orders, 1)}


def test_subscription_by_name_needs_describe_on_every_topic(sasl_cluster: SaslCluster, acl_sidecar: Sidecar) -> None:
    """Security review S6: named topics the caller may not DESCRIBE get TOPIC_AUTHORIZATION_FAILED
    and no member, epoch, topic id or partition count; the rest of the scenario stays served."""
    tag = uuid.uuid4().hex[:8]
    orders, payroll = f"orders-{tag}-named", f"payroll-{tag}"
    for name in (orders, payroll):
        create_topic(sasl_cluster, name, 2)

    async def heartbeat(client: WireClient, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        answer = await client.call(68, 1, request)
        assert isinstance(answer, ConsumerGroupHeartbeatResponse)
        return answer

    def join(group: str, member_id: str, topics: list[str]) -> ConsumerGroupHeartbeatRequest:
        return ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member_id,
            member_epoch=0,
            rebalance_timeout_ms=10_000,
            subscribed_topic_names=topics,
            topic_partitions=[],
        )

    async def scenario() -> None:
        carol = await authenticated(acl_sidecar, "carol")
        bob = await authenticated(acl_sidecar, "bob")
        group, member = f"carol-{tag}-named", str(uuid.uuid4())
        # carol may DESCRIBE orders-* only: one other name refuses the whole subscription.
        refused = await heartbeat(carol, join(group, member, [orders, payroll]))
        assert (refused.error_code, refused.error_message) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        assert (refused.member_id, refused.member_epoch, refused.assignment) == (None, 0, None)
        # Nothing was created: not even the group.
        again = await heartbeat(carol, ConsumerGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=1))
        assert again.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        # bob may DESCRIBE no topic, not even a missing one (no existence oracle).
        for topics in ([payroll], [f"missing-{tag}"]):
            answer = await heartbeat(bob, join(f"bob-{tag}", str(uuid.uuid4()), topics))
            assert answer.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and answer.assignment is None
        # Topics carol may DESCRIBE are served as before.
        joined = await heartbeat(carol, join(group, member, [orders]))
        assert joined.error_code == ErrorCode.NONE and joined.member_epoch >= 1
        for client in (carol, bob):
            await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
