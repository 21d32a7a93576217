"""The log topic deleted on the cluster while serve commits (an operator probe, Tansu): serve
creates it again, and lives through what follows without a traceback or a flood of log lines.

Before, the idempotent producer failed fatally (_GAPLESS_GUARANTEE), raised on the writer's
thread, which died with a raw traceback; every append was then refused (_FATAL) and the shards
reloaded ~50 times a second (40k log lines in 2 minutes) until serve was restarted.

Commits acknowledged again are not asserted: on Tansu (memory store) they are not, whatever serve
does. Tansu keeps a deleted topic's record batches (.../partitions/N/records/<offset>.batch) and the
re-created topic's offsets start at 0 again, so an append at an offset an old batch holds fails
(ObjectStore AlreadyExists, answered as an unknown broker error, fatal to an idempotent producer),
and the batch objects of the failed appends keep colliding with later offsets (seen: AlreadyExists
at offsets 0, 1, 2, 4, 6, ... 19 of a partition whose old log ended at 6). A new producer per failure
changes nothing there; a Kafka broker removes the batches with the topic."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.local_broker import free_port
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration


def test_serve_lives_through_its_log_topic_deleted_while_committing(
    bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    data = f"{unique_name}-data"
    admin.create_topics([NewTopic(data, 1, 1)])[data].result(10)
    stderr = tmp_path / "serve.log"
    serve = ServeProcess(bootstrap, free_port(), unique_name, partitions=2, log=stderr).start()
    acknowledged: list[float] = []  # when each commit was acknowledged (monotonic)
    stop = threading.Event()
    go = threading.Event()  # set: commit continuously (until then, a few commits only)

    def committing() -> None:
        consumer = Consumer(
            {"bootstrap.servers": serve.bootstrap, "group.id": f"{unique_name}-g", "enable.auto.commit": False}
        )
        try:
            offset = 0
            while not stop.is_set():
                if len(acknowledged) >= 5 and not go.is_set():
                    go.wait(0.05)
                    continue
                offset += 1
                try:
                    consumer.commit(offsets=[TopicPartition(data, 0, offset)], asynchronous=False)
                    acknowledged.append(time.monotonic())
                except KafkaException:
                    time.sleep(0.05)
        finally:
            consumer.close()

    worker = threading.Thread(target=committing, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while len(acknowledged) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(acknowledged) >= 5
        # Appends then fail on Tansu (see above), each fatal to the producer that made it.
        admin.delete_topics([unique_name])[unique_name].result(10)
        go.set()
        # Re-created by serve's cluster watch; serve goes on (no restart), backing off its reloads.
        time.sleep(20)
        assert serve.proc is not None and serve.proc.poll() is None
    finally:
        stop.set()
        worker.join(15)
        serve.stop()
    log = stderr.read_text()
    assert "Traceback" not in log  # the writer's thread died with one
    assert "was created again" in log
    # Reloads back off and repeat quietly: a few dozen lines in 20 s, not 50 a second per shard.
    assert log.count("reloading from the log") < 100, "reloads without backoff"
