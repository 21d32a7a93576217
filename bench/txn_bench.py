"""Transactional offset commits (TxnOffsetCommit) through the sidecar, beside plain commits and
beside the broker's own transaction round trip, measured in the same run (issue #24).

    python bench/txn_bench.py [--transactions 200] [--commits 400] [--bootstrap HOST:PORT]

One coordinator in this process (runtime, service and ``TxnBridge`` over the cluster), one
confluent-kafka transactional producer talking to the cluster. Figures (one at a time, p50/p99):

- ``raw.transaction``: the broker's own transaction round trip: begin, produce one record, commit
  (InitProducerId once; AddPartitionsToTxn, Produce, EndTxn each time);
- ``groupcoord.txn_offset_commit``: the same transaction with a TxnOffsetCommit through the
  sidecar before the commit: the TxnOffsetCommit's latency (AddPartitionsToTxn + transactional
  Produce + the staging written and read back), the whole transaction, and commit-to-visible (the
  EndTxn's return until OffsetFetch shows the offset: the resolver's Fetch plus the outcome write);
- ``groupcoord.plain_commit``: a plain OffsetCommit;
- ``groupcoord.open_transaction`` (issue #24 item 4): acknowledged plain-commit latency on the same
  shard with and without another producer's transaction staged and left open, in alternating
  rounds so both see the same machine.

JSON to bench/results/txn.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from confluent_kafka import Producer
from runtime_bench import ROOT, cluster, percentile, write_results

from groupcoord.coordinator.group_shard import GroupCoordinatorShard
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from groupcoord.coordinator.runtime.log import LogTopicSpec, ensure_log_topic
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.coordinator.service.service import GroupCoordinatorService
from groupcoord.coordinator.txn.bridge import TxnBridge
from groupcoord.coordinator.txn.topic import transaction_topic, transaction_topic_spec
from tests.topics import ensure_topic
from tests.txn.eos import producer_identity, txn_offset_commit

COMMIT_CONTEXT = RequestContext(api_version=9)
PARTITIONS = 4


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "count": len(values)}


def groups_on_one_shard(count: int) -> list[str]:
    """Group ids that live on shard 0 (so an open transaction shares the plain commits' shard)."""
    out: list[str] = []
    i = 0
    while len(out) < count:
        i += 1
        name = f"bench-txn-{i}"
        if partition_for(name, PARTITIONS) == 0:
            out.append(name)
    return out


def make_topic(bootstrap: str, name: str) -> str:
    ensure_topic(bootstrap, name, 1)
    return name


def transactional(bootstrap: str, txn_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 0})
    producer.init_transactions(30)
    return producer


def begin_with(producer: Producer, sink: str, value: bytes) -> None:
    producer.begin_transaction()
    producer.produce(sink, value=value)


def open_transaction(producer: Producer, sink: str, value: bytes) -> None:
    """``begin_with``, flushed: the transaction is open on the broker when it returns."""
    begin_with(producer, sink, value)
    producer.flush(10)


def raw_transactions(bootstrap: str, sink: str, count: int) -> dict[str, Any]:
    producer = transactional(bootstrap, f"bench-raw-{uuid.uuid4().hex[:6]}")
    latencies = []
    for i in range(count):
        t0 = time.perf_counter()
        producer.begin_transaction()
        producer.produce(sink, value=b"%d" % i)
        producer.commit_transaction(30)
        latencies.append((time.perf_counter() - t0) * 1000)
    return {"transaction_ms": stats(latencies), "transactions_per_s": 1000 / (sum(latencies) / len(latencies))}


def plain_request(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        topics=[
            OffsetCommitRequestTopic(
                name="in", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)]
            )
        ],
    )


async def committed(service: GroupCoordinatorService, group: str) -> int:
    ask = OffsetFetchRequestGroup(group_id=group, topics=[OffsetFetchRequestTopics(name="in", partition_indexes=[0])])
    (answer,) = await service.fetch_offsets([ask], require_stable=True)
    partition = answer.topics[0].partitions[0]
    return -1 if partition.error_code else partition.committed_offset


async def txn_commits(
    bootstrap: str, bridge: TxnBridge, service: GroupCoordinatorService, sink: str, group: str, count: int
) -> dict[str, Any]:
    txn_id = f"bench-sidecar-{uuid.uuid4().hex[:6]}"
    producer = await asyncio.to_thread(transactional, bootstrap, txn_id)
    await asyncio.to_thread(open_transaction, producer, sink, b"x")
    pid, epoch = await asyncio.to_thread(producer_identity, bootstrap, sink)
    await asyncio.to_thread(producer.abort_transaction, 30)
    offset_ms, whole_ms, visible_ms = [], [], []
    for i in range(count):
        t0 = time.perf_counter()
        await asyncio.to_thread(begin_with, producer, sink, b"%d" % i)
        t1 = time.perf_counter()
        answer = await bridge.commit(txn_offset_commit(txn_id, group, pid, epoch, "in", i + 1), {"in": None})
        assert all(p.error_code == 0 for t in answer.topics for p in t.partitions), answer
        t2 = time.perf_counter()
        await asyncio.to_thread(producer.commit_transaction, 30)
        t3 = time.perf_counter()
        while await committed(service, group) != i + 1:
            await asyncio.sleep(0.001)
        t4 = time.perf_counter()
        offset_ms.append((t2 - t1) * 1000)
        whole_ms.append((t3 - t0) * 1000)
        visible_ms.append((t4 - t3) * 1000)
    return {
        "txn_offset_commit_ms": stats(offset_ms),
        "transaction_ms": stats(whole_ms),
        "transactions_per_s": 1000 / (sum(whole_ms) / len(whole_ms)),
        "commit_to_visible_ms": stats(visible_ms),
    }


