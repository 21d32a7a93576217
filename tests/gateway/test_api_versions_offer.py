"""What ApiVersions offers through the sidecar: no API of which every call would fail, none the
gateway cannot read, and the group coordinator's ``group.version`` feature (issue 22, N1/N2)."""

from __future__ import annotations

import asyncio
import struct

from groupcoord.coordinator.gateway import GatewayConfig
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protect import ProtectedTopics
from groupcoord.coordinator.gateway.protocol import encode_request
from groupcoord.coordinator.gateway.rewrite import (
    GROUP_VERSION_FEATURE,
    TXN_OFFSET_COMMIT_MAX_VERSION,
    merge_api_versions,
)
from groupcoord.coordinator.gateway.routing import CallHandler, Close, Facts, route
from groupcoord.coordinator.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ApiVersionsResponseFinalizedFeatureKey,
    ApiVersionsResponseSupportedFeatureKey,
)
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from tests.gateway.conftest import GatewayThread
from tests.gateway.fakes import FakeGroupHandler
from tests.gateway.wire_client import WireClient
from tests.txn.eos import txn_offset_commit

SHARE_AND_STREAMS = (76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92)


def _cluster(*keys: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        api_keys=[ApiVersionsResponseApiVersion(api_key=k, min_version=0, max_version=20) for k in keys],
        supported_features=[
            ApiVersionsResponseSupportedFeatureKey(name="metadata.version", min_version=1, max_version=27)
        ],
        finalized_features_epoch=42,
        finalized_features=[
            ApiVersionsResponseFinalizedFeatureKey(name="metadata.version", max_version_level=27, min_version_level=27),
            ApiVersionsResponseFinalizedFeatureKey(
                name=GROUP_VERSION_FEATURE, max_version_level=0, min_version_level=0
            ),
        ],
    )


def test_no_api_is_offered_that_every_call_would_refuse() -> None:
    merged = merge_api_versions(_cluster(0, 1, 3, 22, 28, *SHARE_AND_STREAMS, 93))
    offered = {k.api_key for k in merged.api_keys}
    # TxnOffsetCommit is served (groupcoord/coordinator/txn), up to v4: v5 only on a cluster at transaction version 2.
    txn = next(k for k in merged.api_keys if k.api_key == ApiKey.TXN_OFFSET_COMMIT)
    assert (txn.min_version, txn.max_version) == (0, TXN_OFFSET_COMMIT_MAX_VERSION) == (0, 4)
    # Share and streams groups are not served; API 93 is newer than the gateway's table.
    assert offered.isdisjoint({*SHARE_AND_STREAMS, 93})
    assert {0, 1, 3, 22, ApiKey.FIND_COORDINATOR, ApiKey.CONSUMER_GROUP_HEARTBEAT} <= offered


def test_group_version_is_finalized_and_the_cluster_features_are_kept() -> None:
    merged = merge_api_versions(_cluster(0))
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in merged.finalized_features}
    assert finalized == {"metadata.version": (27, 27), GROUP_VERSION_FEATURE: (1, 1)}
    supported = {f.name: (f.min_version, f.max_version) for f in merged.supported_features}
    assert supported == {"metadata.version": (1, 27), GROUP_VERSION_FEATURE: (0, 1)}
    assert merged.finalized_features_epoch == 42
    # A cluster that reports no features still gets an epoch clients read the feature with.
    assert merge_api_versions(ApiVersionsResponse(api_keys=[])).finalized_features_epoch == 0


def test_unoffered_apis_close_the_connection_as_a_broker_does(bootstrap: str) -> None:
    """Through a real gateway (local broker): ApiVersions v3 carries group.version; TxnOffsetCommit
    v5 (not offered) or a share-group heartbeat closes the connection; FindCoordinator(GROUP)
    is still answered by the sidecar."""
    config = GatewayConfig(bootstrap_servers=bootstrap, listen_port=0, protected_topics=["__gc_log"])

    async def run(port: int) -> None:
        client = await WireClient.connect("127.0.0.1", port)
        response = await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert isinstance(response, ApiVersionsResponse)
        assert (GROUP_VERSION_FEATURE, 1) in {(f.name, f.max_version_level) for f in response.finalized_features}
        assert (ApiKey.TXN_OFFSET_COMMIT, 4) in {(k.api_key, k.max_version) for k in response.api_keys}
        # A software name Kafka would refuse: INVALID_REQUEST and no versions, as Kafka answers.
        bad = await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t t", client_software_version="1")
        )
        assert isinstance(bad, ApiVersionsResponse) and (bad.error_code, bad.api_keys) == (42, [])
        found = await client.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0))
        assert isinstance(found, FindCoordinatorResponse)
        assert (found.error_code, found.port) == (0, port)
        await client.close()
        for key, version in ((ApiKey.TXN_OFFSET_COMMIT, 5), (76, 1), (88, 0)):
            client = await WireClient.connect("127.0.0.1", port)
            # A header and an empty-ish body: the API is refused before its body is read.
            client.send_raw(struct.pack(">ihhih", 10 + 3, key, version, 5, -1) + b"\x00\x00\x00")
            assert await client.closed_by_peer(), key
            await client.close()

    with GatewayThread(config, FakeGroupHandler()) as gateway:
        asyncio.run(run(gateway.server.port))


