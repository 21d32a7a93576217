"""The metrics of the runtime and the groups, over a real shard on the simulated log (no broker),
and the /metrics endpoint parsed as Prometheus parses it."""

from __future__ import annotations

import asyncio
import random
import urllib.request
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import ConnectionContext
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
)
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.coordinator.observability import metrics
from groupcoord.coordinator.observability.gateway import MeteredHandler, error_counts
from groupcoord.coordinator.observability.histogram import Histogram
from groupcoord.coordinator.observability.http import HealthServer, Readiness
from groupcoord.coordinator.observability.metrics import ShardMetrics, shard_families
from groupcoord.coordinator.observability.registry import REGISTRY
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus
from groupcoord.records import CoordinatorRecord, RecordType
from groupcoord.records.definitions import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareGroupMemberKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
)
from tests.sim.kernel import SimHost, SimLog, sim_loop


def samples(families: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def counter(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


class World:
    def __init__(self) -> None:
        self.loop = sim_loop()
        self.host = SimHost(SimLog(), self.loop, "o", random.Random(1))

    def run(self, ms: int = 1000) -> None:
        end = self.loop.clock.now_ms() + ms
        while (at := self.loop.next_at()) is not None and at <= end:
            self.loop.step()

    def loaded(self, partition: int) -> Shard[GroupCoordinatorState]:
        shard: Shard[GroupCoordinatorState] = self.host.shard(partition, GroupCoordinatorShard())
        shard.observer = ShardMetrics()
        shard.load()
        self.run()
        assert shard.status is ShardStatus.ACTIVE
        return shard


def commit(group: str, topic: str, partition: int, offset: int | None) -> CoordinatorRecord:
    value = None if offset is None else OffsetCommitValue(offset)
    return CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey(group, topic, partition), value)


def write(*records: CoordinatorRecord) -> Any:
    return lambda state, now: Result("ok", list(records))


def test_shard_gauges_and_counters_follow_what_the_shard_applies() -> None:
    world = World()
    shard = world.loaded(0)
    other = world.host.shard(1, GroupCoordinatorShard())  # owned, never loaded: not counted
    commits, deletions, expirations = (
        counter("groupcoord_offset_commits_total"),
        counter("groupcoord_offset_deletions_total"),
        counter("groupcoord_offset_expirations_total"),
    )
    rebalances = counter("groupcoord_consumer_group_rebalances_total")

    fut = shard.submit(write(commit("g", "t", 0, 5), commit("g", "t", 1, 7), commit("h", "t", 0, 1)))
    world.run()
    assert fut.result() == "ok"
    assert counter("groupcoord_offset_commits_total") == commits + 3
    got = samples(shard_families([shard, other]))
    assert got[("groupcoord_offset_count", ())] == 3
    assert got[("groupcoord_num_partitions", (("state", "active"),))] == 1
    assert got[("groupcoord_num_partitions", (("state", "loading"),))] == 0
    # Groups that only committed offsets are Empty classic groups, as Kafka counts them.
    assert got[("groupcoord_group_count", (("protocol", "classic"),))] == 2
    assert got[("groupcoord_classic_group_count", (("state", "empty"),))] == 2

    # A tombstone written for a request is a deletion, one written by a timer an expiration.
    shard.submit(write(commit("g", "t", 1, None)))
    shard.submit(write(commit("h", "t", 0, None)), cause=object())
    world.run()
    assert counter("groupcoord_offset_deletions_total") == deletions + 1
    assert counter("groupcoord_offset_expirations_total") == expirations + 1
    assert samples(shard_families([shard]))[("groupcoord_offset_count", ())] == 1

    # A consumer group's epoch bump is a rebalance; the same epoch again is not.
    bump = CoordinatorRecord(
        RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey("cg"), ConsumerGroupMetadataValue(1)
    )
    shard.submit(write(bump))
    world.run()
    shard.submit(write(bump))
    world.run()
    assert counter("groupcoord_consumer_group_rebalances_total") == rebalances + 1
    got = samples(shard_families([shard]))
    assert got[("groupcoord_group_count", (("protocol", "consumer"),))] == 1
    assert got[("groupcoord_consumer_group_count", (("state", "empty"),))] == 1


def test_share_groups_are_counted_by_state() -> None:
    """Kafka's group-count{protocol=share} and share-group-count{state}: Stable with members."""
    world = World()
    shard = world.loaded(0)
    share_meta = RecordType.SHARE_GROUP_METADATA
    shard.submit(
        write(
            CoordinatorRecord(share_meta, ShareGroupMetadataKey("idle"), ShareGroupMetadataValue(1)),
            CoordinatorRecord(share_meta, ShareGroupMetadataKey("busy"), ShareGroupMetadataValue(1)),
            CoordinatorRecord(
                RecordType.SHARE_GROUP_MEMBER_METADATA,
                ShareGroupMemberKey("busy", "m"),
                ShareGroupMemberMetadataValue("client", "/127.0.0.1", None, ["t"]),
            ),
        )
    )
    world.run()
    got = samples(shard_families([shard]))
    assert got[("groupcoord_group_count", (("protocol", "share"),))] == 2
    assert got[("groupcoord_share_group_count", (("state", "empty"),))] == 1
    assert got[("groupcoord_share_group_count", (("state", "stable"),))] == 1
    assert got[("groupcoord_share_group_count", (("state", "dead"),))] == 0
    assert got[("groupcoord_group_count", (("protocol", "consumer"),))] == 0


def test_runtime_latencies_are_observed() -> None:
    counts = {latency.name: latency.histogram.count for latency in metrics.LATENCIES}
    world = World()
    shard = world.loaded(0)
    shard.submit(write(commit("g", "t", 0, 1)))
    world.run()
    for latency in metrics.LATENCIES:
        assert latency.histogram.count > counts[latency.name], latency.name


def test_a_repeat_is_counted_as_an_event_answered_at_once() -> None:
    """``ShardMetrics.repeated`` (a steady heartbeat answered again) counts what the three hooks
    of an event answered at once count, without calling them."""
    from groupcoord.coordinator.runtime.shard import ShardObserver

    def snapshot() -> list[tuple[list[int], float]]:
        return [(list(latency.histogram.counts), latency.histogram.total) for latency in metrics.LATENCIES]

    observer = metrics.ShardMetrics()
    state = GroupCoordinatorShard().create_state()
    before = snapshot()
    ShardObserver.repeated(observer, state, HeartbeatResponse())  # the three hooks, one by one
    by_hooks = snapshot()
    observer.repeated(state, HeartbeatResponse())
    after = snapshot()
    moved_by_hooks = [[b - a for a, b in zip(x[0], y[0], strict=True)] for x, y in zip(before, by_hooks, strict=True)]
    moved = [[b - a for a, b in zip(x[0], y[0], strict=True)] for x, y in zip(by_hooks, after, strict=True)]
    assert moved == moved_by_hooks
    assert sum(map(sum, moved)) == 3  # queue, processing and purgatory time, one event each
    assert [t for _, t in after] == [t for _, t in before]


def test_histograms_are_in_seconds_and_cumulative() -> None:
    histogram = Histogram((0.001, 0.01, 0.1))
    for seconds in (0.0005, 0.001, 0.005, 0.05, 3.0):
        histogram.observe(seconds)
    got = samples([histogram.family("x_seconds", "test")])
    buckets = {dict(labels)["le"]: v for (name, labels), v in got.items() if name == "x_seconds_bucket"}
    # le is inclusive, as Prometheus' histograms have it.
    assert buckets == {"0.001": 2, "0.01": 3, "0.1": 4, "+Inf": 5}
    assert got[("x_seconds_count", ())] == 5
    assert abs(got[("x_seconds_sum", ())] - 3.0565) < 1e-9


# Each family with a Kafka equivalent, and the Kafka name its HELP text must give.
KAFKA_NAMES = {
    "groupcoord_num_partitions": "num-partitions",
    "groupcoord_partition_load_time_seconds": "partition-load-time-max",
    "groupcoord_event_queue_size": "event-queue-size",
    "groupcoord_event_queue_time_seconds": "event-queue-time-ms",
    "groupcoord_event_processing_time_seconds": "event-processing-time-ms",
    "groupcoord_event_purgatory_time_seconds": "event-purgatory-time-ms",
    "groupcoord_batch_flush_time_seconds": "batch-flush-time-ms",
    "groupcoord_group_count": "group-count",
    "groupcoord_consumer_group_count": "consumer-group-count",
    "groupcoord_classic_group_count": "classic-group-count",
    "groupcoord_share_group_count": "share-group-count",
    "groupcoord_consumer_group_rebalances": "consumer-group-rebalance-count",
    "groupcoord_group_completed_rebalances": "group-completed-rebalance-count",
    "groupcoord_offset_count": "offset-count",
    "groupcoord_offset_commits": "offset-commit-count",
    "groupcoord_offset_expirations": "offset-expiration-count",
    "groupcoord_offset_deletions": "offset-deletion-count",
    "groupcoord_gateway_connections": "connection-count",
    "groupcoord_gateway_requests": "RequestsPerSec",
    "groupcoord_gateway_responses": "ErrorsPerSec",
    "groupcoord_consumergroup_lag": "kafka_consumergroup_lag",
    "groupcoord_share_acknowledgements": "share-acknowledgement-count",
    "groupcoord_share_record_acknowledgements": "record-acknowledgement-count",
    "groupcoord_share_record_lock_expirations": "AcquisitionLockTimeoutPerSec",
    "groupcoord_share_fetch_requests": "TotalShareFetchRequestsPerSec",
    "groupcoord_share_in_flight_records": "InFlightMessageCount",
}


def test_prometheus_conventions(monkeypatch: Any) -> None:
    """Times are histograms in seconds, HELP names the Kafka metric, state labels are lower case,
    the lag has kafka_exporter's labels, and the build is told."""
    from groupcoord.coordinator.observability.lag import LagMonitor

    world = World()
    shard = world.loaded(0)
    families = list(REGISTRY.collect()) + shard_families([shard])
    families += LagMonitor({"bootstrap.servers": "127.0.0.1:1"}, lambda limit: ([], 0), 60, 10).describe()
    by_name = {f.name: f for f in families}
    for name, kafka in KAFKA_NAMES.items():
        assert kafka in by_name[name].documentation, (name, by_name[name].documentation)
    for family in families:
        if family.name.startswith("groupcoord_"):
            assert not family.name.endswith(("_ms", "_max", "_avg")), family.name
            assert family.type != "summary", family.name
            if "time" in family.name or "latency" in family.name:
                assert family.type == "histogram" and family.name.endswith("_seconds"), family.name
    for name in ("groupcoord_consumer_group_count", "groupcoord_classic_group_count", "groupcoord_share_group_count"):
        states = {s.labels["state"] for s in by_name[name].samples}
        assert states and all(state == state.lower() for state in states), states
    assert {"preparingrebalance", "completingrebalance", "stable", "dead", "empty"} == {
        s.labels["state"] for s in by_name["groupcoord_classic_group_count"].samples
    }
    assert {"assigning", "reconciling", "stable", "dead", "empty"} == {
        s.labels["state"] for s in by_name["groupcoord_consumer_group_count"].samples
    }
    lag = by_name["groupcoord_consumergroup_lag"]
    assert isinstance(lag, GaugeMetricFamily)
    lag.add_metric(["g", "t", "0"], 1)  # the labels it is built with
    assert set(lag.samples[0].labels) == {"consumergroup", "topic", "partition"}
    (build,) = by_name["groupcoord_build"].samples
    assert build.name == "groupcoord_build_info" and build.value == 1 and build.labels["version"]


def test_error_counts_walk_nested_answers() -> None:
    response = OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="t",
                partitions=[
                    OffsetCommitResponsePartition(partition_index=0, error_code=0),
                    OffsetCommitResponsePartition(partition_index=1, error_code=25),
                    OffsetCommitResponsePartition(partition_index=2, error_code=25),
                ],
            )
        ]
    )
    codes: dict[int, int] = {}
    error_counts(response, codes)
    assert codes == {0: 1, 25: 2}


