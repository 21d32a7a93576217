"""The gateway in front of a real broker on loopback, with real clients."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import struct
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groupcoord.coordinator.gateway import GatewayConfig, TlsSettings
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.cluster import fetch_api_versions
from groupcoord.coordinator.gateway.protocol import decode_response
from groupcoord.coordinator.gateway.rewrite import coordinator_alias
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from groupcoord.local_broker import free_port
from tests.gateway.clients import consume_assigned, consume_group, create_topic, produce
from tests.gateway.conftest import GatewayThread
from tests.gateway.fakes import FakeGroupHandler
from tests.gateway.wire_client import WireClient

pytestmark = [
    pytest.mark.integration,
    # kafka-python loads its schemas through a deprecated importlib API.
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

PARTITIONS = 3
RECORDS = 300


def _address(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.rpartition(":")
    return host, int(port)


def wire(gateway: GatewayThread, test: Callable[[WireClient], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        client = await WireClient.connect("127.0.0.1", gateway.server.port)
        try:
            return await asyncio.wait_for(test(client), 30)
        finally:
            await client.close()

    return asyncio.run(main())


def test_produce_and_consume_through_the_gateway(bootstrap: str, gateway: GatewayThread, unique_name: str) -> None:
    create_topic(gateway.bootstrap, unique_name, PARTITIONS)
    produce(gateway.bootstrap, unique_name, RECORDS, PARTITIONS)
    direct = consume_assigned(bootstrap, unique_name, PARTITIONS, RECORDS)
    assert len(direct) == RECORDS
    assert consume_assigned(gateway.bootstrap, unique_name, PARTITIONS, RECORDS) == direct
    # A classic group through the gateway: FindCoordinator, JoinGroup, SyncGroup, OffsetFetch and
    # commits go to the (fake) handler, fetches to the broker.
    assert consume_group(gateway.bootstrap, unique_name, f"{unique_name}-g", RECORDS) == direct
    handler = gateway.handler
    assert isinstance(handler, FakeGroupHandler)
    seen = {name for _, _, name in handler.calls}
    assert {"JoinGroupRequest", "SyncGroupRequest", "OffsetFetchRequest"} <= seen


def test_acks_zero_producer(bootstrap: str, gateway: GatewayThread, unique_name: str) -> None:
    create_topic(bootstrap, unique_name, 1)
    produce(gateway.bootstrap, unique_name, 50, 1, acks=0)
    assert len(consume_assigned(bootstrap, unique_name, 1, 50)) == 50
    # The connection stayed usable: an acks=1 producer still completes.
    produce(gateway.bootstrap, unique_name, 10, 1, acks=1)


def test_kafka_python_admin_lists_topics(bootstrap: str, gateway: GatewayThread, unique_name: str) -> None:
    from kafka.admin import KafkaAdminClient

    create_topic(bootstrap, unique_name, 2)
    admin = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    try:
        assert unique_name in admin.list_topics()
        cluster = admin.describe_cluster()
        ports = {b["port"] for b in cluster["brokers"]}
        assert ports <= {gateway.server.port, *gateway.server.broker_ports.values()}
    finally:
        admin.close()


def test_api_versions_merge_cluster_and_group_apis(bootstrap: str, gateway: GatewayThread) -> None:
    cluster = asyncio.run(fetch_api_versions(_address(bootstrap), None, 10))
    theirs = {k.api_key: (k.min_version, k.max_version) for k in cluster.api_keys}

    async def ask(client: WireClient) -> ApiVersionsResponse:
        response = await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert isinstance(response, ApiVersionsResponse)
        return response

    merged = wire(gateway, ask)
    assert merged.error_code == 0
    ours = {k.api_key: (k.min_version, k.max_version) for k in merged.api_keys}
    assert ours[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert ours[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)
    assert ours[ApiKey.OFFSET_FETCH] == (1, 10)
    # Forwarded APIs: the cluster's versions, capped to those whose topics the gateway reads.
    readable = {ApiKey.PRODUCE: (3, 13), ApiKey.FETCH: (4, 18), 2: (1, 11), 19: (2, 7), 20: (1, 6)}
    for key, (low, high) in readable.items():
        if key in theirs:
            assert ours[key] == (max(low, theirs[key][0]), min(high, theirs[key][1]))
    assert ours[ApiKey.METADATA][1] <= min(theirs[ApiKey.METADATA][1], 13)
    assert [k.api_key for k in merged.api_keys] == sorted(ours)


def test_api_versions_unknown_version_gets_error_35_with_v0_header(gateway: GatewayThread) -> None:
    async def ask(client: WireClient) -> bytes:
        client.send_raw(struct.pack(">i", 10) + struct.pack(">hhih", 18, 99, 77, -1))
        return await client.read_frame()

    payload = wire(gateway, ask)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, payload)
    assert correlation_id == 77
    assert isinstance(body, ApiVersionsResponse)
    assert body.error_code == 35
    assert (18, 0, 4) in {(k.api_key, k.min_version, k.max_version) for k in body.api_keys}


def test_metadata_points_every_broker_at_the_sidecar(bootstrap: str, gateway: GatewayThread, unique_name: str) -> None:
    create_topic(bootstrap, unique_name, 2)
    node = gateway.server.config.coordinator_node_id

    async def ask(client: WireClient) -> list[MetadataResponse]:
        out = []
        for version in range(0, 13):
            request = MetadataRequest(topics=[MetadataRequestTopic(name=unique_name)], allow_auto_topic_creation=False)
            response = await client.call(ApiKey.METADATA, version, request)
            assert isinstance(response, MetadataResponse)
            out.append(response)
        return out

    responses = wire(gateway, ask)
    broker_ports = gateway.server.broker_ports
    assert broker_ports
    for version, response in enumerate(responses):
        by_id = {b.node_id: (b.host, b.port) for b in response.brokers}
        assert by_id[node] == ("127.0.0.1", gateway.server.port)
        for node_id, port in broker_ports.items():
            assert by_id[node_id] == ("127.0.0.1", port)
        assert _address(bootstrap)[1] not in {p for _, p in by_id.values()}
        if version >= 1:
            assert response.controller_id in broker_ports
        [topic] = response.topics
        assert topic.name == unique_name and len(topic.partitions) == 2
        assert {p.leader_id for p in topic.partitions} <= set(broker_ports)


def test_describe_cluster_and_transaction_coordinator_are_rewritten(
    bootstrap: str, gateway: GatewayThread, unique_name: str
) -> None:
    real_port = _address(bootstrap)[1]

    async def ask(client: WireClient) -> tuple[DescribeClusterResponse, FindCoordinatorResponse]:
        described = await client.call(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
        txn = await client.call(
            ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[unique_name])
        )
        assert isinstance(described, DescribeClusterResponse) and isinstance(txn, FindCoordinatorResponse)
        return described, txn

    described, txn = wire(gateway, ask)
    assert described.error_code == 0
    assert real_port not in {b.port for b in described.brokers}
    assert described.controller_id != gateway.server.config.coordinator_node_id
    [entry] = txn.coordinators
    assert entry.key == unique_name
    if entry.error_code == 0:
        assert (entry.host, entry.port) == ("127.0.0.1", gateway.server.broker_ports[entry.node_id])


def test_pipelined_forwarded_and_local_requests_stay_in_order(gateway: GatewayThread) -> None:
    async def ask(client: WireClient) -> list[int]:
        plan = []
        for i in range(30):
            if i % 3 == 0:
                plan.append((ApiKey.METADATA, 12, client.send(ApiKey.METADATA, 12, MetadataRequest(topics=None))))
            elif i % 3 == 1:
                plan.append((ApiKey.HEARTBEAT, 4, client.send(ApiKey.HEARTBEAT, 4, HeartbeatRequest(group_id="g"))))
            else:
                plan.append(
                    (
                        ApiKey.API_VERSIONS,
                        3,
                        client.send(
                            ApiKey.API_VERSIONS,
                            3,
                            ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        ),
                    )
                )
        got = []
        for key, version, _ in plan:
            cid, body = await client.read(key, version)
            if key == ApiKey.HEARTBEAT:
                assert body == HeartbeatResponse()
            got.append(cid)
        assert got == [cid for _, _, cid in plan]
        return got

    wire(gateway, ask)


def test_unknown_api_and_unsupported_forwarded_version_close_the_connection(gateway: GatewayThread) -> None:
    async def probe(client: WireClient) -> None:
        await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        client.send_raw(struct.pack(">i", 10) + struct.pack(">hhih", 999, 0, 5, -1))
        assert await client.closed_by_peer()

    wire(gateway, probe)

    async def probe_version(client: WireClient) -> None:
        await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        client.send_raw(struct.pack(">i", 10) + struct.pack(">hhih", ApiKey.FETCH, 200, 5, -1))
        assert await client.closed_by_peer()

    wire(gateway, probe_version)


def _make_cert(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_tls_listener_and_tls_to_the_cluster(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    cert, key = _make_cert(tmp_path)
    create_topic(bootstrap, unique_name, PARTITIONS)
    produce(bootstrap, unique_name, 60, PARTITIONS)
    direct = consume_assigned(bootstrap, unique_name, PARTITIONS, 60)
    tls_front = GatewayConfig(
        bootstrap_servers=bootstrap, listen_port=0, listener_tls=TlsSettings(certfile=cert, keyfile=key)
    )
    with GatewayThread(tls_front, FakeGroupHandler()) as front:
        ssl_conf = {"security.protocol": "SSL", "ssl.ca.location": str(cert)}
        assert consume_assigned(front.bootstrap, unique_name, PARTITIONS, 60, **ssl_conf) == direct
        # A second gateway reaching the first over TLS stands in for a TLS-only cluster.
        chained = GatewayConfig(
            bootstrap_servers=front.bootstrap,
            listen_port=0,
            coordinator_node_id=2_000_000,
            upstream_tls=TlsSettings(cafile=cert),
        )
        with GatewayThread(chained, FakeGroupHandler()) as back:
            assert consume_assigned(back.bootstrap, unique_name, PARTITIONS, 60) == direct


def test_fixed_broker_ports_and_advertised_host(bootstrap: str) -> None:
    async def direct_brokers() -> list[int]:
        client = await WireClient.connect(*_address(bootstrap))
        try:
            response = await client.call(ApiKey.METADATA, 1, MetadataRequest(topics=[]))
            assert isinstance(response, MetadataResponse)
            return [b.node_id for b in response.brokers]
        finally:
            await client.close()

    node_ids = asyncio.run(direct_brokers())
    fixed = {node_id: free_port() for node_id in node_ids}
    config = GatewayConfig(
        bootstrap_servers=bootstrap, listen_port=0, advertised_host="localhost", broker_listen_ports=fixed
    )
    with GatewayThread(config, FakeGroupHandler()) as running:

        async def ask(client: WireClient) -> MetadataResponse:
            response = await client.call(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
            assert isinstance(response, MetadataResponse)
            return response

        response = wire(running, ask)
        advertised = {b.node_id: (b.host, b.port) for b in response.brokers}
        assert advertised == {
            **{node_id: ("localhost", port) for node_id, port in fixed.items()},
            config.coordinator_node_id: ("localhost", running.server.port),
        }
        assert running.bootstrap == f"localhost:{running.server.port}"


def _metadata_and_transaction_coordinator(
    transactional_id: str,
) -> Callable[[WireClient], Awaitable[tuple[MetadataResponse, FindCoordinatorResponse]]]:
    async def ask(client: WireClient) -> tuple[MetadataResponse, FindCoordinatorResponse]:
        metadata = await client.call(ApiKey.METADATA, 12, MetadataRequest(topics=None))
        txn = await client.call(
            ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id])
        )
        assert isinstance(metadata, MetadataResponse) and isinstance(txn, FindCoordinatorResponse)
        return metadata, txn

    return ask


def test_a_process_among_several_presents_the_transaction_coordinator_under_its_own_node(
    bootstrap: str, gateway: GatewayThread, unique_name: str
) -> None:
    """``serve``: FindCoordinator names broker N as a node of this process's own, which Metadata
    lists at N's listener (librdkafka follows a coordinator to a new address only under a new id)."""
    gateway.server.alias_coordinators = True
    own = gateway.server.config.coordinator_node_id

    ask = _metadata_and_transaction_coordinator(unique_name)
    metadata, txn = wire(gateway, ask)
    ports = gateway.server.broker_ports
    aliases = {n: listener.port for n, listener in gateway.server.alias_listeners.items()}
    by_id = {b.node_id: b.port for b in metadata.brokers}
    assert aliases.keys() == ports.keys()
    for node_id, port in ports.items():
        # At a port of its own: older librdkafka takes a node at a known broker's address for that broker.
        assert by_id[node_id] == port and by_id[coordinator_alias(own, node_id)] == aliases[node_id] != port
    [entry] = txn.coordinators
    assert entry.error_code == 0
    assert entry.node_id not in ports and by_id[entry.node_id] == entry.port
    assert entry.node_id in {coordinator_alias(own, n) for n in ports}


