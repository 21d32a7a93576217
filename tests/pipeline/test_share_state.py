"""Share groups in the pipeline's jobs (records 10-14, 62 ShareSnapshot and 63 ShareUpdate, written
by the real coordinator of ``written_log`` for a share group driven on the wire): the snapshot has
the share-partition's state as the coordinator serves it and the group as type ``share``; the audit
passes on it and names forged share records; the group's history shows its share events."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from typer.testing import CliRunner

from groupcoord.cli.main import app
from groupcoord.cli.share import ShareAdmin
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.coordinator.share.partition_types import AcknowledgeType, RecordState
from groupcoord.pipeline.jobs import audit, history, snapshot_tables
from groupcoord.records import RecordType, encode_key, encode_value
from groupcoord.records.definitions import (
    GroupConfigEntry,
    GroupConfigKey,
    GroupConfigValue,
    ShardEpochKey,
    ShardEpochValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateBatch,
    ShareTopicPartitions,
    ShareUpdateKey,
    ShareUpdateValue,
)
from tests.client_records import log_headers
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.pipeline.conftest import LOG_PARTITIONS, WrittenLog
from tests.pipeline.test_jobs import _status_log
from tests.share_data.test_share_consumer import SHARE_FETCH, SHARE_HEARTBEAT, _set_group_config, _topic_id

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

RECORDS = 10


@dataclass
class ShareRun:
    group: str
    topic: str
    member: str


@pytest.fixture(scope="module")
def share_run(written_log: WrittenLog) -> Iterator[ShareRun]:
    """A share group of one member (it stays: the session outlives the tests) on a one-partition
    topic of 10 records: it acquires all, ACCEPTs 0, 2-4 and 6-7, REJECTs 5, RELEASEs 1 (and
    acquires it again in the same fetch) and holds 8-9."""
    wl = written_log
    tag = uuid.uuid4().hex[:8]
    run = ShareRun(f"gc-pl-share-{tag}", f"gc-pl-share-data-{tag}", str(uuid.uuid4()))
    create_topic(wl.bootstrap, run.topic, 1)
    producer = Producer({"bootstrap.servers": wl.bootstrap})
    for i in range(RECORDS):
        producer.produce(run.topic, f"r{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    _set_group_config(wl.serve.bootstrap, run.group, "share.auto.offset.reset", "earliest")
    topic_id = _topic_id(wl.bootstrap, run.topic)

    async def drive() -> None:
        client = await WireClient.connect("127.0.0.1", wl.serve.port)
        joined = await client.call(
            SHARE_HEARTBEAT,
            1,
            sgh.ShareGroupHeartbeatRequest(
                group_id=run.group, member_id=run.member, member_epoch=0, subscribed_topic_names=[run.topic]
            ),
        )
        assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0

        async def fetch(epoch: int, acks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
            batches = [
                sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
                for f, la, t in acks
            ]
            request = sf.ShareFetchRequest(
                group_id=run.group,
                member_id=run.member,
                share_session_epoch=epoch,
                max_wait_ms=500,
                max_records=100,
                topics=[
                    sf.ShareFetchRequestFetchTopic(
                        topic_id=topic_id,
                        partitions=[
                            sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=batches)
                        ],
                    )
                ],
            )
            answer = await client.call(SHARE_FETCH, 1, request)
            assert isinstance(answer, sf.ShareFetchResponse) and answer.error_code == 0
            parts = [p for t in answer.responses for p in t.partitions]
            assert all(p.error_code == 0 and p.acknowledge_error_code == 0 for p in parts), parts
            return [(a.first_offset, a.last_offset, a.delivery_count) for p in parts for a in p.acquired_records]

        acquired: list[tuple[int, int, int]] = []
        epoch = 0
        while sum(last - first + 1 for first, last, _ in acquired) < RECORDS:
            acquired += await fetch(epoch, [])
            epoch += 1
            assert epoch < 20, acquired
        assert {count for _, _, count in acquired} == {1}
        acks = [
            (0, 0, int(AcknowledgeType.ACCEPT)),
            (1, 1, int(AcknowledgeType.RELEASE)),
            (2, 4, int(AcknowledgeType.ACCEPT)),
            (5, 5, int(AcknowledgeType.REJECT)),
            (6, 7, int(AcknowledgeType.ACCEPT)),
        ]
        assert await fetch(epoch, acks) == [(1, 1, 2)]
        await client.close()  # the member stays in the group; its records stay locked

    asyncio.run(drive())
    yield run


def _rows(df: DataFrame, group: str) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.where(df.group_id == group).collect()]


def test_snapshot_audit_and_history_of_a_share_group(
    spark: SparkSession, written_log: WrittenLog, share_run: ShareRun
) -> None:
    """One read of the log for the three jobs, only the share group's log partition (Spark's part is
    the slow one)."""
    wl = written_log
    shard = partition_for(share_run.group, LOG_PARTITIONS)
    status_log = _status_log(spark, wl).where(f"partition = {shard}").persist()
    tables = snapshot_tables(spark, status_log, {})
    (state,) = _rows(tables["share_partitions"], share_run.group)
    # Offset 0 accepted (done), so the start offset moved to 1; 1 is acquired again (written as
    # available with its delivery count), 5 rejected (archived), 8-9 acquired once.
    assert (state["topic"], state["partition"], state["start_offset"], state["end_offset"], state["state_epoch"]) == (
        share_run.topic,
        0,
        1,
        RECORDS,
        0,
    )
    assert state["initialized"]  # record 15 of the group lists it
    assert [(r["first_offset"], r["last_offset"], r["state"], r["delivery_count"]) for r in state["in_flight"]] == [
        (1, 1, "available", 2),
        (2, 4, "acknowledged", 1),
        (5, 5, "archived", 1),
        (6, 7, "acknowledged", 1),
        (8, 9, "available", 1),
    ]
    # The coordinator serves the same start offset (DescribeShareGroupOffsets).
    described = ShareAdmin(wl.sidecar, None, 15).offsets([share_run.group])[share_run.group]
    assert not isinstance(described, str)
    assert [(t.topic_name, p.partition_index, p.start_offset) for t in described.topics for p in t.partitions] == [
        (share_run.topic, 0, 1)
    ]
    (group,) = _rows(tables["groups"], share_run.group)
    assert (group["type"], group["state"], group["members"], group["group_epoch"] > 0) == ("share", "Stable", 1, True)
    (member,) = _rows(tables["members"], share_run.group)
    assert (member["member_id"], member["type"], member["subscribed_topic_names"]) == (
        share_run.member,
        "share",
        [share_run.topic],
    )
    assert member["member_epoch"] == group["group_epoch"]
    (assigned,) = _rows(tables["current_assignments"], share_run.group)
    assert (assigned["member_id"], assigned["partition"], assigned["pending_revocation"]) == (
        share_run.member,
        0,
        False,
    )
    assert [(r["member_id"], r["partition"]) for r in _rows(tables["target_assignments"], share_run.group)] == [
        (share_run.member, 0)
    ]

    _audit_passes_and_history_lists_it(status_log, share_run)


def _audit_passes_and_history_lists_it(status_log: DataFrame, share_run: ShareRun) -> None:
    assert [v for v in audit(status_log).collect() if v.group_id == share_run.group] == []
    events, _ = history(status_log, share_run.group)
    kinds = [e["event"] for e in events]
    (joined,) = [e for e in events if e["event"] == "member-joined"]
    assert joined["member"] == share_run.member and joined["detail"].startswith("share member")
    (initialized,) = [e for e in events if e["event"] == "share-initialized"]
    assert initialized["detail"] == f"{share_run.topic}-0: starts at offset 0 (state epoch 0)"
    (archived,) = [e for e in events if e["event"] == "share-archived"]
    assert archived["detail"] == f"{share_run.topic}-0: 5 (delivery count 1)"
    assert kinds.index("share-initialized") < kinds.index("share-archived")


def _forged_log(written_log: WrittenLog) -> tuple[str, dict[str, int]]:
    """A log topic of hand-written share records, each breaking one rule; the offset of each."""
    topic = f"gc-pl-share-forged-{uuid.uuid4().hex[:8]}"
    create_topic(written_log.bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": written_log.bootstrap, "enable.idempotence": True})
    offsets: dict[str, int] = {}
    group, data = "forged", "t"
    av, ack, arch = int(RecordState.AVAILABLE), int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)

    def write(name: str, t: RecordType, key: object, value: object) -> None:
        def delivered(err: object, msg: object) -> None:
            assert err is None
            offsets[name] = msg.offset()  # type: ignore[attr-defined]

        producer.produce(
            topic,
            key=encode_key(t, key),
            value=encode_value(t, value),
            headers=log_headers(1, 0, 1),
            partition=0,
            on_delivery=delivered,
        )
        producer.flush(15)

    write("epoch", RecordType.SHARD_EPOCH, ShardEpochKey(1), ShardEpochValue(1, "forger", 0))
    snap = ShareSnapshotKey(group, data, 0)
    # Fine: start 10, 10-11 acknowledged, 12 available after 2 deliveries.
    write(
        "ok",
        RecordType.SHARE_SNAPSHOT,
        snap,
        ShareSnapshotValue(0, 3, 10, [ShareStateBatch(10, 11, ack, 1), ShareStateBatch(12, 12, av, 2)]),
    )
    write(
        "over-limit",
        RecordType.SHARE_UPDATE,
        ShareUpdateKey(group, data, 0, 0),
        ShareUpdateValue(0, 10, [ShareStateBatch(12, 12, av, 7), ShareStateBatch(13, 13, arch, 9)]),
    )
    # Over Kafka's default limit (5), within the sidecar's (6) that the audit is given below.
    write(
        "six",
        RecordType.SHARE_UPDATE,
        ShareUpdateKey(group, data, 0, 1),
        ShareUpdateValue(0, 10, [ShareStateBatch(14, 14, av, 6)]),
    )
    # Another group whose own share.delivery.count.limit (8) allows the same count.
    lenient = "lenient"
    write(
        "config",
        RecordType.GROUP_CONFIG,
        GroupConfigKey(lenient),
        GroupConfigValue([GroupConfigEntry("share.delivery.count.limit", "8")]),
    )
    write("lenient", RecordType.SHARE_SNAPSHOT, ShareSnapshotKey(lenient, data, 0), ShareSnapshotValue(0, 0, 12, []))
    write(
        "within-its-limit",
        RecordType.SHARE_UPDATE,
        ShareUpdateKey(lenient, data, 0, 0),
        ShareUpdateValue(0, 12, [ShareStateBatch(12, 12, av, 7)]),
    )
    write(
        "lenient-listed",
        RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
        ShareGroupStatePartitionMetadataKey(lenient),
        ShareGroupStatePartitionMetadataValue(initialized_topics=[ShareTopicPartitions(None, data, [0])]),
    )
    write(
        "backwards",
        RecordType.SHARE_UPDATE,
        ShareUpdateKey(group, data, 0, 2),
        ShareUpdateValue(0, 8, []),
    )
    write(
        "overlap",
        RecordType.SHARE_SNAPSHOT,
        snap,
        ShareSnapshotValue(1, 3, 10, [ShareStateBatch(10, 14, ack, 1), ShareStateBatch(14, 15, av, 1)]),
    )
    write(
        "below-start",
        RecordType.SHARE_SNAPSHOT,
        snap,
        ShareSnapshotValue(2, 2, 20, [ShareStateBatch(19, 21, av, 1)]),
    )
    # A share-partition with state that record 15 does not list.
    write("unlisted", RecordType.SHARE_SNAPSHOT, ShareSnapshotKey(group, "u", 0), ShareSnapshotValue(0, 0, 0, []))
    # Record 15 lists t-0 (which has state) and t-1 (which has none).
    write(
        "listed",
        RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
        ShareGroupStatePartitionMetadataKey(group),
        ShareGroupStatePartitionMetadataValue(initialized_topics=[ShareTopicPartitions(None, data, [0, 1])]),
    )
    return topic, offsets


def test_audit_names_forged_share_records(spark: SparkSession, written_log: WrittenLog) -> None:
    topic, at = _forged_log(written_log)
    # The sidecar's group.share.delivery.count.limit is 6 here: 7 deliveries are over it in
    # "forged", within "lenient"'s own share.delivery.count.limit (8); 6 are fine.
    args = ["pipeline", "audit", "-b", written_log.bootstrap, "--topic", topic, "--share-delivery-count-limit", "6"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 1, result.output
    found = {(v["check"], v["offset"]) for v in json.loads(result.stdout)["items"]}
    assert found == {
        ("share-delivery-count-over-limit", at["over-limit"]),
        ("share-start-backwards", at["backwards"]),
        ("share-ranges-overlap", at["overlap"]),
        ("share-range-below-start", at["below-start"]),
        ("share-state-epoch-backwards", at["below-start"]),
        ("share-initialized-without-state", at["listed"]),
        ("share-state-not-initialized", at["unlisted"]),
    }