def test_metrics_endpoint_serves_the_registry() -> None:
    server = HealthServer("127.0.0.1:0", Readiness(), REGISTRY)
    try:
        with urllib.request.urlopen(f"http://{server.address}/metrics", timeout=5) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            text = response.read().decode()
        names = {f.name for f in text_string_to_metric_families(text)}
        assert {"groupcoord_offset_commits", "groupcoord_event_purgatory_time_seconds", "process_cpu_seconds"} <= names
        assert "groupcoord_build_info" in names
    finally:
        server.close()


def test_a_shard_whose_writes_are_not_read_back_shows_in_the_gauges() -> None:
    world = World()
    shard = world.loaded(0)
    got = samples(shard_families([shard]))
    assert got[("groupcoord_event_purgatory_oldest_seconds", (("partition", "0"),))] == 0
    assert got[("groupcoord_stuck_partitions", ())] == 0
    world.host.wedge(0)
    shard.submit(write(commit("g", "t", 0, 5)))
    world.run(100)
    world.loop.clock.advance(2000)
    shard.check_stuck(world.loop.clock.now_ms(), 1000, 60_000)
    got = samples(shard_families([shard]))
    assert got[("groupcoord_event_purgatory_oldest_seconds", (("partition", "0"),))] >= 2.0
    assert got[("groupcoord_stuck_partitions", ())] == 1


