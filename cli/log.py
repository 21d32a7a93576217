"""``groupcoord log``: read the coordinator log directly from the cluster (no coordinator needed)."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Annotated, Any

import typer
from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table

from coordinator.runtime.headers import parse_headers
from records import RecordDecodeError, decode

log_app = typer.Typer(help="Read the coordinator log.", no_args_is_help=True)
out = Console()


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


@log_app.command("dump")
def dump(
    partition: Annotated[int, typer.Option(help="Log partition (shard) to read.", min=0)],
    bootstrap: Annotated[str, typer.Option("--bootstrap-servers", "-b", help="The backing cluster.")],
    topic: Annotated[str, typer.Option(help="Log topic.")] = "__group_coordinator_log",
    limit: Annotated[int, typer.Option(help="Stop after this many records (0: all).", min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Decode every record of one shard: offset, epoch, type, key and value (tombstones shown)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "groupcoord-log-dump",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
        }
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    table = Table(title=f"{topic} partition {partition}")
    for column in ("offset", "epoch", "type", "key", "value"):
        table.add_column(column)
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while not limit or seen < limit:
            msg = consumer.poll(1.0)
            if msg is None:
                if time.monotonic() > deadline:
                    break
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise typer.BadParameter(str(error))
            seen += 1
            epoch, _ = parse_headers(list(msg.headers() or ()))  # type: ignore[arg-type]
            try:
                record = decode(msg.key(), msg.value())
                row = {
                    "offset": msg.offset(),
                    "epoch": epoch,
                    "type": record.type.name,
                    "key": _plain(record.key),
                    "value": _plain(record.value),
                }
            except RecordDecodeError as exc:
                row = {"offset": msg.offset(), "epoch": epoch, "type": "UNREADABLE", "key": None, "value": str(exc)}
            if as_json:
                print(json.dumps(row))
            else:
                value = "(tombstone)" if row["value"] is None else json.dumps(row["value"])
                table.add_row(str(row["offset"]), str(epoch), row["type"], json.dumps(row["key"]), value)
    finally:
        consumer.close()
    if not as_json:
        out.print(table)
