"""``spark.read.format("groupcoord")``: the coordinator log as a Spark DataFrame.

A Python Data Source (Spark 4): the driver plans one input partition per log partition, split
into offset ranges of at most ``maxRecordsPerSplit`` offsets; each task reads its range straight
from the cluster with confluent-kafka and decodes it with the project's ``records`` codec.

Options (all strings, as Spark passes them):
- ``bootstrap.servers`` (required), ``topic`` (default ``__group_coordinator_log``);
- any ``kafka.``-prefixed option is handed to librdkafka without the prefix
  (``kafka.security.protocol=SASL_SSL``), and ``kafka.properties.file`` names a properties file
  of librdkafka settings (TLS/SASL), read on the driver;
- ``startingOffsets``: ``earliest`` (default), ``latest`` or JSON ``{"0": 42, "3": 7}``;
- ``endingOffsets``: ``latest`` (default: the high watermark when the query is planned) or JSON;
- ``maxRecordsPerSplit`` (default 250000).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from groupcoord.pipeline.cluster import (
    DEFAULT_LOG_TOPIC,
    ClusterError,
    read_properties,
    read_range,
    topic_partitions,
    watermarks,
)
from groupcoord.pipeline.rows import SCHEMA, to_row

FORMAT = "groupcoord"
DEFAULT_SPLIT = 250_000


@dataclass(frozen=True)
class OffsetRange(InputPartition):  # type: ignore[misc]
    partition: int
    start: int
    end: int  # exclusive


def _offsets_option(raw: str | None, name: str, default: str) -> str | dict[int, int]:
    text = (raw or default).strip()
    if text in ("earliest", "latest"):
        return text
    try:
        parsed = json.loads(text)
        return {int(k): int(v) for k, v in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise ClusterError(
            f"option {name}: expected earliest, latest or JSON {{partition: offset}}, got {text!r}"
        ) from None


def client_settings(options: Any) -> dict[str, str]:
    """librdkafka settings from data source options: ``bootstrap.servers``, ``kafka.*``, a properties file."""
    settings: dict[str, str] = {}
    file = options.get("kafka.properties.file")
    if file:
        settings.update(read_properties(file))
    for key, value in options.items():
        if key.lower().startswith("kafka.") and key.lower() != "kafka.properties.file":
            settings[key[len("kafka.") :]] = value
    bootstrap = options.get("bootstrap.servers") or settings.get("bootstrap.servers")
    if not bootstrap:
        raise ClusterError('the groupcoord data source needs option("bootstrap.servers", ...)')
    settings["bootstrap.servers"] = bootstrap
    return settings


def plan(
    config: dict[str, str], topic: str, starting: str | dict[int, int], ending: str | dict[int, int], split: int
) -> list[OffsetRange]:
    """Offset ranges to read: one per log partition, cut every ``split`` offsets."""
    parts = topic_partitions(config, topic)
    marks = watermarks(config, [(topic, p) for p in parts])
    ranges: list[OffsetRange] = []
    for p in parts:
        low, high = marks[(topic, p)]
        start = low
        if isinstance(starting, dict):
            start = max(starting.get(p, low), low)
        elif starting == "latest":
            start = high
        end = min(ending.get(p, high), high) if isinstance(ending, dict) else high
        at = start
        while at < end:
            ranges.append(OffsetRange(p, at, min(at + split, end)))
            at += split
    return ranges


class GroupcoordReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, options: Any) -> None:
        self.config = client_settings(options)
        self.topic = options.get("topic") or DEFAULT_LOG_TOPIC
        self.starting = _offsets_option(options.get("startingOffsets"), "startingOffsets", "earliest")
        self.ending = _offsets_option(options.get("endingOffsets"), "endingOffsets", "latest")
        self.split = int(options.get("maxRecordsPerSplit") or DEFAULT_SPLIT)
        if self.split < 1:
            raise ClusterError("option maxRecordsPerSplit must be at least 1")

    def partitions(self) -> Sequence[InputPartition]:
        ranges = plan(self.config, self.topic, self.starting, self.ending, self.split)
        # Spark needs at least one partition; an empty range reads nothing.
        return ranges or [OffsetRange(0, 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, OffsetRange)
        for msg in read_range(self.config, self.topic, partition.partition, partition.start, partition.end):
            _, ts = msg.timestamp()
            yield to_row(partition.partition, msg.offset(), ts, msg.key(), msg.value(), msg.headers())


class GroupcoordDataSource(DataSource):  # type: ignore[misc]
    """The coordinator log, one typed row per record (see ``groupcoord.pipeline.rows`` for the schema)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return GroupcoordReader(self.options)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(GroupcoordDataSource)


def local_shuffle_partitions(master: str | None) -> int | None:
    """Shuffle partitions for an embedded (``local[N]``) session: two per core.

    Spark's default of 200 is sized for clusters; on one machine each of the snapshot's shuffles
    then runs 200 tiny tasks, each with Python worker overhead (20k records: 48 s at 200, 5 s at 4).
    Under spark-submit or a cluster master the operator's setting is left alone.
    """
    if master is None or not master.startswith("local"):
        return None
    threads = master[len("local") :].strip("[]").split(",")[0]  # local, local[N], local[*], local[N,F]
    cores = (os.cpu_count() or 1) if threads == "*" else (int(threads) if threads.isdigit() else 1)
    return max(2, 2 * cores)


def session(
    master: str | None = "local[*]", app: str = "groupcoord-pipeline", shuffle_partitions: int | None = None
) -> SparkSession:
    """A Spark session with the ``groupcoord`` format registered (quiet logs)."""
    # Python workers must run the interpreter that has this project and its dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    builder = builder.config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
    # No stage progress bars on the terminal: the CLI shows its own progress.
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if master and master.startswith("local"):
        # A local driver needs no routable host name (and so no warning that it resolves to loopback).
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
    # A session already running in this process (a notebook, the tests) keeps the sizing it was
    # started with: getOrCreate would otherwise apply this default to it too.
    if shuffle_partitions is None and SparkSession.getActiveSession() is None:
        shuffle_partitions = local_shuffle_partitions(master)
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
