"""``groupcoord log``: read the coordinator log directly from the cluster (no coordinator needed),
and record an operator's decision to skip an unreadable record."""

from __future__ import annotations

import dataclasses
import getpass
import json
import socket
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaError, Producer, TopicPartition

from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    CommandConfig,
    Conn,
    Timeout,
    describe_error,
    fail,
    topic_partitions,
    usage,
    watermarks,
)
from groupcoord.cli.output import AsJson, FormatOption, Output, note
from groupcoord.coordinator.runtime.headers import parse_headers
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.coordinator.share.partition_types import RecordState
from groupcoord.records import CoordinatorRecord, RecordDecodeError, RecordType, decode, encode
from groupcoord.records.definitions import LogSkipKey, LogSkipValue, ShareStateBatch

log_app = typer.Typer(help="Read the coordinator log; skip an unreadable record.", no_args_is_help=True)

LOG_TOPIC = "__group_coordinator_log"
Cluster = Annotated[str, typer.Option("--bootstrap-servers", "-b", help="The backing cluster.")]
Topic = Annotated[str, typer.Option(help="Log topic.")]
_RUNTIME = {RecordType.SHARD_EPOCH, RecordType.BATCH_ABORT, RecordType.LOG_SKIP}
_SHARE_STATES = frozenset(int(s) for s in RecordState)


def _plain(value: Any) -> Any:
    if isinstance(value, ShareStateBatch):
        # Share-partition states by name next to Kafka's id (0/2/4 read as nothing to a person).
        state = RecordState(value.delivery_state).name if value.delivery_state in _SHARE_STATES else "UNKNOWN"
        return {**dataclasses.asdict(value), "state": state}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def _open(bootstrap: str, command_config: Path | None, timeout: float, topic: str) -> tuple[Conn, int]:
    """Connect and return the log topic's partition count; errors are one line within the timeout."""
    c = Conn(bootstrap, command_config, timeout)
    admin = c.admin()
    c.check_reachable(admin)
    # Through a sidecar the log topic is hidden (it is the sidecar's alone), so the likely mistake
    # is -b naming the sidecar, as every other command's -b does.
    hidden = f" on {bootstrap}: `log` reads it from the cluster itself (-b is the cluster's address, not a sidecar's)"
    return c, topic_partitions(admin, c, [topic], missing=hidden)[topic]


