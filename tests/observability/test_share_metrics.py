"""The share data path's metrics: lock expirations and in-flight records over a real shard on the
simulated log; fetches and acknowledgements by type through a real ``groupcoord serve`` with
confluent-kafka's ``ShareConsumer``, and reads of the cluster by raw ShareFetches, scraped from
/metrics."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from groupcoord.coordinator.observability.metrics import shard_families
from groupcoord.coordinator.share import shard_ops
from groupcoord.coordinator.share.partition_types import OffsetRange, SharePartitionConfig
from groupcoord.coordinator.share.state import SharePartitionKey
from groupcoord.local_broker import free_port
from tests.client_records import value_of
from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess
from tests.observability.test_metrics import World, counter, samples
from tests.observability.test_metrics_serve import Samples, eventually, scrape, value
from tests.share_data.test_share_consumer import _produce, _set_group_config, _topic_id, _wire_fetch, _wire_member

KEY = SharePartitionKey("g", "t", 0)
CONFIG = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=5)


def test_lock_expirations_and_in_flight_records_follow_the_shard() -> None:
    world = World()
    shard = world.loaded(0)
    expirations = counter("groupcoord_share_record_lock_expirations_total")
    shard.submit(lambda s, now: shard_ops.ensure(s.share_data, [(KEY, CONFIG, None, 0)]))
    world.run(100)
    got = shard.submit(
        lambda s, now: shard_ops.acquire(s.share_data, "m", [shard_ops.Fetched(KEY, 0, (OffsetRange(0, 9),))], 4, now)
    )
    world.run(100)
    assert sum(a.last_offset - a.first_offset + 1 for a in got.result()[KEY]) == 4
    assert samples(shard_families([shard]))[("groupcoord_share_in_flight_records", ())] == 4
    # The shard's lock timer gives the 4 records back when their lock runs out.
    world.run(2000)
    assert counter("groupcoord_share_record_lock_expirations_total") == expirations + 4
    # Available again, still in flight (not done).
    assert samples(shard_families([shard]))[("groupcoord_share_in_flight_records", ())] == 4


@pytest.fixture
def serve(bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ServeProcess, str]]:
    address = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("GROUPCOORD_METRICS_LISTEN", address)
    monkeypatch.setenv("GROUPCOORD_METRICS_LAG_INTERVAL_MS", "0")
    process = ServeProcess(bootstrap, free_port(), unique_name).start(env={"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"})
    try:
        yield process, address
    finally:
        process.stop()


@pytest.mark.integration
def test_share_fetches_and_acknowledgements_by_type_are_counted(
    serve: tuple[ServeProcess, str], bootstrap: str
) -> None:
    sidecar, address = serve
    topic, group = f"share-metrics-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    before = scrape(address)
    consumer = ShareConsumer(
        {"bootstrap.servers": sidecar.bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    try:
        # The share-partition starts at the end (share.auto.offset.reset=latest): join, then produce.
        assert not [m for m in consumer.poll(1.5) if m.error() is None]
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(6):
            producer.produce(topic, b"v%d" % i, partition=0)
        assert producer.flush(15) == 0
        # v0, v1 rejected; v2 released once, then accepted; the rest accepted.
        types = {b"v0": AcknowledgeType.REJECT, b"v1": AcknowledgeType.REJECT}
        released: set[bytes] = set()
        done: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(done) < 6 and time.monotonic() < deadline:
            messages = [m for m in consumer.poll(0.5) if m.error() is None]
            for m in messages:
                v = value_of(m)
                kind = types.get(v, AcknowledgeType.ACCEPT)
                if v == b"v2" and v not in released:
                    kind = AcknowledgeType.RELEASE
                    released.add(v)
                else:
                    done.add(v)
                consumer.acknowledge(m, kind)
            if messages:
                consumer.commit_sync(15)
        assert len(done) == 6
    finally:
        consumer.close()

    def grown(s: Samples, name: str, by: float, **labels: str) -> bool:
        return value(s, name, **labels) - value(before, name, **labels) == by

    after = eventually(
        address,
        lambda s: grown(s, "groupcoord_share_record_acknowledgements_total", 4, ack_type="accept"),
        "4 accepted records",
    )
    assert grown(after, "groupcoord_share_record_acknowledgements_total", 2, ack_type="reject")
    assert grown(after, "groupcoord_share_record_acknowledgements_total", 1, ack_type="release")
    assert value(after, "groupcoord_share_acknowledgements_total") > value(
        before, "groupcoord_share_acknowledgements_total"
    )
    assert (
        value(after, "groupcoord_share_fetch_requests_total")
        >= value(before, "groupcoord_share_fetch_requests_total") + 2
    )


@pytest.mark.integration
def test_fetches_woken_together_read_the_cluster_once(serve: tuple[ServeProcess, str], bootstrap: str) -> None:
    """Five ShareFetches waiting for room in the in-flight window are woken at once by the
    acknowledgement that frees it, and the records they need are past the partition's last read:
    one of them reads the cluster, the others wait for that read and acquire from what it kept
    (they find the window full again), rather than reading the same records five times more."""
    sidecar, address = serve
    topic, group = f"share-reads-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)
    _set_group_config(sidecar.bootstrap, group, "share.partition.max.record.locks", "100")  # the least

    async def run() -> tuple[list[list[tuple[int, int, int]]], float]:
        holder, first = await _wire_member(sidecar.port, group, topic)
        waiters = [await _wire_member(sidecar.port, group, topic) for _ in range(5)]
        assert await _wire_fetch(holder, (group, first, topic_id), 0) == []  # the share-partition, at the end
        _produce(bootstrap, topic, 100, 1, batch_records=100)
        assert await _wire_fetch(holder, (group, first, topic_id), 1, max_records=100) == [(0, 99, 1)]
        for client, member in waiters:
            assert await _wire_fetch(client, (group, member, topic_id), 0) == []  # the window is full
        _produce(bootstrap, topic, 100, 1, batch_records=100)  # past the last read
        waiting = [
            asyncio.ensure_future(_wire_fetch(c, (group, m, topic_id), 1, max_wait_ms=3000, max_records=100))
            for c, m in waiters
        ]
        await asyncio.sleep(0.5)  # (lets them arrive and wait for room)
        before = value(scrape(address), "groupcoord_share_log_reads_total")
        acked = await _wire_fetch(holder, (group, first, topic_id), 2, acks=[(0, 99, 1)], max_records=100)
        got = [acked, *await asyncio.gather(*waiting)]
        reads = value(scrape(address), "groupcoord_share_log_reads_total") - before
        for client in [holder, *(c for c, _ in waiters)]:
            await client.close()
        return got, reads

    got, reads = asyncio.run(run())
    # One fetch got the next batch (which one is a race); none read the cluster but one.
    assert sorted(got) == [[]] * 5 + [[(100, 199, 1)]]
    assert reads == 1


@pytest.mark.integration
def test_the_next_read_begins_when_an_acquisition_takes_the_last_read_to_its_end(
    serve: tuple[ServeProcess, str], bootstrap: str
) -> None:
    """A ShareFetch that acquires the last records of the partition's kept read, while the log
    holds more, begins the next read at once: the fetch that needs those records next takes them
    from it and reads nothing itself (its acquisition no longer waits for a read of the cluster)."""
    sidecar, address = serve
    topic, group = f"share-ahead-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], float, float]:
        client, member = await _wire_member(sidecar.port, group, topic)
        request_of = (group, member, topic_id)
        assert await _wire_fetch(client, request_of, 0) == []  # the share-partition, at the end
        _produce(bootstrap, topic, 200, 1, batch_records=100)  # two batches
        before = value(scrape(address), "groupcoord_share_log_reads_total")
        # MaxBytes 1: the read returns the first batch alone (at least one batch), and this
        # fetch acquires all of it.
        first = await _wire_fetch(client, request_of, 1, max_records=100, max_bytes=1)
        # The next read is begun by that acquisition, before anyone asks for offset 100.
        eventually(address, lambda s: value(s, "groupcoord_share_log_reads_total") - before == 2, "the read ahead")
        second = await _wire_fetch(client, request_of, 2, acks=[(0, 99, 1)], max_records=100, max_bytes=1)
        reads = value(scrape(address), "groupcoord_share_log_reads_total") - before
        await client.close()
        return first, second, reads, before

    first, second, reads, _ = asyncio.run(run())
    assert first == [(0, 99, 1)]
    assert second == [(100, 199, 1)]
    assert reads == 2  # the second fetch took its records from the read begun ahead
