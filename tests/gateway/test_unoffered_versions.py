"""A client that skips ApiVersions (kcat with api.version.request=false, raw tools) and sends a
version the cluster does not offer has its connection closed, as a broker closes it: Metadata and
DescribeCluster (whose answers the gateway rewrites) as every forwarded API, and the request
never reaches the cluster.

A scripted broker on loopback (``test_streaming``'s) answers ApiVersions with Metadata up to v9 and
DescribeCluster v0 only, and Metadata at any version it is asked (as Tansu, the local broker, does).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

from groupcoord.coordinator.gateway import GatewayConfig, GatewayServer
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.protocol import encode_response
from groupcoord.coordinator.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterRequest
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseBroker
from tests.gateway.test_server import ScriptedHandler
from tests.gateway.test_streaming import ScriptedBroker
from tests.gateway.wire_client import WireClient

METADATA_MAX = 9
CLUSTER_VERSIONS = {ApiKey.METADATA: (0, METADATA_MAX), ApiKey.DESCRIBE_CLUSTER: (0, 0), ApiKey.FETCH: (4, 12)}


def scripted(port: list[int]) -> ScriptedBroker:
    async def respond(correlation_id: int, payload: bytes, writer: asyncio.StreamWriter) -> None:
        key, version = struct.unpack_from(">hh", payload)
        if key == ApiKey.API_VERSIONS:
            body: ApiVersionsResponse | MetadataResponse = ApiVersionsResponse(
                api_keys=[
                    ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
                    for k, (lo, hi) in CLUSTER_VERSIONS.items()
                ]
            )
        elif key == ApiKey.METADATA:
            body = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=port[0])])
        else:
            writer.close()
            return
        writer.write(encode_response(key, version, correlation_id, body))
        await writer.drain()

    return ScriptedBroker(respond)


def run(test: Callable[[GatewayServer, ScriptedBroker], Awaitable[None]]) -> None:
    async def main() -> None:
        port: list[int] = []
        async with scripted(port) as broker:
            port.append(broker.port)
            config = GatewayConfig(bootstrap_servers=[f"127.0.0.1:{broker.port}"], listen_port=0)
            async with GatewayServer(config, ScriptedHandler()) as server:
                # What serve does before it takes clients (``coordinator/server.py``).
                await server.cluster.api_versions(None)
                await asyncio.wait_for(test(server, broker), 30)

    asyncio.run(main())


def metadata_requests(broker: ScriptedBroker) -> list[int]:
    return [v for key, v in (struct.unpack_from(">hh", p) for p in broker.payloads) if key == ApiKey.METADATA]


def test_metadata_and_describe_cluster_above_the_cluster_close_the_connection() -> None:
    async def test(server: GatewayServer, broker: ScriptedBroker) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        try:
            # At a version the cluster offers: forwarded, answered, rewritten.
            answer = await client.call_as(MetadataResponse, ApiKey.METADATA, METADATA_MAX, MetadataRequest())
            assert [b.node_id for b in answer.brokers][:1] == [1]
            assert answer.brokers[0].port == server.broker_ports[1]
            # Above it: closed, and nothing reaches the cluster.
            client.send(ApiKey.METADATA, METADATA_MAX + 3, MetadataRequest())
            assert await client.closed_by_peer()
        finally:
            await client.close()
        client = await WireClient.connect("127.0.0.1", server.port)
        try:
            client.send(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest())
            assert await client.closed_by_peer()
        finally:
            await client.close()
        assert metadata_requests(broker) == [METADATA_MAX]
        assert all(struct.unpack_from(">h", p)[0] != ApiKey.DESCRIBE_CLUSTER for p in broker.payloads)

    run(test)


def test_a_broker_port_not_yet_asked_for_its_versions_checks_the_cluster_s() -> None:
    """A broker port whose broker no client has asked ApiVersions through yet checks requests
    against the bootstrap servers' versions (serve reads them before it takes clients), not
    against nothing."""

    async def test(server: GatewayServer, broker: ScriptedBroker) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        try:
            await client.call_as(MetadataResponse, ApiKey.METADATA, METADATA_MAX, MetadataRequest())
        finally:
            await client.close()
        port = server.broker_ports[1]
        client = await WireClient.connect("127.0.0.1", port)
        try:
            client.send(ApiKey.METADATA, METADATA_MAX + 3, MetadataRequest())
            assert await client.closed_by_peer()
        finally:
            await client.close()
        client = await WireClient.connect("127.0.0.1", port)
        try:
            # Fetch v13 (above the cluster's v12), as its raw bytes: closed before it is sent on.
            client.send_raw(struct.pack(">ihhih", 10, ApiKey.FETCH, 13, 5, -1))
            assert await client.closed_by_peer()
        finally:
            await client.close()
        assert metadata_requests(broker) == [METADATA_MAX]
        assert all(struct.unpack_from(">h", p)[0] != ApiKey.FETCH for p in broker.payloads)

    run(test)