def read_partition(c: Conn, topic: str, partition: int, start: int = 0, stop: int | None = None) -> list[Any]:
    """Every message of a partition from ``start`` up to its high watermark (or ``stop``)."""
    _, end = watermarks(c, [TopicPartition(topic, partition)])[(topic, partition)]
    if stop is not None:
        end = min(end, stop)
    messages: list[Any] = []
    if start >= end:
        return messages
    # fetch.queue.backoff.ms: librdkafka's default (1 s) idles a reader that falls behind its queue.
    consumer = c.consumer(
        **{"enable.partition.eof": True, "isolation.level": "read_uncommitted", "fetch.queue.backoff.ms": 10}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + c.timeout
        while time.monotonic() < deadline:
            batch = consumer.consume(1000, 0.5)
            if batch:
                deadline = time.monotonic() + c.timeout  # progress: the timeout is per silence
            for msg in batch:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return messages
                    fail(f"cannot read {topic}-{partition}: {describe_error(error)}")
                if (msg.offset() or 0) >= end:
                    return messages
                messages.append(msg)
                if msg.offset() == end - 1:
                    return messages
        fail(f"reading {topic}-{partition} stalled for {c.timeout:g}s before its end (offset {end})")
    finally:
        consumer.close()


def _row(msg: Any) -> tuple[dict[str, Any], CoordinatorRecord | None]:
    try:
        epoch, _ = parse_headers(list(msg.headers() or ()))
    except ValueError:
        epoch = -1
    try:
        record = decode(msg.key(), msg.value())
    except RecordDecodeError as exc:
        return {"offset": msg.offset(), "epoch": epoch, "type": "UNREADABLE", "key": None, "value": str(exc)}, None
    row = {
        "offset": msg.offset(),
        "epoch": epoch,
        "type": record.type.name,
        "key": _plain(record.key),
        "value": _plain(record.value),
    }
    return row, record


def _record_text(row: dict[str, Any]) -> str:
    """The record a dry run would skip, in words: why it is unreadable, or (with --force) its type,
    key and value as JSON as ``log dump`` prints them, never Python's reprs (None, {'k': ...})."""
    if row["type"] == "UNREADABLE":
        return f"unreadable: {row['value']}"
    value = "tombstone" if row["value"] is None else f"value {json.dumps(row['value'])}"
    return f"a readable {row['type']} record, key {json.dumps(row['key'])}, {value}"


@log_app.command("dump")
def dump(
    partition: Annotated[int | None, typer.Option(help="Log partition (shard) to read.", min=0)] = None,
    group: Annotated[
        str | None, typer.Option(help="Read the shard that holds this group; show its records and the log's own.")
    ] = None,
    bootstrap: Cluster = "127.0.0.1:9092",
    topic: Topic = LOG_TOPIC,
    limit: Annotated[int, typer.Option(help="Stop after this many records (0: all).", min=0)] = 0,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Decode the records of one shard: offset, epoch, type, key and value (tombstones shown)."""
    o = Output.of(fmt, as_json)
    if (partition is None) == (group is None):
        usage("give --partition P or --group G")
    c, count = _open(bootstrap, command_config, timeout, topic)
    if group is not None:
        partition = partition_for(group, count)
    assert partition is not None
    if partition >= count:
        fail(f"log topic {topic!r} has no partition {partition} (it has {count})")
    rows = []
    for msg in read_partition(c, topic, partition):
        row, record = _row(msg)
        foreign = record is not None and record.type not in _RUNTIME and getattr(record.key, "group", None) != group
        if group is not None and foreign:
            continue
        rows.append(row)
        if limit and len(rows) >= limit:
            break
    columns = ["offset", "epoch", "type", "key", "value"]
    title = f"{topic} partition {partition}" + (f" (group {group!r})" if group else "")
    if not o.is_structured:  # key and value as one JSON text each, a tombstone said in words
        rows = [
            {
                **row,
                "key": json.dumps(row["key"]),
                "value": "(tombstone)" if row["value"] is None else json.dumps(row["value"]),
            }
            for row in rows
        ]
    o.result(columns, rows, title=title, topic=topic, partition=partition)


@log_app.command("skip")
def skip(
    partition: Annotated[int, typer.Option(help="Log partition (shard) of the unreadable record.", min=0)],
    offset: Annotated[int, typer.Option(help="Offset of the unreadable record.", min=0)],
    reason: Annotated[str, typer.Option(help="Why (kept in the log with who and when).")],
    bootstrap: Cluster = "127.0.0.1:9092",
    topic: Topic = LOG_TOPIC,
    execute: Annotated[bool, typer.Option("--execute", help="Write the decision (default: show it).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Skip even a record that is readable.")] = False,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Record in the log a decision to load the shard without the record at OFFSET.

    The record stays in the log; every later load of the shard passes over it as if absent."""
    o = Output.of(fmt, as_json)
    if not reason.strip():
        fail("--reason must say why")
    c, count = _open(bootstrap, command_config, timeout, topic)
    if partition >= count:
        fail(f"log topic {topic!r} has no partition {partition} (it has {count})")
    found = read_partition(c, topic, partition, start=offset, stop=offset + 1)
    if not found or found[0].offset() != offset:
        fail(f"{topic}-{partition} has no record at offset {offset}")
    row, record = _row(found[0])
    if record is not None and not force:
        fail(
            f"the record at {topic}-{partition} offset {offset} is readable ({row['type']}); skipping it would"
            " drop state (use --force to skip it anyway)"
        )
    decision = LogSkipValue(offset, f"{getpass.getuser()}@{socket.gethostname()}", int(time.time() * 1000), reason)
    shown = {"topic": topic, "partition": partition, "executed": execute, "decision": _plain(decision)}
    if not execute:
        if o.is_structured:
            decided = {**shown, "record": row["value"]}
            o.result(list(decided), [decided])
            return
        # Sentences for a person: stdout at a terminal, stderr when piped (the result is none).
        note(
            f"would write to {topic}-{partition}: skip offset {offset} ({_record_text(row)}), by {decision.operator},"
            f" reason {reason!r}\ndry run: nothing changed (add --execute to write the decision)"
        )
        return
    key, value = encode(CoordinatorRecord(RecordType.LOG_SKIP, LogSkipKey(offset), decision))
    producer = Producer(
        c.config(**{"acks": "all", "enable.idempotence": True, "message.timeout.ms": int(timeout * 1000)})
    )
    outcome: list[Any] = []
    # No epoch header: the decision is not a shard owner's write, and replay honours it whatever its epoch.
    producer.produce(topic, value, key, partition=partition, on_delivery=lambda e, m: outcome.append((e, m)))
    producer.flush(timeout)
    if not outcome:
        fail(f"the decision was not acknowledged within {timeout:g}s")
    error, msg = outcome[0]
    if error is not None:
        fail(f"cannot write the decision: {describe_error(error)}")
    if o.is_structured:
        written = {**shown, "written_at": msg.offset()}
        o.result(list(written), [written])
        return
    note(
        f"wrote the decision to skip {topic}-{partition} offset {offset} at offset {msg.offset()};"
        " the shard loads past it on its next load (restart the coordinator if the shard is failed)"
    )
