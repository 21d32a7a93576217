"""Transactional offsets in the pipeline's jobs (records 60 PendingTxnOffsets and 61 TxnProducer,
written by the real coordinator of ``written_log`` for real transactions): the snapshot lists what
is staged and not decided, with its producer; the audit finds nothing wrong with them; a group's
history shows each transactional commit staged, then committed or aborted by its marker."""

from __future__ import annotations

import time

import pytest
from pyspark.sql import SparkSession

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.pipeline.jobs import audit, history, snapshot_tables
from tests.pipeline.conftest import WrittenLog
from tests.pipeline.test_jobs import _status_log
from tests.topics import ensure_topic
from tests.txn.eos import producer_identity, transactional_producer
from tests.txn.test_txn_validation import fetch, txn_commit

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _await(sidecar: str, group: str, topic: str, expected: tuple[int, int]) -> None:
    deadline = time.monotonic() + 20
    while fetch(sidecar, group, topic, require_stable=True) != expected:
        assert time.monotonic() < deadline, f"{group} never reached {expected}"
        time.sleep(0.1)


def test_staged_committed_and_aborted_transactional_offsets(
    spark: SparkSession, written_log: WrittenLog, unique_name: str
) -> None:
    wl = written_log
    source, sink, txn_id = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-tx"
    committed, aborted, pending = (f"{unique_name}-{kind}" for kind in ("committed", "aborted", "pending"))
    ensure_topic(wl.bootstrap, source, 1)
    ensure_topic(wl.bootstrap, sink, 1)
    producer = transactional_producer(wl.sidecar, txn_id)

    def stage(group: str, offset: int) -> tuple[int, int]:
        producer.begin_transaction()
        producer.produce(sink, value=group.encode())
        assert producer.flush(10) == 0
        pid, epoch = producer_identity(wl.bootstrap, sink)
        assert txn_commit(wl.sidecar, txn_id, group, pid, epoch, source, offset) == [ErrorCode.NONE]
        return pid, epoch

    pid, epoch = stage(committed, 7)
    producer.commit_transaction(30)
    _await(wl.sidecar, committed, source, (7, ErrorCode.NONE))
    stage(aborted, 5)
    producer.abort_transaction(30)
    _await(wl.sidecar, aborted, source, (-1, ErrorCode.NONE))
    stage(pending, 9)
    try:
        status_log = _status_log(spark, wl).persist()
        tables = snapshot_tables(spark, status_log, {})
        mine = {committed, aborted, pending}
        staged = [
            (r.group_id, r.topic, r.partition, r.pending_offset, r.producer_id, r.producer_epoch, r.transactional_id)
            for r in tables["pending_offsets"].collect()
            if r.group_id in mine
        ]
        assert staged == [(pending, source, 0, 9, pid, epoch, txn_id)]
        offsets = {(r.group_id, r.committed_offset) for r in tables["offsets"].collect() if r.group_id in mine}
        assert offsets == {(committed, 7)}

        assert [v for v in audit(status_log).collect() if v.group_id in mine] == []

        def kinds(group: str) -> list[str]:
            return [e["event"] for e in history(status_log, group)[0] if e["event"].startswith("txn-")]

        assert kinds(committed) == ["txn-staged", "txn-committed"]
        assert kinds(aborted) == ["txn-staged", "txn-aborted"]
        assert kinds(pending) == ["txn-staged"]
        (event,) = [e for e in history(status_log, pending)[0] if e["event"] == "txn-staged"]
        assert f"producer {pid}" in event["detail"] and f"{source}-0=9" in event["detail"]
    finally:
        producer.abort_transaction(30)
