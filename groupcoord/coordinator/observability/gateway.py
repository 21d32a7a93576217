"""The gateway's Prometheus metrics (in ``groupcoord.coordinator.observability.registry.REGISTRY``).

Kafka's broker has the same measures under other names (``kafka.network:type=RequestMetrics``):

===============================================  ============================================
Kafka broker                                     here
===============================================  ============================================
connection-count                                 groupcoord_gateway_connections
RequestsPerSec{request}                          groupcoord_gateway_requests_total{api}
ErrorsPerSec{request,error}                      groupcoord_gateway_responses_total{api,error}
(bytes of forwarded requests / responses)        groupcoord_gateway_forwarded_bytes_total{api,direction}
(time to the backing broker's answer)            groupcoord_gateway_upstream_latency_seconds{api} (histogram)
===============================================  ============================================

``requests`` counts every request a client sent; ``responses`` counts the error codes of the
answers the sidecar gives itself (the group APIs), each code as often as it occurs in an answer,
as Kafka's ``ErrorsPerSec`` does; forwarded answers carry the backing cluster's own errors, which
its own metrics count. Label values are bounded: API names come from a fixed table (any other
key is ``unknown``), error names from ``ErrorCode``.

Hooks run on the gateway's loop thread: a dictionary lookup and an integer increment per request
(about 0.1 us), plus one done-callback per forwarded answer (about 1.5 us, the callback's
scheduling most of it); a scrape reads the integers without a lock.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import Gauge
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.handler import AnswerNow, answer_now_of
from groupcoord.coordinator.gateway.observer import GatewayObserver
from groupcoord.coordinator.messages.offset_commit_columns import COLUMNAR_STRUCTS
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.observability.histogram import UPSTREAM_BUCKETS, Histogram
from groupcoord.coordinator.observability.registry import REGISTRY

if TYPE_CHECKING:
    from groupcoord.coordinator.gateway.handler import ConnectionContext, GroupApiHandler
    from groupcoord.coordinator.gateway.upstream import Answer

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
    "ShareGroupHeartbeat",
    "ShareGroupDescribe",
    "ShareFetch",
    "ShareAcknowledge",
    "AddRaftVoter",
    "RemoveRaftVoter",
    "UpdateRaftVoter",
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "WriteShareGroupState",
    "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
    "StreamsGroupHeartbeat",
    "StreamsGroupDescribe",
    "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets",
    "DeleteShareGroupOffsets",
]

CONNECTIONS = Gauge(
    "groupcoord_gateway_connections", "Open client connections (Kafka broker connection-count).", registry=REGISTRY
)


def api_name(key: int) -> str:
    return _API_NAMES[key] if 0 <= key < len(_API_NAMES) else "unknown"


class _Api:
    """The counts of one API. Plain integers: the gateway's loop thread is their one writer, and
    a scrape reads them without a lock (a locked ``prometheus_client`` metric costs several
    times more on the forward path)."""

    __slots__ = ("bytes_in", "bytes_out", "handled", "latency", "name", "requests", "responses")

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests = 0
        self.bytes_out = 0
        self.bytes_in = 0
        self.latency = Histogram(UPSTREAM_BUCKETS)
        self.handled = Histogram(UPSTREAM_BUCKETS)  # group APIs: from the handler's call to its answer
        self.responses: dict[str, int] = {}  # error name -> occurrences


_apis: dict[int, _Api] = {}


def _api(key: int) -> _Api:
    api = _apis.get(key)
    if api is None:
        name = api_name(key)
        # Every key without a name shares the one "unknown" entry, so labels stay bounded.
        api = next((a for a in _apis.values() if a.name == name), None) or _Api(name)
        _apis[key] = api
    return api


def request(key: int) -> None:
    """A client sent a request with API ``key``."""
    _api(key).requests += 1


def forwarded(key: int, size: int, answer: Answer) -> None:
    """A request of ``size`` bytes went to the backing cluster; ``answer`` is its response."""
    api = _api(key)
    api.bytes_out += size
    if answer.arrived:
        return  # no answer expected (Produce with acks=0)
    sent = time.perf_counter()

    def answered(answer_size: int) -> None:
        api.latency.observe(time.perf_counter() - sent)
        api.bytes_in += answer_size

    answer.on_arrival(answered)


class GatewayMetrics(GatewayObserver):
    """The gateway's observer: counts into this module's families."""

    def request(self, key: int) -> None:
        request(key)

    def forwarded(self, key: int, size: int, answer: Answer) -> None:
        forwarded(key, size, answer)


class _Collector(Collector):
    def collect(self) -> Iterable[Metric]:
        apis = {a.name: a for a in list(_apis.values())}.values()
        requests = CounterMetricFamily(
            "groupcoord_gateway_requests", "Requests read from clients, by API (Kafka RequestsPerSec).", labels=["api"]
        )
        responses = CounterMetricFamily(
            "groupcoord_gateway_responses",
            "Error codes in the answers the sidecar gives itself (group APIs), by API and error (Kafka ErrorsPerSec).",
            labels=["api", "error"],
        )
        forwarded_bytes = CounterMetricFamily(
            "groupcoord_gateway_forwarded_bytes",
            "Bytes forwarded to the backing cluster (direction=out) and back from it (direction=in), by API.",
            labels=["api", "direction"],
        )
        latency = HistogramMetricFamily(
            "groupcoord_gateway_upstream_latency_seconds",
            "Time from forwarding a request to the backing broker's answer.",
            labels=["api"],
        )
        handled = HistogramMetricFamily(
            "groupcoord_gateway_handled_latency_seconds",
            "Group APIs: time from the sidecar's handler taking a request to its answer (the shard's "
            "queue and the read-back of what it wrote included; not the wait before it was read).",
            labels=["api"],
        )
        for api in apis:
            requests.add_metric([api.name], api.requests)
            if api.handled.count:
                handled.add_metric([api.name], api.handled.buckets(), api.handled.total)
            for error, count in list(api.responses.items()):
                responses.add_metric([api.name, error], count)
            if api.bytes_out:
                forwarded_bytes.add_metric([api.name, "out"], api.bytes_out)
                forwarded_bytes.add_metric([api.name, "in"], api.bytes_in)
                latency.add_metric([api.name], api.latency.buckets(), api.latency.total)
        return [requests, responses, forwarded_bytes, latency, handled]


REGISTRY.register(_Collector())


def connections(count: Callable[[], int]) -> None:
    """The connection gauge reads ``count`` when scraped."""
    CONNECTIONS.set_function(lambda: float(count()))


def error_counts(message: Any, into: dict[int, int]) -> None:
    """Every ``error_code`` in ``message`` and its nested structs and arrays (Kafka's errorCounts)."""
    if type(message) in COLUMNAR_STRUCTS and message.columns is not None:
        # Partitions held as columns (``messages/offset_commit_columns``): counted there.
        codes = message.columns.codes
        for code in set(codes):
            into[code] = into.get(code, 0) + codes.count(code)
        return
    for name, kind in _code_paths(type(message)):
        value = getattr(message, name, None)
        if kind == "code":
            if isinstance(value, int):
                into[value] = into.get(value, 0) + 1
        elif kind == "struct":
            if value is not None:
                error_counts(value, into)
        elif value:
            for item in value:
                error_counts(item, into)


# Message class -> (field, "code" | "struct" | "array") for its error code and the fields holding
# structs with one somewhere below: a steady heartbeat's answer has one such field of seven, and
# walking them all was a visible part of its metrics.
_CODE_PATHS: dict[type, tuple[tuple[str, str], ...]] = {}


def _code_paths(cls: type) -> tuple[tuple[str, str], ...]:
    paths = _CODE_PATHS.get(cls)
    if paths is not None:
        return paths
    _CODE_PATHS[cls] = ()  # a struct holding itself adds nothing more
    found = []
    for field in cls.SCHEMA:  # type: ignore[attr-defined]
        if field.name == "error_code":
            found.append((field.name, "code"))
        elif field.kind in ("struct", "array") and field.struct is not None and _code_paths(field.struct):
            found.append((field.name, field.kind))
    paths = tuple(found)
    _CODE_PATHS[cls] = paths = _TOP_LEVEL_CODE if paths == _TOP_LEVEL_CODE else paths
    return paths


_TOP_LEVEL_CODE = (("error_code", "code"),)


def _error_name(code: int) -> str:
    name = _ERROR_NAMES.get(code)
    if name is None:
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = "unknown"
        if len(_ERROR_NAMES) < 1024:  # codes come from handlers, but keep the cache bounded anyway
            _ERROR_NAMES[code] = name
    return name


# Error code -> its label: an enum lookup per answer was a visible part of a heartbeat's CPU.
_ERROR_NAMES: dict[int, str] = {}


class _RepeatCounter:
    """Counts an answer given again (``steady_answers``) under its API and error code, handled
    in no measurable time."""

    __slots__ = ("api", "name")

    def __init__(self, api: _Api, name: str) -> None:
        self.api, self.name = api, name

    def __call__(self) -> None:
        api = self.api
        api.handled.observe(0.0)
        api.responses[self.name] = api.responses.get(self.name, 0) + 1


_REPEAT_COUNTERS: dict[tuple[int, int], _RepeatCounter] = {}


def _repeat_counter(api_key: int, error_code: int) -> _RepeatCounter:
    counter = _REPEAT_COUNTERS.get((api_key, error_code))
    if counter is None:
        counter = _REPEAT_COUNTERS[(api_key, error_code)] = _RepeatCounter(_api(api_key), _error_name(error_code))
    return counter


class MeteredHandler:
    """A ``GroupApiHandler`` that counts the error codes of the answers of the one it wraps."""

    def __init__(self, inner: GroupApiHandler) -> None:
        self.inner = inner

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        return await self._counted(context, time.perf_counter(), self.inner.handle(context, request))

    def answer_now(self, context: ConnectionContext, request: Message) -> AnswerNow:
        answer_now = answer_now_of(self.inner)
        if answer_now is None:
            return None
        started = time.perf_counter()
        answer = answer_now(context, request)
        if answer is None:
            return None
        if isinstance(answer, Message):
            self._count(context, started, answer)
            if _code_paths(type(answer)) is _TOP_LEVEL_CODE:
                # A repeat is counted as this one was, by one counter shared by all such answers.
                steady_answers.vouch(answer, renew=_repeat_counter(context.header.api_key, answer.error_code))  # type: ignore[attr-defined]
            else:
                steady_answers.refuse()
            return answer
        return self._counted(context, started, answer)

    async def _counted(self, context: ConnectionContext, started: float, answer: Awaitable[Message]) -> Message:
        return self._count(context, started, await answer)

    def _count(self, context: ConnectionContext, started: float, response: Message) -> Message:
        api = _api(context.header.api_key)
        api.handled.observe(time.perf_counter() - started)
        counts = api.responses
        if _code_paths(type(response)) is _TOP_LEVEL_CODE:
            # One error code, at the top (a heartbeat's answer): no walk.
            name = _error_name(response.error_code)  # type: ignore[attr-defined]
            counts[name] = counts.get(name, 0) + 1
            return response
        codes: dict[int, int] = {}
        error_counts(response, codes)
        for code, count in codes.items():
            name = _error_name(code)
            counts[name] = counts.get(name, 0) + count
        return response
