"""``groupcoord migrate import|export``: carry groups' committed offsets between a cluster's own
group coordinator and the sidecar.

Both directions read the source's committed offsets (OffsetFetch) and write them to the
destination through its normal write path (OffsetCommit, as AlterConsumerGroupOffsets sends it),
then read the destination back and fail unless it returns exactly what was written. Without
``--execute`` nothing is written: the plan shows each offset and what the destination has now.
A group with active members on either side is refused unless ``--force``: consumers still running
would commit over the copied offsets (source) or be fenced by the write (destination).
``--all-groups`` leaves out the sidecar's own groups on the cluster (its placement group and the
directory's, ``groupcoord-placement-*``): they are not an application's, and are live while a
sidecar runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.cli.admin import SIDECAR, _connect, activity, committed, list_group_ids
from groupcoord.cli.common import DEFAULT_TIMEOUT, CommandConfig, Conn, Timeout, fail, usage
from groupcoord.cli.output import AsJson, FormatOption, Output
from groupcoord.coordinator.config import is_internal_group

migrate_app = typer.Typer(
    help="Move groups' committed offsets between a cluster and the sidecar.", no_args_is_help=True
)

Cluster = Annotated[str, typer.Option("--cluster", help="The cluster's own bootstrap HOST:PORT.")]
# -b like every other command that talks to the sidecar; --sidecar is the older spelling.
Sidecar = Annotated[
    str,
    typer.Option(
        "--bootstrap-servers", "-b", "--sidecar", envvar="GROUPCOORD_CLI_BOOTSTRAP", help="The sidecar's HOST:PORT."
    ),
]
Groups = Annotated[list[str] | None, typer.Option("--group", help="Group id (repeatable).")]
AllGroups = Annotated[bool, typer.Option("--all-groups", help="Every group the source knows.")]
Execute = Annotated[bool, typer.Option("--execute", help="Write the offsets (default: print the plan).")]
Force = Annotated[bool, typer.Option("--force", help="Copy even if a group has active members.")]
ClusterConfig = Annotated[
    Path | None,
    typer.Option("--cluster-config", help="librdkafka properties for the cluster (default: --command-config)."),
]


def _move(
    source: tuple[Conn, AdminClient],
    dest: tuple[Conn, AdminClient],
    names: tuple[str, str],
    groups: list[str] | None,
    all_groups: bool,
    execute: bool,
    force: bool,
    o: Output,
) -> None:
    (sc, sadmin), (dc, dadmin) = source, dest
    src_name, dst_name = names
    skipped: list[str] = []
    if all_groups:
        listed = [g["group"] for g in list_group_ids(sc, sadmin)]
        skipped = [g for g in listed if is_internal_group(g)]
        chosen = [g for g in listed if not is_internal_group(g)]
        if skipped:
            o.note(f"left out the sidecar's own groups: {', '.join(skipped)}")
    else:
        chosen = list(dict.fromkeys(groups or []))
    rows: list[dict[str, Any]] = []
    for g in chosen:
        for side, (c, admin) in ((src_name, source), (dst_name, dest)):
            why = activity(c, admin, g)
            if why and not force:
                fail(f"group {g!r} {why} on the {side}; stop its consumers first (or --force to copy anyway)")
        have = committed(sc, sadmin, g)
        if not have and not all_groups:
            fail(f"group {g!r} has no committed offsets on the {src_name}")
        now = committed(dc, dadmin, g)
        for (t, p), tp in sorted(have.items()):
            there = now.get((t, p))
            rows.append(
                {
                    "group": g,
                    "topic": t,
                    "partition": p,
                    "offset": tp.offset,
                    "metadata": tp.metadata or "",
                    f"{dst_name}-now": None if there is None else there.offset,
                }
            )
    if execute:
        for g in chosen:
            mine = [
                TopicPartition(r["topic"], r["partition"], r["offset"], r["metadata"]) for r in rows if r["group"] == g
            ]
            if not mine:
                continue
            future = dadmin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(g, mine)], request_timeout=dc.timeout
            )
            result = dc.wait(future[g], f"cannot write the offsets of group {g!r} to the {dst_name}")
            failed = [tp for tp in result.topic_partitions if tp.error is not None]
            if failed:
                fail(f"cannot write the offsets of group {g!r} to the {dst_name}: {failed[0].error}")
            # Verify: the destination must now return exactly what was copied.
            back = committed(dc, dadmin, g)
            for tp in mine:
                got = back.get((tp.topic, tp.partition))
                if got is None or got.offset != tp.offset or (got.metadata or "") != (tp.metadata or ""):
                    # Offset and metadata both: an equal offset alone reads as no difference at
                    # all (a cluster that keeps no metadata, as the local broker, differs there).
                    returned = (
                        "no offset" if got is None else f"offset {got.offset} with metadata {got.metadata or ''!r}"
                    )
                    fail(
                        f"group {g!r} {tp.topic}-{tp.partition}: the {dst_name} returns {returned}"
                        f" after writing {tp.offset} with metadata {tp.metadata or ''!r}"
                    )
    columns = ["group", "topic", "partition", "offset", "metadata", f"{dst_name}-now"]
    o.result(columns, rows, executed=execute, verified=execute, skipped_groups=skipped)
    if execute:
        o.note(f"copied and verified {len(rows)} offset(s) of {len(chosen)} group(s) to the {dst_name}")
    else:
        o.note("plan only: nothing changed (add --execute to copy these offsets)")


def _copy_command(source: str, dest: str) -> Callable[..., None]:
    """``import`` (cluster to sidecar) and ``export`` (sidecar to cluster): one set of options,
    the source connected first."""

    def copy_offsets(
        cluster: Cluster,
        sidecar: Sidecar = SIDECAR,
        group: Groups = None,
        all_groups: AllGroups = False,
        execute: Execute = False,
        force: Force = False,
        command_config: CommandConfig = None,
        cluster_config: ClusterConfig = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        fmt: FormatOption = None,
        as_json: AsJson = False,
    ) -> None:
        if bool(group) == all_groups:
            usage("give --group GROUP (repeatable) or --all-groups")
        sides = {"cluster": (cluster, cluster_config or command_config), "sidecar": (sidecar, command_config)}
        from_side = _connect(*sides[source], timeout)
        to_side = _connect(*sides[dest], timeout)
        _move(from_side, to_side, (source, dest), group, all_groups, execute, force, Output.of(fmt, as_json))

    return copy_offsets


migrate_import = migrate_app.command(
    "import", help="Copy groups' committed offsets from the cluster's own coordinator into the sidecar."
)(_copy_command("cluster", "sidecar"))
migrate_export = migrate_app.command(
    "export", help="Copy groups' committed offsets from the sidecar back to the cluster's own coordinator."
)(_copy_command("sidecar", "cluster"))