def test_share_groups_are_offered_only_when_enabled() -> None:
    """With share groups on, ShareGroupHeartbeat/ShareGroupDescribe and the data path (ShareFetch,
    ShareAcknowledge) v1-v2, and the offsets administration (DescribeShareGroupOffsets v0-1,
    AlterShareGroupOffsets and DeleteShareGroupOffsets v0) are offered whatever the cluster has;
    streams groups never are."""
    expected = {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0)}
    share = set(expected)
    for cluster in (_cluster(0, 3), _cluster(0, 3, *SHARE_AND_STREAMS)):
        offered = {k.api_key: (k.min_version, k.max_version) for k in merge_api_versions(cluster, True).api_keys}
        assert {key: offered[key] for key in share} == expected
        assert offered.keys().isdisjoint(set(SHARE_AND_STREAMS) - share)
    assert share.isdisjoint(k.api_key for k in merge_api_versions(_cluster(0, *SHARE_AND_STREAMS)).api_keys)


def _offer(transaction_version: int | None, produce_max: int = 20) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """(TxnOffsetCommit's offered range, the finalized transaction.version offered) for a cluster at
    that level (None: it reports none) whose Produce goes up to ``produce_max``."""
    cluster = _cluster(28)
    cluster.api_keys.append(
        ApiVersionsResponseApiVersion(api_key=ApiKey.PRODUCE, min_version=3, max_version=produce_max)
    )
    if transaction_version is not None:
        cluster.finalized_features.append(
            ApiVersionsResponseFinalizedFeatureKey(
                name="transaction.version", max_version_level=transaction_version, min_version_level=transaction_version
            )
        )
    merged = merge_api_versions(cluster)
    txn = next(k for k in merged.api_keys if k.api_key == ApiKey.TXN_OFFSET_COMMIT)
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in merged.finalized_features}
    assert finalized["metadata.version"] == (27, 27)
    return (txn.min_version, txn.max_version), finalized.get("transaction.version")


def test_transaction_version_2_is_offered_only_where_the_cluster_runs_it() -> None:
    """TxnOffsetCommit v5 (no AddOffsetsToTxn) and transaction.version 2 are offered only when the
    cluster finalizes level 2 and takes Produce v12, by which the sidecar's record joins a TV2
    transaction; elsewhere clients keep the flow of version 1. A later level is reported as 2."""
    assert _offer(2) == ((0, 5), (2, 2))
    assert _offer(3) == ((0, 5), (2, 2))
    assert _offer(2, produce_max=11) == ((0, 4), (1, 1))
    assert _offer(1) == ((0, 4), (1, 1))
    assert _offer(None) == ((0, 4), None)


def test_txn_offset_commit_v5_is_served_only_in_front_of_transaction_version_2() -> None:
    request = txn_offset_commit("tx", "g", 7, 0, "t", 1)
    payload = encode_request(RequestHeader(ApiKey.TXN_OFFSET_COMMIT, 5, 1, "c"), request)[4:]
    facts = Facts(
        authentication_required=False,
        authenticated=False,
        max_group_request_bytes=1 << 20,
        max_group_request_elements=1000,
        broker_port=False,
        protected=ProtectedTopics(),
        cluster_ranges=None,
    )
    assert isinstance(route(ApiKey.TXN_OFFSET_COMMIT, 5, payload, facts), Close)
    assert isinstance(route(ApiKey.TXN_OFFSET_COMMIT, 5, payload, facts._replace(transaction_v2=True)), CallHandler)
