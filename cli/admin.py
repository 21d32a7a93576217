"""``groupcoord groups`` and ``groupcoord offsets``: inspect and reset groups through the sidecar.

These talk Kafka to the sidecar's listener with confluent-kafka's AdminClient, exactly as any
operator tool would, so they show what clients see. Tables for people, ``--json`` for scripts.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from rich.console import Console
from rich.table import Table

groups_app = typer.Typer(help="List, describe and delete groups.", no_args_is_help=True)
offsets_app = typer.Typer(help="Show and reset committed offsets.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)

Bootstrap = Annotated[str, typer.Option("--bootstrap-servers", "-b", help="The sidecar's HOST:PORT.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})


def _fail(message: str) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def _result(admin: AdminClient, future: Any) -> Any:
    # ``admin`` is passed along so the client outlives the request: a collected AdminClient
    # fails its pending futures with "handle destroyed".
    try:
        return future.result(timeout=30)
    except KafkaException as exc:
        _fail(str(exc.args[0]))
    except Exception as exc:  # confluent-kafka raises plain exceptions for timeouts
        _fail(repr(exc))
    finally:
        del admin


def _emit(rows: list[dict[str, Any]], columns: list[str], as_json: bool, title: str) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    out.print(table)


@groups_app.command("list")
def list_groups(bootstrap: Bootstrap = "127.0.0.1:9094", as_json: AsJson = False) -> None:
    """Every group the coordinator knows, with its type and state."""
    result = _result(admin := _admin(bootstrap), admin.list_consumer_groups(request_timeout=30))
    rows = [
        {
            "group": g.group_id,
            "type": getattr(g.type, "name", str(g.type)).lower(),
            "state": getattr(g.state, "name", str(g.state)).lower(),
            "simple": g.is_simple_consumer_group,
        }
        for g in sorted(result.valid, key=lambda g: g.group_id)
    ]
    _emit(rows, ["group", "type", "state", "simple"], as_json, "groups")


@groups_app.command("describe")
def describe_group(
    group: Annotated[str, typer.Argument(help="Group id.")],
    bootstrap: Bootstrap = "127.0.0.1:9094",
    as_json: AsJson = False,
) -> None:
    """Members of a group and the partitions each one owns."""
    d = _result(admin := _admin(bootstrap), admin.describe_consumer_groups([group], request_timeout=30)[group])
    rows = [
        {
            "member": m.member_id,
            "instance": m.group_instance_id or "",
            "client": m.client_id,
            "host": m.host,
            "partitions": ", ".join(
                f"{tp.topic}-{tp.partition}"
                for tp in sorted(m.assignment.topic_partitions, key=lambda tp: (tp.topic, tp.partition))
            ),
        }
        for m in d.members
    ]
    state = getattr(d.state, "name", str(d.state)).lower()
    if as_json:
        print(json.dumps({"group": group, "state": state, "assignor": d.partition_assignor, "members": rows}, indent=2))
        return
    _emit(rows, ["member", "instance", "client", "host", "partitions"], False, f"{group} ({state})")


@groups_app.command("delete")
def delete_group(
    group: Annotated[str, typer.Argument(help="Group id (must be empty).")],
    bootstrap: Bootstrap = "127.0.0.1:9094",
) -> None:
    """Delete an empty group and its offsets."""
    _result(admin := _admin(bootstrap), admin.delete_consumer_groups([group], request_timeout=30)[group])
    out.print(f"deleted {group}")


@offsets_app.command("show")
def show_offsets(
    group: Annotated[str, typer.Argument(help="Group id.")],
    bootstrap: Bootstrap = "127.0.0.1:9094",
    as_json: AsJson = False,
) -> None:
    """Committed offsets of a group."""
    request = [ConsumerGroupTopicPartitions(group)]
    result = _result(admin := _admin(bootstrap), admin.list_consumer_group_offsets(request, request_timeout=30)[group])
    rows = [
        {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "metadata": tp.metadata or ""}
        for tp in sorted(result.topic_partitions, key=lambda tp: (tp.topic, tp.partition))
    ]
    _emit(rows, ["topic", "partition", "offset", "metadata"], as_json, f"offsets of {group}")


@offsets_app.command("reset")
def reset_offsets(
    group: Annotated[str, typer.Argument(help="Group id (must have no active members).")],
    topic: Annotated[str, typer.Option(help="Topic to reset.")],
    to_offset: Annotated[int, typer.Option(help="Offset to set.", min=0)],
    partitions: Annotated[str, typer.Option(help="Comma-separated partitions.")] = "0",
    bootstrap: Bootstrap = "127.0.0.1:9094",
) -> None:
    """Set a group's committed offsets (AlterConsumerGroupOffsets)."""
    try:
        wanted = [int(p) for p in partitions.split(",") if p.strip()]
    except ValueError:
        _fail(f"--partitions must be comma-separated numbers, got {partitions!r}")
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, to_offset) for p in wanted])]
    result = _result(admin := _admin(bootstrap), admin.alter_consumer_group_offsets(request, request_timeout=30)[group])
    failed = [tp for tp in result.topic_partitions if tp.error is not None]
    if failed:
        _fail("; ".join(f"{tp.topic}-{tp.partition}: {tp.error}" for tp in failed))
    out.print(f"{group}: {topic} partitions {wanted} now at {to_offset}")
