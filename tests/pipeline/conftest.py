"""One Spark session and one coordinator-written log for every pipeline test.

``written_log`` runs a real ``groupcoord serve`` on the session broker and drives real librdkafka
clients through it: a KIP-848 group of two members that stays alive (so the snapshot has members
and assignments to compare), a KIP-848 group whose only member consumed, committed and left, and a
classic group that did the same. The coordinator keeps serving for the whole session, so tests can
compare what Spark computes from its log with what it answers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

pyspark = pytest.importorskip("pyspark", reason="the pipeline tests need the spark extra: pip install -e '.[spark]'")

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from groupcoord.local_broker import free_port  # noqa: E402
from groupcoord.pipeline.source import session  # noqa: E402
from tests.clients.conftest import GROUP_SETTINGS  # noqa: E402
from tests.clients.support import Member, Ownership, create_topic, drive, produce, settled  # noqa: E402
from tests.integration.serve_process import ServeProcess  # noqa: E402

LOG_PARTITIONS = 4
DATA_PARTITIONS = 4
PER_PARTITION = 25


@dataclass
class WrittenLog:
    bootstrap: str  # the backing cluster
    serve: ServeProcess
    log_topic: str
    data_topic: str
    live_group: str  # KIP-848, two members still in it
    gone_group: str  # KIP-848, member left after committing
    classic_group: str  # classic, member left after committing
    simple_group: str = ""  # offsets committed by an assign()-ed consumer only: no metadata record
    members: list[Member] = field(default_factory=list)
    committed: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def sidecar(self) -> str:
        return self.serve.bootstrap


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    s = session("local[2]", app="groupcoord-pipeline-tests", shuffle_partitions=2)
    try:
        yield s
    finally:
        s.stop()


def _run_group(
    bootstrap: str, group: str, topic: str, conf: dict[str, object], names: list[str], close: bool
) -> tuple[list[Member], Ownership]:
    ownership = Ownership()
    members = [Member(n, bootstrap, group, topic, ownership, dict(conf)) for n in names]
    drive(
        members,
        lambda: (
            settled(members, ownership, DATA_PARTITIONS, 2.0)
            and sum(len(m.records) for m in members) == DATA_PARTITIONS * PER_PARTITION
        ),
        60,
        f"{group} to consume everything and settle",
        ownership,
    )
    assert ownership.violations == []
    if close:
        for m in members:
            m.close()
    return members, ownership


@pytest.fixture(scope="session")
def written_log(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WrittenLog]:
    tag = uuid.uuid4().hex[:8]
    log = tmp_path_factory.mktemp("pipeline-sidecar") / "serve.log"
    serve = ServeProcess(bootstrap, free_port(), f"gc-pl-log-{tag}", partitions=LOG_PARTITIONS, log=log)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GROUPCOORD_GROUP", json.dumps(GROUP_SETTINGS))
        env.setenv("GROUPCOORD_METADATA_REFRESH_INTERVAL_MS", "1000")
        # For the share-group tests (test_share_state.py), which write their own share group.
        env.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
        serve.start()
    wl = WrittenLog(
        bootstrap,
        serve,
        f"gc-pl-log-{tag}",
        f"gc-pl-data-{tag}",
        f"gc-pl-live-{tag}",
        f"gc-pl-gone-{tag}",
        f"gc-pl-classic-{tag}",
    )
    try:
        create_topic(bootstrap, wl.data_topic, DATA_PARTITIONS)
        produce(bootstrap, wl.data_topic, PER_PARTITION, DATA_PARTITIONS)
        classic = {"group.protocol": "classic", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        consumer: dict[str, object] = {"group.protocol": "consumer"}
        _, own = _run_group(serve.bootstrap, wl.gone_group, wl.data_topic, consumer, ["gone-a"], close=True)
        wl.committed[wl.gone_group] = dict(own.committed)
        _, own = _run_group(serve.bootstrap, wl.classic_group, wl.data_topic, classic, ["classic-a"], close=True)
        wl.committed[wl.classic_group] = dict(own.committed)
        wl.simple_group = f"gc-pl-simple-{tag}"
        committer = Consumer({"bootstrap.servers": serve.bootstrap, "group.id": wl.simple_group})
        committer.commit(offsets=[TopicPartition(wl.data_topic, 0, 7)], asynchronous=False)
        committer.close()
        wl.committed[wl.simple_group] = {0: 7}
        # Nothing polls the live members after this: librdkafka makes a member that has not polled
        # for max.poll.interval.ms (5 min by default) leave: a run of the pipeline tests slower than
        # that (a loaded machine) would find the live group Empty, not Stable with two members.
        live = {**consumer, "max.poll.interval.ms": 3_600_000}
        wl.members, own = _run_group(
            serve.bootstrap, wl.live_group, wl.data_topic, live, ["live-a", "live-b"], close=False
        )
        wl.committed[wl.live_group] = own.committed
        yield wl
    finally:
        for m in wl.members:
            m.close()
        try:
            serve.stop()
        finally:
            if serve.proc is not None and serve.proc.poll() is None:
                serve.kill9()
