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

Before anything, the two addresses are told apart: ``-b`` must be a groupcoord sidecar and
``--cluster`` not (``_check_sides``), else a swapped pair would copy the wrong way and say it
copied "to the sidecar".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata

from groupcoord.cli.admin import SIDECAR, _connect, activity, committed, list_group_ids
from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    CliUsageError,
    CommandConfig,
    Conn,
    Timeout,
    describe_error,
    fail,
    usage,
)
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

# The group probed for each address's group coordinator when no --group is given: the CLI's own
# client group id (``Conn.consumer``), which nothing commits to.
_PROBE_GROUP = "groupcoord-cli"


# --- which address is the sidecar -----------------------------------------------------------


def _hosting(md: ClusterMetadata) -> set[int]:
    """The node ids that lead or hold a replica of a partition: the cluster's brokers. The sidecar
    forwards Metadata with its partitions as the cluster answers them; its own group coordinator
    is a node it adds to the list of brokers, and leads nothing."""
    ids: set[int] = set()
    for topic in md.topics.values():
        for partition in topic.partitions.values():
            ids.update(i for i in (partition.leader, *partition.replicas) if i >= 0)
    return ids


def _side(c: Conn, admin: AdminClient, probe: str) -> tuple[ClusterMetadata, int] | str:
    """An address's Metadata and the node its group coordinator is, or why they cannot be read."""
    try:
        # Described first: on Kafka, finding the coordinator creates __consumer_offsets, whose
        # partitions the coordinator then holds in the Metadata read next.
        described = admin.describe_consumer_groups([probe], request_timeout=c.timeout)[probe].result(timeout=c.timeout)
        md = admin.list_topics(timeout=c.timeout)
    except KafkaException as exc:
        return describe_error(exc.args[0] if exc.args else exc)
    except TimeoutError:
        return f"no answer within {c.timeout:g}s"
    if described.coordinator is None:
        return "its answer names no group coordinator"
    return md, described.coordinator.id


def sidecars(first: tuple[ClusterMetadata, int], second: tuple[ClusterMetadata, int]) -> tuple[bool, bool]:
    """Whether each of two addresses, given its Metadata and its group coordinator's node id, is
    a groupcoord sidecar (``_check_sides``)."""
    (md1, coordinator1), (md2, coordinator2) = first, second
    brokers = _hosting(md1) | _hosting(md2)

    def sidecar(coordinator: int, other: ClusterMetadata, others: int) -> bool:
        if coordinator in brokers:
            return False
        # A coordinator that holds no partition: a sidecar's, unless the other address lists it
        # among its brokers under a coordinator of its own (a broker holding nothing yet, which a
        # sidecar lists as it forwards the cluster's Metadata).
        return coordinator not in other.brokers or coordinator == others

    return sidecar(coordinator1, md2, coordinator2), sidecar(coordinator2, md1, coordinator1)


def _check_sides(cluster: tuple[Conn, AdminClient], sidecar: tuple[Conn, AdminClient], probe: str, o: Output) -> None:
    """Refuse (exit code 2) unless ``-b`` is a groupcoord sidecar and ``--cluster`` is not.

    What tells them apart: a sidecar answers every group request itself, as a group coordinator
    that is a node of its own (``coordinator_node_id``, 1000000 and up in serve), listed in its
    Metadata beside the cluster's brokers but leading no partition; the cluster's group
    coordinator is one of its brokers. (ApiVersions cannot tell: only its request names a
    software, and the sidecar answers with the cluster's versions merged with its own.)"""
    (cc, cadmin), (sc, sadmin) = cluster, sidecar
    seen_cluster, seen_sidecar = _side(cc, cadmin, probe), _side(sc, sadmin, probe)
    for name, c, seen in (("--cluster", cc, seen_cluster), ("-b", sc, seen_sidecar)):
        if isinstance(seen, str):
            o.note(f"cannot tell whether {name} {c.bootstrap} is the sidecar ({seen}); going on")
            return
    assert not isinstance(seen_cluster, str) and not isinstance(seen_sidecar, str)
    (cmd, _), (smd, scoord) = seen_cluster, seen_sidecar
    if cmd.cluster_id and smd.cluster_id and cmd.cluster_id != smd.cluster_id:
        raise CliUsageError(
            f"-b {sc.bootstrap} fronts another cluster (cluster id {smd.cluster_id}) than --cluster"
            f" {cc.bootstrap} (cluster id {cmd.cluster_id}): offsets are positions in one cluster's partitions"
        )
    cluster_is, sidecar_is = sidecars(seen_cluster, seen_sidecar)
    # Raised after connecting, but a bad command line all the same (exit code 2): nothing was read.
    if cluster_is and not sidecar_is:
        raise CliUsageError(
            f"--cluster {cc.bootstrap} is a groupcoord sidecar and -b {sc.bootstrap} is not (swapped?):"
            " --cluster names the cluster's own brokers, -b the sidecar"
        )
    if cluster_is:
        raise CliUsageError(
            f"--cluster {cc.bootstrap} is a groupcoord sidecar, as -b {sc.bootstrap} is:"
            " --cluster must name the cluster's own brokers"
        )
    if not sidecar_is:
        raise CliUsageError(
            f"-b {sc.bootstrap} is not a groupcoord sidecar (its group coordinator is the cluster's broker"
            f" {scoord}), nor is --cluster {cc.bootstrap}: -b must name the sidecar"
        )


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
        o = Output.of(fmt, as_json)
        if bool(group) == all_groups:
            usage("give --group GROUP (repeatable) or --all-groups")
        sides = {"cluster": (cluster, cluster_config or command_config), "sidecar": (sidecar, command_config)}
        connected = {source: _connect(*sides[source], timeout)}
        connected[dest] = _connect(*sides[dest], timeout)
        _check_sides(connected["cluster"], connected["sidecar"], group[0] if group else _PROBE_GROUP, o)
        _move(connected[source], connected[dest], (source, dest), group, all_groups, execute, force, o)

    return copy_offsets


migrate_import = migrate_app.command(
    "import", help="Copy groups' committed offsets from the cluster's own coordinator into the sidecar."
)(_copy_command("cluster", "sidecar"))
migrate_export = migrate_app.command(
    "export", help="Copy groups' committed offsets from the sidecar back to the cluster's own coordinator."
)(_copy_command("sidecar", "cluster"))