def test_transactional_commits_and_their_outcomes_are_counted() -> None:
    from groupcoord.coordinator.offsets import transactions as txn
    from groupcoord.records.definitions import PendingTxnOffset

    world = World()
    shard = world.loaded(0)
    staged, committed, aborted = (
        counter("groupcoord_txn_offset_commits_total"),
        counter("groupcoord_txn_commits_total"),
        counter("groupcoord_txn_aborts_total"),
    )
    offsets = [PendingTxnOffset("t", 0, 5)]
    for pid, at in ((7, 1), (8, 2)):
        shard.submit(write(*txn.staging_records("g", pid, at, "tx", txn.Sequence(0, 0), offsets, 0)))
    world.run()
    assert counter("groupcoord_txn_offset_commits_total") == staged + 2
    shard.submit(lambda state, now: Result("ok", txn.resolve(state.txn, 7, 5, True, now)))
    shard.submit(lambda state, now: Result("ok", txn.resolve(state.txn, 8, 5, False, now)))
    world.run()
    assert counter("groupcoord_txn_commits_total") == committed + 1
    assert counter("groupcoord_txn_aborts_total") == aborted + 1


def test_group_requests_handled_are_timed_by_api() -> None:
    # The handled-latency histogram (handler call to answer) counts each group request handled.
    class Inner:
        async def handle(self, context: ConnectionContext, request: Any) -> Any:
            return HeartbeatResponse()

    def handled() -> float:
        return (
            REGISTRY.get_sample_value("groupcoord_gateway_handled_latency_seconds_count", {"api": "Heartbeat"}) or 0.0
        )

    before = handled()
    context = ConnectionContext(RequestHeader(12, 4, 1, "c"), "127.0.0.1", 1, 9092, None)
    asyncio.run(MeteredHandler(Inner()).handle(context, HeartbeatRequest()))
    assert handled() == before + 1