async def plain_commits(service: GroupCoordinatorService, group: str, count: int, start: int = 0) -> list[float]:
    latencies = []
    for i in range(count):
        t0 = time.perf_counter()
        await service.commit_offsets(plain_request(group, start + i), COMMIT_CONTEXT)
        latencies.append((time.perf_counter() - t0) * 1000)
    return latencies


async def open_transaction_effect(
    bootstrap: str, bridge: TxnBridge, service: GroupCoordinatorService, sink: str, groups: list[str], commits: int
) -> dict[str, Any]:
    """Item 4: plain commits on shard 0 with and without another producer's transaction open there."""
    plain_group, txn_group = groups[0], groups[1]
    txn_id = f"bench-open-{uuid.uuid4().hex[:6]}"
    producer = await asyncio.to_thread(transactional, bootstrap, txn_id)
    without: list[float] = []
    with_open: list[float] = []
    rounds = 4
    for r in range(rounds):
        without += await plain_commits(service, plain_group, commits // rounds, r * commits)
        await asyncio.to_thread(open_transaction, producer, sink, b"o")
        pid, epoch = await asyncio.to_thread(producer_identity, bootstrap, sink)
        answer = await bridge.commit(txn_offset_commit(txn_id, txn_group, pid, epoch, "in", r + 1), {"in": None})
        assert all(p.error_code == 0 for t in answer.topics for p in t.partitions), answer
        # Staged and undecided: the resolver polls the transaction partition all along.
        with_open += await plain_commits(service, plain_group, commits // rounds, r * commits + commits // 2)
        await asyncio.to_thread(producer.abort_transaction, 30)
    return {
        "plain_commit_ms_without_open_transaction": stats(without),
        "plain_commit_ms_with_open_transaction": stats(with_open),
        "p50_ratio": percentile(with_open, 0.5) / percentile(without, 0.5),
        "p99_ratio": percentile(with_open, 0.99) / percentile(without, 0.99),
    }


async def ours(bootstrap: str, transactions: int, commits: int) -> dict[str, Any]:
    handlers = GroupCoordinatorShard()
    log_topic = f"bench-txn-{uuid.uuid4().hex[:8]}"
    runtime: Any = CoordinatorRuntime(
        {"bootstrap.servers": bootstrap}, LogTopicSpec(name=log_topic, partitions=PARTITIONS), handlers
    )
    await runtime.start()
    await runtime.wait_loaded(60)
    txn_topic = transaction_topic(log_topic)
    await asyncio.to_thread(
        ensure_log_topic, {"bootstrap.servers": bootstrap}, transaction_topic_spec(txn_topic, PARTITIONS, 1)
    )
    service = GroupCoordinatorService(runtime, handlers)
    host, port = bootstrap.rsplit(":", 1)
    bridge = TxnBridge(runtime, handlers, txn_topic, [(host, int(port))])
    service.txn = bridge
    bridge.start()
    sink = make_topic(bootstrap, f"bench-txn-out-{uuid.uuid4().hex[:6]}")
    groups = groups_on_one_shard(3)
    try:
        await plain_commits(service, groups[2], 50)  # warm up
        plain = await plain_commits(service, groups[2], commits, 1000)
        return {
            "plain_commit": {"commit_ms": stats(plain)},
            "txn_offset_commit": await txn_commits(bootstrap, bridge, service, sink, groups[2], transactions),
            "open_transaction": await open_transaction_effect(bootstrap, bridge, service, sink, groups, commits),
        }
    finally:
        await bridge.stop()
        await runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "txn.json"))
    args = parser.parse_args()
    with cluster(args.bootstrap) as (bootstrap, label):
        sink = make_topic(bootstrap, f"bench-raw-out-{uuid.uuid4().hex[:6]}")
        raw = {"transaction": raw_transactions(bootstrap, sink, args.transactions)}
        result = asyncio.run(ours(bootstrap, args.transactions, args.commits))
        result["ratio_transaction_to_raw_p50"] = (
            result["txn_offset_commit"]["transaction_ms"]["p50"] / raw["transaction"]["transaction_ms"]["p50"]
        )
    write_results(args.out, label, raw, result)


if __name__ == "__main__":
    main()
