"""TxnOffsetCommit's refusals through a real ``groupcoord serve``, with real producer ids: a zombie
producer (fenced by a second one with the same transactional.id), an unknown transactional id, an
unknown topic; a refused request stages nothing. OffsetFetch shows the last committed value while
offsets are staged, and require_stable answers UNSTABLE_OFFSET_COMMIT until the marker."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.broker_connection import BrokerConnection
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from groupcoord.coordinator.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import producer_identity, transactional_producer, txn_offset_commit

pytestmark = pytest.mark.integration


async def _call(address: str, body: TxnOffsetCommitRequest | OffsetFetchRequest, version: int) -> object:
    host, port = address.rsplit(":", 1)
    conn = await BrokerConnection.open((host, int(port)), None, 10)
    try:
        response = TxnOffsetCommitResponse if isinstance(body, TxnOffsetCommitRequest) else OffsetFetchResponse
        return await conn.call(body, response, version, 20)
    finally:
        conn.close()


def txn_commit(
    sidecar: str, txn_id: str, group: str, pid: int, epoch: int, topic: str, offset: int, version: int = 3
) -> list[int]:
    request = txn_offset_commit(txn_id, group, pid, epoch, topic, offset)
    answer = asyncio.run(_call(sidecar, request, version))
    assert isinstance(answer, TxnOffsetCommitResponse)
    return [p.error_code for t in answer.topics for p in t.partitions]


def fetch(sidecar: str, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=require_stable,
    )
    answer = asyncio.run(_call(sidecar, request, 7))
    assert isinstance(answer, OffsetFetchResponse)
    partition = answer.topics[0].partitions[0]
    return partition.committed_offset, partition.error_code


def test_refusals_stage_nothing_and_staged_offsets_stay_unstable_until_decided(
    bootstrap: str, sidecar: ServeProcess, unique_name: str
) -> None:
    source, sink, group, txn_id = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-g", f"{unique_name}-tx"
    ensure_topic(bootstrap, source, 1)
    ensure_topic(bootstrap, sink, 1)
    zombie = transactional_producer(sidecar.bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(sink, value=b"z")
    assert zombie.flush(10) == 0
    old_pid, old_epoch = producer_identity(bootstrap, sink)

    # A second producer with the same transactional.id fences the first (and aborts its transaction).
    current = transactional_producer(sidecar.bootstrap, txn_id)
    assert txn_commit(sidecar.bootstrap, txn_id, group, old_pid, old_epoch, source, 5) == [
        ErrorCode.INVALID_PRODUCER_EPOCH
    ]
    assert txn_commit(sidecar.bootstrap, f"{txn_id}-unknown", group, old_pid, old_epoch, source, 5) == [
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    ]
    assert txn_commit(sidecar.bootstrap, txn_id, group, old_pid, old_epoch, f"{unique_name}-nope", 5) == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ]
    # Nothing was staged by any of them: the group is stable and has no offset.
    assert fetch(sidecar.bootstrap, group, source, require_stable=True) == (-1, ErrorCode.NONE)

    # The current producer's transaction stages offset 7.
    current.begin_transaction()
    current.produce(sink, value=b"c")
    assert current.flush(10) == 0
    pid, epoch = producer_identity(bootstrap, sink)
    assert (pid, epoch) == (old_pid, old_epoch + 1)
    assert txn_commit(sidecar.bootstrap, txn_id, group, pid, epoch, source, 7) == [ErrorCode.NONE]
    assert fetch(sidecar.bootstrap, group, source, require_stable=False) == (-1, ErrorCode.NONE)
    assert fetch(sidecar.bootstrap, group, source, require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    # `log dump` shows the staged offsets as such.
    rows = dump_group(bootstrap, sidecar, group)
    staged = [r for r in rows if r["type"] == "PENDING_TXN_OFFSETS"]
    assert [(r["key"]["producer_id"], [o["offset"] for o in r["value"]["offsets"]]) for r in staged] == [(pid, [7])]
    # The zombie's epoch is now refused by the shard itself, before the cluster is asked.
    assert txn_commit(sidecar.bootstrap, txn_id, group, pid, old_epoch, source, 9) == [ErrorCode.INVALID_PRODUCER_EPOCH]

    current.commit_transaction(30)
    deadline = time.monotonic() + 20
    while fetch(sidecar.bootstrap, group, source, require_stable=True) != (7, ErrorCode.NONE):
        assert time.monotonic() < deadline, "the commit marker was not applied"
        time.sleep(0.1)
    # The outcome: an OffsetCommit carrying the producer id, and the staged record tombstoned.
    rows = dump_group(bootstrap, sidecar, group)
    assert [r["value"]["producer_id"] for r in rows if r["type"] == "OFFSET_COMMIT"] == [pid]
    assert [r["value"] for r in rows if r["type"] == "PENDING_TXN_OFFSETS"] == [staged[0]["value"], None]

    # `groups describe` marks a committed offset with a transaction staged over it.
    current.begin_transaction()
    current.produce(sink, value=b"d")
    assert current.flush(10) == 0
    assert txn_commit(sidecar.bootstrap, txn_id, group, pid, epoch, source, 9) == [ErrorCode.NONE]
    assert describe_offsets(sidecar, group) == [(source, 0, 7, True)]
    current.abort_transaction(30)
    deadline = time.monotonic() + 20
    while describe_offsets(sidecar, group) != [(source, 0, 7, False)]:
        assert time.monotonic() < deadline, "the abort marker was not applied"
        time.sleep(0.1)


def describe_offsets(sidecar: ServeProcess, group: str) -> list[tuple[str, int, int, bool]]:
    argv = [sys.executable, "-m", "groupcoord.cli.main", "groups", "describe", group, "-b", sidecar.bootstrap]
    described = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=60)
    assert described.returncode == 0, described.stderr
    rows = json.loads(described.stdout)["items"]
    return [(r["topic"], r["partition"], r["current_offset"], r["pending_transaction"]) for r in rows]


def dump_group(bootstrap: str, sidecar: ServeProcess, group: str) -> list[dict[str, Any]]:
    log_topic = sidecar.args[sidecar.args.index("--log-topic") + 1]
    argv = [
        sys.executable,
        "-m",
        "groupcoord.cli.main",
        "log",
        "dump",
        "--group",
        group,
        "-b",
        bootstrap,
        "--topic",
        log_topic,
    ]
    dumped = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=60)
    assert dumped.returncode == 0, dumped.stderr
    items: list[dict[str, Any]] = json.loads(dumped.stdout)["items"]
    return items