def test_an_answer_with_its_one_error_code_at_the_top_is_counted_as_a_nested_one_is() -> None:
    # A heartbeat's answer (its assignment holds no error code) takes the metered handler's short
    # way; the count by error name is the same as the walk's.
    answers = [
        ConsumerGroupHeartbeatResponse(error_code=25, error_message="unknown member"),
        ConsumerGroupHeartbeatResponse(
            member_id="m",
            member_epoch=2,
            assignment=ConsumerGroupHeartbeatResponseAssignment(topic_partitions=[]),
        ),
    ]

    class Inner:
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        def answer_now(self, context: ConnectionContext, request: Any) -> Any:
            return self.answer

    def count(error: str) -> float:
        name = "groupcoord_gateway_responses_total"
        return REGISTRY.get_sample_value(name, {"api": "ConsumerGroupHeartbeat", "error": error}) or 0.0

    context = ConnectionContext(RequestHeader(68, 1, 1, "c"), "127.0.0.1", 1, 9092, None)
    for answer in answers:
        walked: dict[int, int] = {}
        error_counts(answer, walked)
        (code,) = walked
        name = ErrorCode(code).name
        before = count(name)
        assert MeteredHandler(Inner(answer)).answer_now(context, None) is answer  # type: ignore[arg-type]
        assert count(name) == before + 1