def test_where_broker_ports_are_pinned_only_brokers_with_a_pinned_alias_port_get_an_alias(
    bootstrap: str, gateway: GatewayThread, unique_name: str
) -> None:
    """An ephemeral port may be unreachable where ports are published one by one (compose, a
    Kubernetes Service): pinned broker ports and no pinned alias port keep the broker's own id."""

    ask = _metadata_and_transaction_coordinator(unique_name)
    wire(gateway, ask)
    brokers = sorted(gateway.server.broker_ports)
    pinned = {n: free_port() for n in brokers}
    for alias_ports, aliased in (({}, False), ({n: free_port() for n in brokers}, True)):
        config = GatewayConfig(
            bootstrap_servers=bootstrap, listen_port=0, broker_listen_ports=pinned, coordinator_alias_ports=alias_ports
        )
        with GatewayThread(config, FakeGroupHandler()) as front:
            front.server.alias_coordinators = True
            metadata, txn = wire(front, ask)
        [entry] = txn.coordinators
        assert (entry.node_id not in brokers) is aliased
        assert entry.port in (alias_ports.values() if aliased else [pinned[entry.node_id]])
        assert len(metadata.brokers) == 1 + len(brokers) * (2 if aliased else 1)


@pytest.mark.parametrize("broker_port_taken", [False, True], ids=["alias-port-taken", "both-taken"])
def test_a_pinned_port_that_cannot_be_bound_is_said_once_and_metadata_is_still_answered(
    bootstrap: str, gateway: GatewayThread, unique_name: str, caplog: pytest.LogCaptureFixture, broker_port_taken: bool
) -> None:
    """A taken pinned port once closed every connection at its first Metadata (the bind raised
    inside it) while serve ran on: now that listener falls back, with one ERROR naming the port."""
    ask = _metadata_and_transaction_coordinator(unique_name)
    wire(gateway, ask)
    brokers = sorted(gateway.server.broker_ports)
    with contextlib.ExitStack() as held:
        taken: dict[int, int] = {}
        for _ in range(2 * len(brokers)):
            sock = held.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            sock.listen()
            taken[len(taken)] = sock.getsockname()[1]
        broker_ports = {n: taken[i] if broker_port_taken else free_port() for i, n in enumerate(brokers)}
        alias_ports = {n: taken[len(brokers) + i] for i, n in enumerate(brokers)}
        config = GatewayConfig(
            bootstrap_servers=bootstrap,
            listen_port=0,
            broker_listen_ports=broker_ports,
            coordinator_alias_ports=alias_ports,
        )

        async def twice(client: WireClient) -> tuple[MetadataResponse, MetadataResponse]:
            first, _ = await ask(client)
            second, _ = await ask(client)  # on the same connection: it stayed open
            return first, second

        with (
            caplog.at_level(logging.ERROR, logger="groupcoord.coordinator.gateway.server"),
            GatewayThread(config, FakeGroupHandler()) as front,
        ):
            front.server.alias_coordinators = True
            first, second = wire(front, twice)
            ports = front.server.broker_ports
    for metadata in (first, second):
        advertised = {b.node_id: b.port for b in metadata.brokers}
        # No alias (the broker keeps its own id) and each broker at a port of its own that works.
        assert advertised == {**ports, config.coordinator_node_id: front.server.port}
    assert set(ports.values()).isdisjoint(taken.values())
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    if not broker_port_taken:
        assert ports == broker_ports
    for node_id in brokers:
        assert len([m for m in errors if f"port {broker_ports[node_id]} " in m]) == int(broker_port_taken)
        assert len([m for m in errors if f"port {alias_ports[node_id]} " in m]) == 1
    assert len(errors) == (2 if broker_port_taken else 1) * len(brokers), errors
    assert any("gateway.coordinator_alias_ports" in m for m in errors)
    assert any("gateway.broker_listen_ports" in m for m in errors) is broker_port_taken
