"""Pure rewrites of cluster answers so clients keep talking to the sidecar.

Brokers are advertised at the sidecar listener that forwards to them; the sidecar's own group
coordinator appears as one extra node; ApiVersions merges the cluster's APIs with the group APIs
served here (only APIs it can serve or read the topics of: ``forwarded_range``), and reports the
group coordinator's ``group.version`` feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from groupcoord.coordinator.gateway import named_topics
from groupcoord.coordinator.gateway.apis import APIS, GROUP_API_KEYS, SHARE_GROUP_API_KEYS, ApiKey
from groupcoord.coordinator.messages.api_versions import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ApiVersionsResponseFinalizedFeatureKey,
    ApiVersionsResponseSupportedFeatureKey,
)
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterBroker, DescribeClusterResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorResponse
from groupcoord.coordinator.messages.metadata import MetadataResponse, MetadataResponseBroker
from groupcoord.coordinator.messages.produce import ProduceRequest

# Maps a real broker (node id, host, port) to the sidecar (host, port) that reaches it.
BrokerRoute = Callable[[int, str, int], tuple[str, int]]

# Answered here whatever the cluster says; the others are the cluster's own, possibly capped to
# what this codec can decode when the gateway must rewrite the answer. The share-group APIs are
# served only when share groups are enabled (``served_keys``).
SERVED_LOCALLY: frozenset[int] = GROUP_API_KEYS - SHARE_GROUP_API_KEYS | {ApiKey.API_VERSIONS}
# TxnOffsetCommit v5 is transaction version 2 (KIP-890: no AddOffsetsToTxn, the group coordinator
# adds its partition itself). Served is v0-v4, the flow of transaction version 1, verified end to
# end on the local broker; a TV2 client then falls back to v4 semantics (groupcoord/coordinator/txn/README.md).
TXN_OFFSET_COMMIT_MAX_VERSION = 4
# ShareFetch/ShareAcknowledge v2 (KIP-1206 acquire modes, KIP-1222 renew acknowledgements) are not
# served: v1, Kafka 4.1's stable version, is.
SHARE_DATA_MAX_VERSION = 1
_CAPPED: dict[int, int] = {
    ApiKey.TXN_OFFSET_COMMIT: TXN_OFFSET_COMMIT_MAX_VERSION,
    ApiKey.SHARE_FETCH: SHARE_DATA_MAX_VERSION,
    ApiKey.SHARE_ACKNOWLEDGE: SHARE_DATA_MAX_VERSION,
}
REWRITTEN: frozenset[int] = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER})
# Decoded so that their GROUP resources are answered here (``configs``); offered even by a cluster
# without them, since group configs do not need the cluster.
CONFIG_APIS: frozenset[int] = frozenset(
    {ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS}
)


SASL_RANGES: dict[int, tuple[int, int]] = {ApiKey.SASL_HANDSHAKE: (1, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}

# The group coordinator's feature level (KIP-848): clients probing ``group.version`` (the Java 4.x
# client, librdkafka) use the consumer protocol only when it is finalized at 1 or more. The sidecar
# is the group coordinator whatever the cluster's own level.
GROUP_VERSION_FEATURE = "group.version"
GROUP_VERSION_LEVEL = 1


def served_keys(share_groups: bool) -> frozenset[int]:
    """The APIs answered here, share-group membership included when it is served."""
    return SERVED_LOCALLY | SHARE_GROUP_API_KEYS if share_groups else SERVED_LOCALLY


def served_versions(share_groups: bool = False) -> dict[int, tuple[int, int]]:
    return {
        key: (APIS[key].min_version, min(APIS[key].max_version, _CAPPED.get(key, APIS[key].max_version)))
        for key in served_keys(share_groups)
    }


def forwarded_range(key: int, cluster: tuple[int, int] | None) -> tuple[int, int] | None:
    """The versions of a cluster API the gateway offers (None: not offered): those the cluster
    has, capped to what the gateway reads of it. APIs whose topics it cannot read (share and
    streams groups, broker-to-broker APIs, APIs newer than ``named_topics``) are not offered."""
    if cluster is None:
        return None
    low, high = cluster
    if key in REWRITTEN or key in CONFIG_APIS:
        valid: tuple[int, int] | None = (APIS[key].min_version, APIS[key].max_version)
    elif key in SASL_RANGES:
        # The gateway follows SASL exchanges: v0 handshakes (unframed tokens) and versions it
        # cannot decode are not offered.
        valid = SASL_RANGES[key]
    elif key == ApiKey.PRODUCE:
        valid = ProduceRequest.VALID.low, ProduceRequest.VALID.high
    else:
        valid = named_topics.decoded_range(key)
    if valid is None:
        return None
    low, high = max(low, valid[0]), min(high, valid[1])
    return (low, high) if low <= high else None


# Transaction version 2 (KIP-890) sends TxnOffsetCommit v5 straight to the group coordinator with no
# AddOffsetsToTxn, which is not served (``TXN_OFFSET_COMMIT_MAX_VERSION``): clients through the
# sidecar are told the cluster's transaction.version is at most 1, so a Java 4.x producer keeps the
# flow of version 1, which a version-2 cluster still serves to older clients.
TRANSACTION_VERSION_FEATURE = "transaction.version"
SERVED_TRANSACTION_VERSION = 1


def _transaction_version_1(feature: ApiVersionsResponseFinalizedFeatureKey) -> ApiVersionsResponseFinalizedFeatureKey:
    if feature.name != TRANSACTION_VERSION_FEATURE or feature.max_version_level <= SERVED_TRANSACTION_VERSION:
        return feature
    return ApiVersionsResponseFinalizedFeatureKey(
        name=feature.name,
        max_version_level=SERVED_TRANSACTION_VERSION,
        min_version_level=min(feature.min_version_level, SERVED_TRANSACTION_VERSION),
    )


def merge_api_versions(cluster: ApiVersionsResponse, share_groups: bool = False) -> ApiVersionsResponse:
    """The versions a client may use through the gateway, cluster features kept. ``share_groups``:
    the share-group APIs, membership and data path, are offered (served here, whatever the
    cluster has)."""
    ranges: dict[int, tuple[int, int]] = {}
    for entry in cluster.api_keys:
        offered = forwarded_range(entry.api_key, (entry.min_version, entry.max_version))
        if offered is not None:
            ranges[entry.api_key] = offered
    if ApiKey.FIND_COORDINATOR not in ranges:
        spec = APIS[ApiKey.FIND_COORDINATOR]
        ranges[ApiKey.FIND_COORDINATOR] = (spec.min_version, spec.max_version)
    for key in CONFIG_APIS:
        if key not in ranges:
            ranges[key] = (APIS[key].min_version, APIS[key].max_version)
    served = served_keys(share_groups)
    for key in GROUP_API_KEYS - served:
        ranges.pop(key, None)
    ranges.update(served_versions(share_groups))
    supported = [f for f in cluster.supported_features if f.name != GROUP_VERSION_FEATURE]
    supported.append(
        ApiVersionsResponseSupportedFeatureKey(
            name=GROUP_VERSION_FEATURE, min_version=0, max_version=GROUP_VERSION_LEVEL
        )
    )
    finalized = [_transaction_version_1(f) for f in cluster.finalized_features if f.name != GROUP_VERSION_FEATURE]
    finalized.append(
        ApiVersionsResponseFinalizedFeatureKey(
            name=GROUP_VERSION_FEATURE, max_version_level=GROUP_VERSION_LEVEL, min_version_level=GROUP_VERSION_LEVEL
        )
    )
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ranges.items())
        ],
        throttle_time_ms=0,
        supported_features=supported,
        # Features are only read with an epoch (-1: none reported by the cluster).
        finalized_features_epoch=max(cluster.finalized_features_epoch, 0),
        finalized_features=finalized,
        zk_migration_ready=cluster.zk_migration_ready,
    )


def _sane_controller(controller_id: int, node_ids: Iterable[int]) -> int:
    # Clients send controller-only admin requests to this id; it must name a broker they can
    # reach through the sidecar, never the sidecar's coordinator node.
    ids = list(node_ids)
    if controller_id in ids:
        return controller_id
    return ids[0] if ids else -1


def route_brokers(response: MetadataResponse, route: BrokerRoute, skip_node: int | None = None) -> None:
    """Advertise every broker (but ``skip_node``) at the address ``route`` gives for it."""
    brokers: list[MetadataResponseBroker] = []
    for broker in response.brokers:
        if broker.node_id == skip_node:
            continue
        host, port = route(broker.node_id, broker.host, broker.port)
        brokers.append(MetadataResponseBroker(node_id=broker.node_id, host=host, port=port, rack=broker.rack))
    response.controller_id = _sane_controller(response.controller_id, (b.node_id for b in brokers))
    response.brokers = brokers


def rewrite_metadata(
    response: MetadataResponse, route: BrokerRoute, coordinator: MetadataResponseBroker
) -> MetadataResponse:
    route_brokers(response, route, skip_node=coordinator.node_id)
    response.brokers.append(coordinator)
    return response


def rewrite_describe_cluster(
    response: DescribeClusterResponse, route: BrokerRoute, coordinator: DescribeClusterBroker
) -> DescribeClusterResponse:
    brokers: list[DescribeClusterBroker] = []
    for broker in response.brokers:
        if broker.broker_id == coordinator.broker_id:
            continue
        host, port = route(broker.broker_id, broker.host, broker.port)
        brokers.append(
            DescribeClusterBroker(
                broker_id=broker.broker_id, host=host, port=port, rack=broker.rack, is_fenced=broker.is_fenced
            )
        )
    response.controller_id = _sane_controller(response.controller_id, (b.broker_id for b in brokers))
    brokers.append(coordinator)
    response.brokers = brokers
    return response


def rewrite_find_coordinator(response: FindCoordinatorResponse, route: BrokerRoute, version: int) -> None:
    """Point a cluster-answered (transaction) coordinator at the sidecar listener for that broker."""
    if version >= 4:
        for entry in response.coordinators:
            if entry.error_code == 0 and entry.node_id >= 0:
                entry.host, entry.port = route(entry.node_id, entry.host, entry.port)
    elif response.error_code == 0 and response.node_id >= 0:
        response.host, response.port = route(response.node_id, response.host, response.port)