def walked_counts(shard: Shard[GroupCoordinatorState]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The group and offset gauges as a walk over every group and offset finds them (what a
    scrape computed before the counts were kept as the state changes)."""
    live = shard.live
    states: dict[str, dict[str, int]] = {"classic": {}, "consumer": {}, "share": {}}

    def add(protocol: str, state: str) -> None:
        states[protocol][state] = states[protocol].get(state, 0) + 1

    for cg in live.consumer.groups.values():
        add("consumer", cg.state().value.lower())
    for group in live.classic.groups.values():
        add("classic", group.state.value.lower())
    for sg in live.share.groups.values():
        add("share", sg.state().value.lower())
    for gid in live.offsets.offsets:
        if gid not in live.consumer.groups and gid not in live.classic.groups:
            add("classic", "empty")
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {
        ("groupcoord_offset_count", ()): float(
            sum(len(parts) for topics in shard.committed.offsets.offsets.values() for parts in topics.values())
        )
    }
    for protocol, counts in states.items():
        out[("groupcoord_group_count", (("protocol", protocol),))] = float(sum(counts.values()))
        for state, count in counts.items():
            out[(f"groupcoord_{protocol}_group_count", (("state", state),))] = float(count)
    return out


def test_group_and_offset_counts_stay_right_as_groups_change() -> None:
    """The offset count is kept as replays change the offsets, and the offset-only groups are
    counted without a walk over them: after every random change (commits, deletions, consumer
    and share groups made, emptied, deleted; a reload from the log), the gauges equal a walk's,
    and the scrape's sliced pass on the loop gives what the one at once gives."""
    world = World()
    shard = world.loaded(0)
    rng = random.Random(7)
    loop = asyncio.new_event_loop()
    try:
        for step in range(300):
            group = f"g{rng.randrange(12)}"
            roll = rng.random()
            if roll < 0.55:
                records = [
                    commit(group, f"t{rng.randrange(3)}", rng.randrange(4), None if rng.random() < 0.3 else step)
                    for _ in range(rng.randrange(1, 5))
                ]
            elif roll < 0.8:
                metadata = None if rng.random() < 0.3 else ConsumerGroupMetadataValue(step)
                records = [
                    CoordinatorRecord(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey(group), metadata)
                ]
            else:
                share_group = f"s{rng.randrange(4)}"
                records = [
                    CoordinatorRecord(
                        RecordType.SHARE_GROUP_METADATA,
                        ShareGroupMetadataKey(share_group),
                        ShareGroupMetadataValue(step),
                    )
                ]
            shard.submit(write(*records))
            world.run()
            if step % 100 == 99:
                shard.reload("test")
                world.run()
                assert shard.status is ShardStatus.ACTIVE
            got = samples(shard_families([shard]))
            for key, value in walked_counts(shard).items():
                assert got[key] == value, (step, key)
            assert shard.committed.offsets.count == got[("groupcoord_offset_count", ())]
            assert shard.live.offsets.count == shard.committed.offsets.count
            if step % 50 == 0:
                sliced = loop.run_until_complete(metrics.shard_families_in_slices([shard]))
                assert samples(sliced) == got
    finally:
        loop.close()
