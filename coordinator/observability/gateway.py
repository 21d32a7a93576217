"""The gateway's Prometheus metrics (in ``coordinator.observability.metrics.REGISTRY``).

Kafka's broker has the same measures under other names (``kafka.network:type=RequestMetrics``):

===============================================  ============================================
Kafka broker                                     here
===============================================  ============================================
connection-count                                 groupcoord_gateway_connections
RequestsPerSec{request}                          groupcoord_gateway_requests_total{api}
ErrorsPerSec{request,error}                      groupcoord_gateway_responses_total{api,error}
(bytes of forwarded requests / responses)        groupcoord_gateway_forwarded_bytes_total{api,direction}
(time to the backing broker's answer)            groupcoord_gateway_upstream_latency_ms{api} (histogram)
===============================================  ============================================

``requests`` counts every request a client sent; ``responses`` counts the error codes of the
answers the sidecar gives itself (the group APIs), each code as often as it occurs in an answer,
as Kafka's ``ErrorsPerSec`` does; forwarded answers carry the backing cluster's own errors, which
its own metrics count. Label values are bounded: API names come from a fixed table (any other
key is ``unknown``), error names from ``ErrorCode``.

Hooks run on the gateway's loop thread and cost a dictionary lookup and a counter increment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter, Gauge, Histogram

from coordinator.errors import ErrorCode
from coordinator.observability.registry import REGISTRY

if TYPE_CHECKING:
    from coordinator.gateway.handler import GroupApiHandler, RequestContext
    from coordinator.gateway.schema import Message

# Kafka's API names by key (the "name" of each message schema, less "Request").
_API_NAMES = [
    "Produce",
    "Fetch",
    "ListOffsets",
    "Metadata",
    "LeaderAndIsr",
    "StopReplica",
    "UpdateMetadata",
    "ControlledShutdown",
    "OffsetCommit",
    "OffsetFetch",
    "FindCoordinator",
    "JoinGroup",
    "Heartbeat",
    "LeaveGroup",
    "SyncGroup",
    "DescribeGroups",
    "ListGroups",
    "SaslHandshake",
    "ApiVersions",
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "InitProducerId",
    "OffsetForLeaderEpoch",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn",
    "WriteTxnMarkers",
    "TxnOffsetCommit",
    "DescribeAcls",
    "CreateAcls",
    "DeleteAcls",
    "DescribeConfigs",
    "AlterConfigs",
    "AlterReplicaLogDirs",
    "DescribeLogDirs",
    "SaslAuthenticate",
    "CreatePartitions",
    "CreateDelegationToken",
    "RenewDelegationToken",
    "ExpireDelegationToken",
    "DescribeDelegationToken",
    "DeleteGroups",
    "ElectLeaders",
    "IncrementalAlterConfigs",
    "AlterPartitionReassignments",
    "ListPartitionReassignments",
    "OffsetDelete",
    "DescribeClientQuotas",
    "AlterClientQuotas",
    "DescribeUserScramCredentials",
    "AlterUserScramCredentials",
    "Vote",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "DescribeQuorum",
    "AlterPartition",
    "UpdateFeatures",
    "Envelope",
    "FetchSnapshot",
    "DescribeCluster",
    "DescribeProducers",
    "BrokerRegistration",
    "BrokerHeartbeat",
    "UnregisterBroker",
    "DescribeTransactions",
    "ListTransactions",
    "AllocateProducerIds",
    "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe",
    "ControllerRegistration",
    "GetTelemetrySubscriptions",
    "PushTelemetry",
    "AssignReplicasToDirs",
    "ListClientMetricsResources",
    "DescribeTopicPartitions",
]

CONNECTIONS = Gauge("groupcoord_gateway_connections", "Open client connections.", registry=REGISTRY)
REQUESTS = Counter("groupcoord_gateway_requests", "Requests read from clients, by API.", ["api"], registry=REGISTRY)
RESPONSES = Counter(
    "groupcoord_gateway_responses",
    "Error codes in the answers the sidecar gives itself (group APIs), by API and error.",
    ["api", "error"],
    registry=REGISTRY,
)
FORWARDED_BYTES = Counter(
    "groupcoord_gateway_forwarded_bytes",
    "Bytes forwarded to the backing cluster (direction=out) and back from it (direction=in), by API.",
    ["api", "direction"],
    registry=REGISTRY,
)
UPSTREAM_LATENCY = Histogram(
    "groupcoord_gateway_upstream_latency_ms",
    "Time from forwarding a request to the backing broker's answer (ms).",
    ["api"],
    buckets=(0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
    registry=REGISTRY,
)


def api_name(key: int) -> str:
    return _API_NAMES[key] if 0 <= key < len(_API_NAMES) else "unknown"


class _Api:
    """The metric children of one API, looked up once."""

    __slots__ = ("bytes_in", "bytes_out", "latency", "name", "requests")

    def __init__(self, key: int) -> None:
        self.name = api_name(key)
        self.requests = REQUESTS.labels(self.name)
        self.bytes_out = FORWARDED_BYTES.labels(self.name, "out")
        self.bytes_in = FORWARDED_BYTES.labels(self.name, "in")
        self.latency = UPSTREAM_LATENCY.labels(self.name)


_apis: dict[int, _Api] = {}


def _api(key: int) -> _Api:
    api = _apis.get(key)
    if api is None:
        api = _apis[key] = _Api(key if 0 <= key < len(_API_NAMES) else -1)
    return api


def request(key: int) -> None:
    """A client sent a request with API ``key``."""
    _api(key).requests.inc()


def forwarded(key: int, size: int, answer: asyncio.Future[bytes]) -> None:
    """A request of ``size`` bytes went to the backing cluster; ``answer`` yields its response."""
    api = _api(key)
    api.bytes_out.inc(size)
    if answer.done():
        return  # no answer expected (Produce with acks=0)
    sent = time.perf_counter()

    def answered(fut: asyncio.Future[bytes]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        api.latency.observe((time.perf_counter() - sent) * 1000)
        api.bytes_in.inc(len(fut.result()))

    answer.add_done_callback(answered)


def connections(count: Callable[[], int]) -> None:
    """The connection gauge reads ``count`` when scraped."""
    CONNECTIONS.set_function(lambda: float(count()))


def error_counts(message: Any, into: dict[int, int]) -> None:
    """Every ``error_code`` in ``message`` and its nested structs and arrays (Kafka's errorCounts)."""
    for field in message.SCHEMA:
        value = getattr(message, field.name, None)
        if field.name == "error_code" and isinstance(value, int):
            into[value] = into.get(value, 0) + 1
        elif field.kind == "struct" and value is not None:
            error_counts(value, into)
        elif field.kind == "array" and field.struct is not None and value:
            for item in value:
                error_counts(item, into)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return "unknown"


class MeteredHandler:
    """A ``GroupApiHandler`` that counts the error codes of the answers of the one it wraps."""

    def __init__(self, inner: GroupApiHandler) -> None:
        self.inner = inner

    async def handle(self, context: RequestContext, request: Message) -> Message:
        response = await self.inner.handle(context, request)
        codes: dict[int, int] = {}
        error_counts(response, codes)
        name = api_name(context.api_key)
        for code, count in codes.items():
            RESPONSES.labels(name, _error_name(code)).inc(count)
        return response
