"""``/metrics`` of a real ``groupcoord serve`` against the real local broker, scraped over HTTP and
parsed with Prometheus' own parser, after real client actions through the sidecar."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.coordinator.observability.lag import LagMonitor
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.local_broker import free_port
from tests.clients.support import create_topic, produce
from tests.ha.sidecars import Sidecar, stop_all, wait_for
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(address: str) -> Samples:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def eventually(
    address: str, check: Callable[[Samples], bool], what: str, step: Callable[[], None] | None = None
) -> Samples:
    """Scrape until ``check`` holds (bounded: the test fails after 60 s, it never times anything)."""
    deadline = time.monotonic() + 60
    while True:
        got = scrape(address)
        if check(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"/metrics never showed {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.1)


@pytest.fixture
def serve(bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ServeProcess, str]]:
    address = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("GROUPCOORD_METRICS_LISTEN", address)
    monkeypatch.setenv("GROUPCOORD_METRICS_LAG_INTERVAL_MS", "300")
    monkeypatch.setenv("GROUPCOORD_METADATA_REFRESH_INTERVAL_MS", "1000")
    monkeypatch.setenv("GROUPCOORD_GROUP", json.dumps({"group.initial.rebalance.delay.ms": "0"}))
    process = ServeProcess(bootstrap, free_port(), unique_name, partitions=2).start()
    try:
        yield process, address
    finally:
        process.stop()


def test_metrics_follow_commits_groups_requests_and_lag(serve: tuple[ServeProcess, str], bootstrap: str) -> None:
    sidecar, address = serve
    topic = f"{sidecar.args[sidecar.args.index('--log-topic') + 1]}-data"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 10, 2)  # 10 records in each partition

    before = scrape(address)
    # Each process exports the shards it owns: this one owns both.
    assert value(before, "groupcoord_num_partitions", state="active") == 2
    assert value(before, "groupcoord_num_partitions", state="loading") == 0

    # Commits through a real consumer (a group without membership: an Empty classic group).
    committer = Consumer({"bootstrap.servers": sidecar.bootstrap, "group.id": "lagging", "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 10)], asynchronous=False)
    finally:
        committer.close()
    after = scrape(address)
    assert value(after, "groupcoord_offset_count") == value(before, "groupcoord_offset_count") + 2
    assert value(after, "groupcoord_offset_commits_total") == value(before, "groupcoord_offset_commits_total") + 2
    assert value(after, "groupcoord_classic_group_count", state="empty") >= 1
    # The gateway saw the commit, answered it itself without error, and forwarded Metadata.
    assert value(after, "groupcoord_gateway_requests_total", api="OffsetCommit") >= 1
    assert value(after, "groupcoord_gateway_responses_total", api="OffsetCommit", error="NONE") >= 2
    assert value(after, "groupcoord_gateway_forwarded_bytes_total", api="Metadata", direction="in") > 0
    assert value(after, "groupcoord_gateway_upstream_latency_seconds_count", api="Metadata") >= 1
    # The commits went through the write path: appended, flushed, released after read-back.
    assert value(after, "groupcoord_event_purgatory_time_seconds_count") > value(
        before, "groupcoord_event_purgatory_time_seconds_count"
    )
    assert value(after, "groupcoord_batch_flush_time_seconds_count") >= 1
    assert value(after, "groupcoord_partition_load_time_seconds_count") >= 2  # both shards loaded

    # Lag: high watermark 10 minus committed 4 on partition 0; 0 on partition 1.
    lagged = eventually(
        address,
        lambda s: (
            ("groupcoord_consumergroup_lag", (("consumergroup", "lagging"), ("partition", "0"), ("topic", topic))) in s
        ),
        "the lag of group 'lagging'",
    )
    assert value(lagged, "groupcoord_consumergroup_lag", consumergroup="lagging", topic=topic, partition="0") == 6
    assert value(lagged, "groupcoord_consumergroup_lag", consumergroup="lagging", topic=topic, partition="1") == 0
    assert value(lagged, "groupcoord_consumergroup_lag_partitions_omitted") == 0

    # A KIP-848 group and a classic group with a member each show under their protocol.
    members = []
    try:
        for group, protocol in (("modern", "consumer"), ("classic", "classic")):
            member = Consumer(
                {
                    "bootstrap.servers": sidecar.bootstrap,
                    "group.id": group,
                    "group.protocol": protocol,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
            member.subscribe([topic])
            members.append(member)

        def poll() -> None:
            for member in members:
                member.poll(0.05)

        joined = eventually(
            address,
            lambda s: (
                value(s, "groupcoord_consumer_group_count", state="stable") == 1
                and value(s, "groupcoord_classic_group_count", state="stable") == 1
            ),
            "a stable consumer group and a stable classic group",
            step=poll,
        )
        assert value(joined, "groupcoord_group_count", protocol="consumer") == 1
        # The committing group (Empty) and the joined one (Stable).
        assert value(joined, "groupcoord_group_count", protocol="classic") == 2
        assert value(joined, "groupcoord_consumer_group_rebalances_total") >= 1
        assert value(joined, "groupcoord_group_completed_rebalances_total") >= 1
        assert value(joined, "groupcoord_gateway_requests_total", api="ConsumerGroupHeartbeat") >= 1
        assert value(joined, "groupcoord_gateway_requests_total", api="JoinGroup") >= 1
        assert value(joined, "groupcoord_gateway_connections") >= 2
    finally:
        for member in members:
            member.close()


def test_lag_monitor_reads_fetch_watermarks(bootstrap: str, unique_name: str) -> None:
    """The lag refresher alone, over given committed offsets, against the real broker."""
    topic = f"{unique_name}-lag"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, 25, 1)
    committed = [("g", topic, 0, 5), ("h", topic, 0, 25), ("i", topic, 0, 30)]
    monitor = LagMonitor({"bootstrap.servers": bootstrap}, lambda limit: (committed[:limit], len(committed)), 60, 2)
    try:
        monitor.refresh()
        got = {
            (s.labels["consumergroup"], s.labels["partition"]): s.value
            for family in monitor.collect()
            if family.name == "groupcoord_consumergroup_lag"
            for s in family.samples
        }
        # Only two series (the cap); the third is counted as omitted.
        assert got == {("g", "0"): 20, ("h", "0"): 0}
        omitted = [f for f in monitor.collect() if f.name == "groupcoord_consumergroup_lag_partitions_omitted"]
        assert omitted[0].samples[0].value == 1
        # A second round starts at the watermark it saw, and sees new records.
        produce(bootstrap, topic, 5, 1)
        monitor.refresh()
        lags = [s.value for f in monitor.collect() if f.name == "groupcoord_consumergroup_lag" for s in f.samples]
        assert sorted(lags) == [5, 25]
    finally:
        monitor.close()


def _readyz_shards(address: str) -> dict[str, str]:
    try:
        with urllib.request.urlopen(f"http://{address}/readyz", timeout=10) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = json.loads(error.read())
    shards: dict[str, str] = body["shards"]
    return shards


def test_each_process_exports_only_the_shards_it_owns(
    bootstrap: str, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    partitions = 4
    topic = f"{unique_name}-data"
    ensure_topic(bootstrap, topic)
    addresses: list[str] = []
    sidecars: list[Sidecar] = []
    monkeypatch.setenv("GROUPCOORD_METRICS_LAG_INTERVAL_MS", "0")
    try:
        for i in range(2):
            addresses.append(f"127.0.0.1:{free_port()}")
            monkeypatch.setenv("GROUPCOORD_METRICS_LISTEN", addresses[-1])
            sidecars.append(Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", partitions).spawn())
        for sidecar in sidecars:
            sidecar.wait_listening()

        def split() -> bool:
            owned = [_readyz_shards(a) for a in addresses]
            return all(owned) and sum(len(o) for o in owned) == partitions

        wait_for(split, 90, "the shards to be split between the two processes")
        owned = [{int(p) for p, state in _readyz_shards(a).items() if state == "active"} for a in addresses]
        for address, mine in zip(addresses, owned, strict=True):
            assert value(scrape(address), "groupcoord_num_partitions", state="active") == len(mine)

        # A commit is counted by the process that owns the group's shard, and only by it.
        group = "owned-by-one"
        before = [value(scrape(a), "groupcoord_offset_count") for a in addresses]
        committer = Consumer(
            {"bootstrap.servers": ",".join(s.address for s in sidecars), "group.id": group, "enable.auto.commit": False}
        )
        try:
            committer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        finally:
            committer.close()
        after = [value(scrape(a), "groupcoord_offset_count") for a in addresses]
        owner = next(i for i, mine in enumerate(owned) if partition_for(group, partitions) in mine)
        assert after[owner] == before[owner] + 1
        assert after[1 - owner] == before[1 - owner]
    finally:
        stop_all(sidecars)
