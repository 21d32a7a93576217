"""Authentication through the sidecar, against a cluster that requires SASL (local broker behind a SASL front).

Every attack runs on its own connection, and afterwards the victim group's offsets and existence
are checked through an authenticated connection, and the "cluster" (the front) is checked to have
received nothing from an unauthenticated client except ApiVersions.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.delete_groups import DeleteGroupsRequest
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.coordinator.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.coordinator.messages.offset_delete import OffsetDeleteRequest
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.wire_client import WireClient
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.wire import plain_login, sasl_frame, scram_login

pytestmark = pytest.mark.integration

SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}


def admin(bootstrap: str, user: str = "gcadmin") -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": bootstrap, **SASL_CLIENT, "sasl.username": user, "sasl.password": f"{user}-secret"}
    )


def create_topic(cluster: SaslCluster, name: str, partitions: int = 2) -> None:
    client = admin(cluster.bootstrap)  # kept alive until the topic exists
    client.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def commit_request(group: str, topic: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=topic, partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)]
            )
        ],
    )


async def connect(sidecar: Sidecar) -> WireClient:
    return await WireClient.connect("127.0.0.1", sidecar.port)


async def authenticated(sidecar: Sidecar, user: str = "alice") -> WireClient:
    client = await connect(sidecar)
    answer = await plain_login(client, user, f"{user}-secret")
    assert answer.error_code == 0, answer.error_message
    return client


async def committed(client: WireClient, group: str, topic: str) -> int:
    answer = await client.call(9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)]))
    assert isinstance(answer, OffsetFetchResponse)
    (g,) = answer.groups
    assert g.error_code == 0
    for t in g.topics:
        if t.name == topic:
            return t.partitions[0].committed_offset
    return -1


async def listed(client: WireClient) -> set[str]:
    answer = await client.call(16, 4, ListGroupsRequest())
    assert isinstance(answer, ListGroupsResponse)
    return {g.group_id for g in answer.groups}


def attacks(group: str, topic: str) -> dict[str, tuple[int, int, Message]]:
    return {
        "ListGroups": (16, 4, ListGroupsRequest()),
        "DescribeGroups": (15, 5, DescribeGroupsRequest(groups=[group])),
        "ConsumerGroupDescribe": (69, 0, ConsumerGroupDescribeRequest(group_ids=[group])),
        "OffsetFetch": (9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)])),
        "OffsetCommit": (8, 8, commit_request(group, topic, 999_999)),
        "OffsetDelete": (47, 0, OffsetDeleteRequest(group_id=group)),
        "DeleteGroups": (42, 2, DeleteGroupsRequest(groups_names=[group])),
        "JoinGroup": (
            11,
            7,
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
            ),
        ),
        "ConsumerGroupHeartbeat": (
            68,
            0,
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id="",
                member_epoch=0,
                rebalance_timeout_ms=10_000,
                subscribed_topic_names=[topic],
            ),
        ),
        "FindCoordinator": (10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[group])),
        "Metadata": (3, 12, MetadataRequest(topics=None)),
    }


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 120))


@pytest.fixture(scope="module")
def victim(sasl_cluster: SaslCluster, sidecar: Sidecar) -> tuple[str, str]:
    group, topic = f"alice-victim-{uuid.uuid4().hex[:8]}", f"shared-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic)

    async def setup() -> None:
        client = await authenticated(sidecar)
        answer = await client.call(8, 8, commit_request(group, topic, 42))
        assert isinstance(answer, OffsetCommitResponse)
        assert answer.topics[0].partitions[0].error_code == 0
        assert await committed(client, group, topic) == 42
        await client.close()

    run(setup)
    return group, topic


async def assert_victim_intact(sidecar: Sidecar, group: str, topic: str) -> None:
    client = await authenticated(sidecar, "alice")
    assert await committed(client, group, topic) == 42
    assert group in await listed(client)
    await client.close()


@pytest.mark.parametrize("attack", list(attacks("g", "t")))
def test_unauthenticated_request_closes_the_connection(
    attack: str, sasl_cluster: SaslCluster, sidecar: Sidecar, victim: tuple[str, str]
) -> None:
    group, topic = victim
    key, version, body = attacks(group, topic)[attack]
    before = len(sasl_cluster.front.seen)

    async def scenario() -> None:
        bystander = await authenticated(sidecar, "alice")
        attacker = await connect(sidecar)
        attacker.send(key, version, body)
        assert await attacker.closed_by_peer()
        await attacker.close()
        # The other client kept working, and nothing changed.
        assert await committed(bystander, group, topic) == 42
        await bystander.close()
        await assert_victim_intact(sidecar, group, topic)

    run(scenario)
    anonymous = [api for who, api in sasl_cluster.front.seen[before:] if who is None and api != 18]
    assert anonymous == []


def test_forwarded_broker_ports_require_authentication_too(
    sasl_cluster: SaslCluster, sidecar: Sidecar, victim: tuple[str, str]
) -> None:
    """The ports Metadata advertises for the backing brokers are listeners like the coordinator
    port: every attack above, sent there without SASL, closes the connection too."""
    group, topic = victim

    async def scenario() -> None:
        alice = await authenticated(sidecar, "alice")
        metadata = await alice.call(3, 12, MetadataRequest(topics=None))
        assert isinstance(metadata, MetadataResponse)
        ports = {b.port for b in metadata.brokers} - {sidecar.port}
        assert ports, "Metadata advertised no forwarded broker port"
        for port in ports:
            for key, version, body in attacks(group, topic).values():
                attacker = await WireClient.connect("127.0.0.1", port)
                attacker.send(key, version, body)
                assert await attacker.closed_by_peer(), (port, key)
                await attacker.close()
        assert await committed(alice, group, topic) == 42
        await alice.close()

    before = len(sasl_cluster.front.seen)
    run(scenario)
    anonymous = [api for who, api in sasl_cluster.front.seen[before:] if who is None and api != 18]
    assert anonymous == []


def test_wrong_password_gets_the_clusters_refusal_and_nothing_else(
    sasl_cluster: SaslCluster, sidecar: Sidecar, victim: tuple[str, str]
) -> None:
    group, topic = victim

    async def scenario() -> None:
        attacker = await connect(sidecar)
        answer = await plain_login(attacker, "alice", "not-her-password")
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED, relayed from the cluster
        attacker.send(8, 8, commit_request(group, topic, 7))
        assert await attacker.closed_by_peer()
        await attacker.close()
        # Pipelined: a commit sent right behind a bad password, before the verdict arrives.
        attacker = await connect(sidecar)
        attacker.send_raw(sasl_frame(attacker, 17, 1, _handshake("PLAIN")))
        attacker.send_raw(sasl_frame(attacker, 36, 2, _token(b"\x00alice\x00guess")))
        attacker.send(8, 8, commit_request(group, topic, 8))
        attacker.send(42, 2, DeleteGroupsRequest(groups_names=[group]))
        await attacker.closed_by_peer()
        await attacker.close()
        # A SCRAM attempt with the wrong password.
        attacker = await connect(sidecar)
        final = await scram_login(attacker, "SCRAM-SHA-256", "alice", "wrong")
        assert final.error_code == 58
        attacker.send(16, 4, ListGroupsRequest())
        assert await attacker.closed_by_peer()
        await attacker.close()
        await assert_victim_intact(sidecar, group, topic)

    run(scenario)


def _handshake(mechanism: str) -> Message:
    from groupcoord.coordinator.messages.sasl import SaslHandshakeRequest

    return SaslHandshakeRequest(mechanism=mechanism)


def _token(data: bytes) -> Message:
    from groupcoord.coordinator.messages.sasl import SaslAuthenticateRequest

    return SaslAuthenticateRequest(auth_bytes=data)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login_through_the_sidecar_opens_the_group_apis(
    mechanism: str, sidecar: Sidecar, victim: tuple[str, str]
) -> None:
    group, topic = victim

    async def scenario() -> None:
        client = await connect(sidecar)
        final = await scram_login(client, mechanism, "alice", "alice-secret")
        assert final.error_code == 0, final.error_message
        assert await committed(client, group, topic) == 42
        await client.close()

    run(scenario)


def test_confluent_kafka_with_sasl_through_the_sidecar(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    topic, group = f"shared-e2e-{uuid.uuid4().hex[:8]}", f"alice-e2e-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic, partitions=1)
    config = {
        "bootstrap.servers": sidecar.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    producer = Producer(config)
    for i in range(5):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        got: list[bytes | None] = []
        for _ in range(120):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            got.append(message.value())
            if len(got) == 5:
                break
        assert got == [f"v{i}".encode() for i in range(5)]
        consumer.commit(asynchronous=False)
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert tp.offset == 5
    finally:
        consumer.close()
    # What reached the cluster from the client came with the client's own principal.
    principals = {who for who, api in sasl_cluster.front.seen if api in (0, 1)}
    assert principals <= {"alice", "gcadmin"}
    assert "alice" in principals


def test_an_expired_session_closes_the_connection(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    """KIP-368: the cluster gave carol a 1.5 s session; after it, group requests close the connection
    (a re-authentication on the same connection renews it)."""
    sasl_cluster.front.lifetimes["carol"] = 1500
    group = f"carol-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        client = await authenticated(sidecar, "carol")
        assert group not in await listed(client)
        await asyncio.sleep(2)
        answer = await plain_login(client, "carol", "carol-secret")  # re-authentication renews
        assert answer.error_code == 0 and answer.session_lifetime_ms == 1500
        assert group not in await listed(client)
        await asyncio.sleep(2)
        client.send(16, 4, ListGroupsRequest())
        assert await client.closed_by_peer()
        await client.close()

    try:
        run(scenario)
    finally:
        del sasl_cluster.front.lifetimes["carol"]


def test_oauthbearer_principal_is_the_tokens_subject(sidecar: Sidecar, victim: tuple[str, str]) -> None:
    import base64
    import json

    from tests.security.wire import authenticate, handshake

    def token(claims: dict[str, object]) -> bytes:
        def part(value: dict[str, object]) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

        return f"n,,\x01auth=Bearer {part({'alg': 'none'})}.{part(claims)}.\x01\x01".encode()

    group, topic = victim

    async def scenario() -> None:
        for subject, expected in (("alice", 42), ("bob", None)):
            client = await connect(sidecar)
            assert (await handshake(client, "OAUTHBEARER")).error_code == 0
            assert (await authenticate(client, token({"sub": subject}))).error_code == 0
            answer = await client.call(
                9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)])
            )
            assert isinstance(answer, OffsetFetchResponse)
            if expected is None:
                assert answer.groups[0].error_code == 30  # bob's token: not alice's group
            else:
                assert await committed(client, group, topic) == expected
            await client.close()
        # A token the cluster rejects authenticates no one. Kafka answers it with a JSON error and
        # error 0, failing the exchange only at the client's kvsep (RFC 7628 3.2.3). A client that
        # skips the kvsep and asks the sidecar for alice's offsets at once is not alice: the
        # gateway must not take the refusal's error 0 for a verdict.
        client = await connect(sidecar)
        assert (await handshake(client, "OAUTHBEARER")).error_code == 0
        assert (await authenticate(client, token({"sub": "alice", "bad": True}))).auth_bytes
        client.send(9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)]))
        assert await client.closed_by_peer()
        await client.close()
        # A client that sends the kvsep gets the cluster's refusal.
        client = await connect(sidecar)
        assert (await handshake(client, "OAUTHBEARER")).error_code == 0
        refusal = await authenticate(client, token({"sub": "alice", "bad": True}))
        assert (refusal.error_code, json.loads(refusal.auth_bytes)) == (0, {"status": "invalid_token"})
        assert (await authenticate(client, b"\x01")).error_code == 58
        client.send(16, 4, ListGroupsRequest())
        assert await client.closed_by_peer()
        await client.close()

    run(scenario)
