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
# TxnOffsetCommit v5 is transaction version 2 (KIP-890: no AddOffsetsToTxn; the group coordinator
# adds its partition to the transaction itself). v0-v4 are always served (transaction version 1);
# v5 only where the cluster finalizes transaction.version 2 and takes Produce v12, the request by
# which the sidecar's record joins a TV2 transaction (``transaction_v2``,
# docs/design/transactional-offsets.md).
TXN_OFFSET_COMMIT_MAX_VERSION = 4
TXN_OFFSET_COMMIT_TV2_VERSION = 5
# ShareFetch/ShareAcknowledge v2 (Kafka 4.2: KIP-1206 acquire modes, KIP-1222 renew acknowledgements)
# are served (service/share_data.py), v1 unchanged.
SHARE_DATA_MAX_VERSION = 2
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


def served_versions(share_groups: bool = False, transaction_v2: bool = False) -> dict[int, tuple[int, int]]:
    """The versions of the APIs answered here; ``transaction_v2``: the cluster runs transaction
    version 2 (``transaction_v2``), so TxnOffsetCommit v5 is served too."""
    capped = {k: v for k, v in _CAPPED.items() if k != ApiKey.TXN_OFFSET_COMMIT} if transaction_v2 else _CAPPED
    return {
        key: (APIS[key].min_version, min(APIS[key].max_version, capped.get(key, APIS[key].max_version)))
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


# Transaction version 2 (KIP-890 part 2): clients send TxnOffsetCommit v5 straight to the group
# coordinator, with no AddOffsetsToTxn, and no AddPartitionsToTxn either: a partition leader adds a
# partition to the transaction itself when a Produce v12+ reaches it. The sidecar's transaction
# record joins a TV2 transaction the same way (``groupcoord.coordinator.txn.bridge``), so TV2 is
# offered only where the cluster finalizes transaction.version >= 2 and takes Produce v12; anywhere
# else clients are told the level is at most 1 and keep the flow of version 1. Never more than 2:
# a later level would promise what nobody here has read.
TRANSACTION_VERSION_FEATURE = "transaction.version"
SERVED_TRANSACTION_VERSION = 2
TV2_PRODUCE_VERSION = 12


def finalized_level(response: ApiVersionsResponse, feature: str) -> int:
    """The cluster's finalized level of ``feature`` (0: not finalized)."""
    return max((f.max_version_level for f in response.finalized_features if f.name == feature), default=0)


def transaction_v2(cluster: ApiVersionsResponse) -> bool:
    """Whether TxnOffsetCommit v5 (transaction version 2) can be served in front of this broker."""
    if finalized_level(cluster, TRANSACTION_VERSION_FEATURE) < 2:
        return False
    produce = next((k for k in cluster.api_keys if k.api_key == ApiKey.PRODUCE), None)
    return produce is not None and produce.min_version <= TV2_PRODUCE_VERSION <= produce.max_version


def _served_transaction_version(
    feature: ApiVersionsResponseFinalizedFeatureKey, level: int
) -> ApiVersionsResponseFinalizedFeatureKey:
    if feature.name != TRANSACTION_VERSION_FEATURE or feature.max_version_level <= level:
        return feature
    return ApiVersionsResponseFinalizedFeatureKey(
        name=feature.name, max_version_level=level, min_version_level=min(feature.min_version_level, level)
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
    tv2 = transaction_v2(cluster)
    ranges.update(served_versions(share_groups, tv2))
    supported = [f for f in cluster.supported_features if f.name != GROUP_VERSION_FEATURE]
    supported.append(
        ApiVersionsResponseSupportedFeatureKey(
            name=GROUP_VERSION_FEATURE, min_version=0, max_version=GROUP_VERSION_LEVEL
        )
    )
    level = SERVED_TRANSACTION_VERSION if tv2 else 1
    finalized = [
        _served_transaction_version(f, level) for f in cluster.finalized_features if f.name != GROUP_VERSION_FEATURE
    ]
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


# Where several sidecar processes front one cluster, each presents a coordinator the cluster
# answered (the transaction coordinator, broker N) under a node id of its own, at a listener of its
# own that forwards to N: librdkafka keeps its transaction coordinator while FindCoordinator names the same node id, and
# never follows a new address for it, so after a kill -9 of the process behind N's address a
# survivor's answer must name a different node (docs/design/multi-process-addresses.md).
ALIAS_BASE = 1_000_000_000
ALIAS_PROCESSES = 1_000_000  # process node ids are told apart modulo this (placement derives them so)
ALIAS_BROKERS = 1_000  # broker ids up to this get an alias; a larger one keeps its own id


def coordinator_alias(process_node_id: int, broker_id: int) -> int:
    """The node id under which the process ``process_node_id`` presents the cluster's broker
    ``broker_id`` as a coordinator (``broker_id`` itself when it has no alias). Below the top of
    the int32 range that the Java client keeps for coordinator connections."""
    if not 0 <= broker_id < ALIAS_BROKERS:
        return broker_id
    return ALIAS_BASE + (process_node_id % ALIAS_PROCESSES) * ALIAS_BROKERS + broker_id


def alias_nodes(
    brokers: Iterable[MetadataResponseBroker], alias: Callable[[int], int], route: BrokerRoute
) -> list[MetadataResponseBroker]:
    """The aliases of ``brokers`` as Metadata nodes (librdkafka accepts a coordinator only once
    Metadata named its node), at the addresses ``route`` gives; brokers without one add nothing."""
    nodes = []
    for b in brokers:
        if alias(b.node_id) != b.node_id:
            host, port = route(b.node_id, b.host, b.port)
            nodes.append(MetadataResponseBroker(node_id=alias(b.node_id), host=host, port=port, rack=b.rack))
    return nodes


def rewrite_find_coordinator(
    response: FindCoordinatorResponse, route: BrokerRoute, version: int, alias: Callable[[int], int] = int
) -> None:
    """Point a cluster-answered (transaction) coordinator at the sidecar listener for that broker,
    under the node id ``alias`` gives it."""
    if version >= 4:
        for entry in response.coordinators:
            if entry.error_code == 0 and entry.node_id >= 0:
                entry.host, entry.port = route(entry.node_id, entry.host, entry.port)
                entry.node_id = alias(entry.node_id)
    elif response.error_code == 0 and response.node_id >= 0:
        response.host, response.port = route(response.node_id, response.host, response.port)
        response.node_id = alias(response.node_id)
