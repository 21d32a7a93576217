"""Pure rewrites of cluster answers so clients keep talking to the sidecar.

Brokers are advertised at the sidecar listener that forwards to them; the sidecar's own group
coordinator appears as one extra node; ApiVersions merges the cluster's APIs with the group APIs
served here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coordinator.gateway.apis import APIS, GROUP_API_KEYS, ApiKey
from coordinator.gateway.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from coordinator.gateway.messages.describe_cluster import DescribeClusterBroker, DescribeClusterResponse
from coordinator.gateway.messages.describe_topic_partitions import DescribeTopicPartitionsRequest
from coordinator.gateway.messages.find_coordinator import FindCoordinatorResponse
from coordinator.gateway.messages.metadata import MetadataResponse, MetadataResponseBroker

# Maps a real broker (node id, host, port) to the sidecar (host, port) that reaches it.
BrokerRoute = Callable[[int, str, int], tuple[str, int]]

# Answered here whatever the cluster says; the others are the cluster's own, possibly capped to
# what this codec can decode when the gateway must rewrite the answer.
SERVED_LOCALLY: frozenset[int] = GROUP_API_KEYS | {ApiKey.API_VERSIONS}
REWRITTEN: frozenset[int] = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER})
# Decoded so that their GROUP resources are answered here (``configs``); offered even by a cluster
# without them, since group configs do not need the cluster.
CONFIG_APIS: frozenset[int] = frozenset(
    {ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS}
)


SASL_RANGES: dict[int, tuple[int, int]] = {ApiKey.SASL_HANDSHAKE: (1, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}


def served_versions() -> dict[int, tuple[int, int]]:
    return {key: (APIS[key].min_version, APIS[key].max_version) for key in SERVED_LOCALLY}


def merge_api_versions(cluster: ApiVersionsResponse) -> ApiVersionsResponse:
    """The versions a client may use through the gateway, cluster features kept."""
    ranges: dict[int, tuple[int, int]] = {}
    for entry in cluster.api_keys:
        low, high = entry.min_version, entry.max_version
        if entry.api_key in REWRITTEN or entry.api_key in CONFIG_APIS:
            spec = APIS[entry.api_key]
            low, high = max(low, spec.min_version), min(high, spec.max_version)
        elif entry.api_key == DescribeTopicPartitionsRequest.API_KEY:
            # Its answers are filtered (the log topic left out): only versions the gateway decodes.
            valid = DescribeTopicPartitionsRequest.VALID
            low, high = max(low, valid.low), min(high, valid.high)
        elif entry.api_key in SASL_RANGES:
            # The gateway follows SASL exchanges: v0 handshakes (unframed tokens) and versions it
            # cannot decode are not offered.
            low, high = max(low, SASL_RANGES[entry.api_key][0]), min(high, SASL_RANGES[entry.api_key][1])
        if low <= high:
            ranges[entry.api_key] = (low, high)
    if ApiKey.FIND_COORDINATOR not in ranges:
        spec = APIS[ApiKey.FIND_COORDINATOR]
        ranges[ApiKey.FIND_COORDINATOR] = (spec.min_version, spec.max_version)
    for key in CONFIG_APIS:
        if key not in ranges:
            ranges[key] = (APIS[key].min_version, APIS[key].max_version)
    ranges.update(served_versions())
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(ranges.items())
        ],
        throttle_time_ms=0,
        supported_features=list(cluster.supported_features),
        finalized_features_epoch=cluster.finalized_features_epoch,
        finalized_features=list(cluster.finalized_features),
        zk_migration_ready=cluster.zk_migration_ready,
    )


def _sane_controller(controller_id: int, node_ids: Iterable[int]) -> int:
    # Clients send controller-only admin requests to this id; it must name a broker they can
    # reach through the sidecar, never the sidecar's coordinator node.
    ids = list(node_ids)
    if controller_id in ids:
        return controller_id
    return ids[0] if ids else -1


def rewrite_metadata(
    response: MetadataResponse, route: BrokerRoute, coordinator: MetadataResponseBroker
) -> MetadataResponse:
    brokers: list[MetadataResponseBroker] = []
    for broker in response.brokers:
        if broker.node_id == coordinator.node_id:
            continue
        host, port = route(broker.node_id, broker.host, broker.port)
        brokers.append(MetadataResponseBroker(node_id=broker.node_id, host=host, port=port, rack=broker.rack))
    response.controller_id = _sane_controller(response.controller_id, (b.node_id for b in brokers))
    brokers.append(coordinator)
    response.brokers = brokers
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
