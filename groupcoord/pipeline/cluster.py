"""Kafka client helpers shared by the data source and the jobs (no Spark here).

Every client is built through :func:`kafka_client_config`, so librdkafka's own lines go through the
``librdkafka`` logger (JSON and rate-limited where logging is configured, dropped where it is not),
never raw to stderr, on the driver and in Spark's workers alike.

End offsets come from the high watermark a *fetch* returns, not from ListOffsets: some
Kafka-compatible brokers (the local Tansu broker among them) answer ListOffsets "latest" wrongly.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from groupcoord.coordinator import logs
from groupcoord.properties import PropertiesError, parse_properties

DEFAULT_LOG_TOPIC = "__group_coordinator_log"


class ClusterError(RuntimeError):
    """The cluster could not be read (unreachable, unknown topic, timed out): one readable line."""


def read_properties(path: str | Path) -> dict[str, str]:
    """librdkafka settings from a properties file, read as the CLI reads ``--command-config``."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ClusterError(f"cannot read client properties {path}: {exc.strerror}") from None
    try:
        return parse_properties(text)
    except PropertiesError as exc:
        raise ClusterError(f"{path}:{exc}") from None


def client_config(bootstrap: str, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap}
    config.update(extra or {})
    return config


def kafka_client_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` as a client is built from it: librdkafka's log through the logger (the config
    itself stays plain strings, as Spark passes it to the workers as options)."""
    return logs.client_config(dict(config))


# librdkafka's consume() returns only once it has the number of messages asked for or its timeout
# has run out, the end-of-partition event included: a long timeout made every read of a short
# partition cost that timeout in full (a second per partition per scan). A short one, looped,
# returns at the end at once and idles cheaply.
_POLL_S = 0.05


def _consumer(config: Mapping[str, Any]) -> Consumer:
    return Consumer(
        {
            **kafka_client_config(config),
            "group.id": f"groupcoord-pipeline-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
            # librdkafka's default (1 s) idles a reader that falls behind its queue (runtime/log.py).
            "fetch.queue.backoff.ms": 10,
        }
    )


def topic_partitions(config: Mapping[str, Any], topic: str, timeout: float = 30.0) -> list[int]:
    """Partition ids of ``topic``; ClusterError if it does not exist or the cluster is unreachable."""
    consumer = _consumer(config)
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            raise ClusterError(f"cannot read metadata of {topic!r}: {exc.args[0]}") from None
        described = metadata.topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            reason = described.error if described is not None and described.error is not None else "no such topic"
            raise ClusterError(f"topic {topic!r}: {reason}")
        return sorted(described.partitions)
    finally:
        consumer.close()


def watermarks(
    config: Mapping[str, Any], topic_parts: Iterable[tuple[str, int]], timeout: float = 60.0
) -> dict[tuple[str, int], tuple[int, int]]:
    """(low, high) watermarks per (topic, partition), as the fetch responses report them.

    Each partition is fetched from its beginning until the first answer (a message or the
    end-of-partition event); the consumer then holds the watermarks of that fetch response.
    """
    wanted = sorted(set(topic_parts))
    if not wanted:
        return {}
    consumer = _consumer(config)
    try:
        consumer.assign([TopicPartition(t, p, -2) for t, p in wanted])  # -2: OFFSET_BEGINNING
        pending = set(wanted)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out reading end offsets of {sorted(pending)[:5]}")
            for msg in consumer.consume(500, _POLL_S):
                tp = (msg.topic(), msg.partition())
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    if err.fatal() or err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                        raise ClusterError(f"cannot read {tp[0]}[{tp[1]}]: {err.str()}")
                    continue
                if tp in pending:
                    pending.discard(tp)
                    consumer.pause([TopicPartition(*tp)])
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for t, p in wanted:
            low, high = consumer.get_watermark_offsets(TopicPartition(t, p), cached=True)
            out[(t, p)] = (max(low, 0), max(high, 0))
        return out
    finally:
        consumer.close()


def read_range(config: Mapping[str, Any], topic: str, partition: int, start: int, end: int) -> Iterable[Any]:
    """Every message of ``topic[partition]`` with ``start <= offset < end`` (offsets may be sparse)."""
    if start >= end:
        return
    consumer = _consumer(config)
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        idle_since = time.monotonic()
        while True:
            batch = consumer.consume(1000, _POLL_S)
            if not batch:
                if time.monotonic() - idle_since > 60:
                    raise ClusterError(f"no data from {topic}[{partition}] for 60 s before offset {end}")
                continue
            idle_since = time.monotonic()
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # The end of the log: nothing at or past ``end`` is there yet.
                        return
                    if err.fatal() or err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                        raise ClusterError(f"cannot read {topic}[{partition}]: {err.str()}")
                    continue
                if (msg.offset() or 0) >= end:
                    return
                yield msg
    finally:
        consumer.close()


def topic_names(config: Mapping[str, Any], timeout: float = 30.0) -> dict[str, str]:
    """Topic id (the log's string form, url-safe base64) -> topic name, for every topic of the cluster."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    from groupcoord.coordinator.service.metadata_cache import _uuid_from_client, topic_id_string

    admin = AdminClient(kafka_client_config(config))
    try:
        names = [n for n, t in admin.list_topics(timeout=timeout).topics.items() if t.error is None]
    except KafkaException as exc:
        raise ClusterError(f"cannot list topics: {exc.args[0]}") from None
    out: dict[str, str] = {}
    if not names:
        return out
    for name, future in admin.describe_topics(TopicCollection(names)).items():
        try:
            described = future.result(timeout=timeout)
        except KafkaException:
            continue  # deleted meanwhile: its id stays unnamed
        out[topic_id_string(_uuid_from_client(described.topic_id))] = name
    return out
