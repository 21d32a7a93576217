"""``groupcoord migrate import|export``: carry groups' committed offsets between a cluster's own
group coordinator and the sidecar.

Both directions read the source's committed offsets (OffsetFetch) and write them to the
destination through its normal write path (OffsetCommit, as AlterConsumerGroupOffsets sends it),
then read the destination back: each offset written is verified against what the destination
returns. Without ``--execute`` nothing is written: the plan shows each offset, what the destination
has now, and what would be done to it (ACTION).

Before anything, the two addresses are told apart: ``-b`` must be a groupcoord sidecar and
``--cluster`` not (``_check_sides``), else a swapped pair would copy the wrong way and say it
copied "to the sidecar".

Each group is moved on its own; a group that is refused or fails leaves the others going, and the
result says per offset what was done (STATUS), the exit code 1 if any group was refused or failed.
A group is refused, nothing of it written, when

- it has active members on the source (unless ``--force``: consumers still running would commit
  over the copied offsets) or on the destination (always: the write would fail, fenced, and the
  consumers there would commit over it);
- an offset would move the destination's committed offset back (its consumers would read those
  records again; ``--allow-rewind`` copies it anyway), as a second import after the application
  moved on through the sidecar would.

The destination's offsets for partitions the source has none for are kept (ACTION ``keep``),
unless ``--replace`` deletes them (OffsetDelete), so that the group is then exactly the source's.
``--all-groups`` leaves out the sidecar's own groups on the cluster (its placement group and the
directory's, ``groupcoord-placement-*``): they are not an application's, and are live while a
sidecar runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata

from groupcoord.cli.admin import SIDECAR, _connect, activity, committed, delete_group_offsets, list_group_ids
from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    CliError,
    CliUsageError,
    CommandConfig,
    Conn,
    Timeout,
    describe_error,
    error_line,
    usage,
)
from groupcoord.cli.offsets_alter import alter_offsets
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
Force = Annotated[
    bool,
    typer.Option(
        "--force", help="Copy even if the group has active members on the source side (never on the destination)."
    ),
]
AllowRewind = Annotated[
    bool,
    typer.Option(
        "--allow-rewind",
        help="Copy an offset even where it moves the destination's committed offset back"
        " (its consumers then read those records again).",
    ),
]
Replace = Annotated[
    bool,
    typer.Option(
        "--replace",
        help="Delete the destination's offsets of partitions the source has none for (default: kept).",
    ),
]
ClusterConfig = Annotated[
    Path | None,
    typer.Option("--cluster-config", help="librdkafka properties for the cluster (default: --command-config)."),
]

# A commit from outside the group (generation -1) into a group that members hold is refused with
# one of these: the members own its offsets.
_MEMBERS_HOLD_IT = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError.STALE_MEMBER_EPOCH,
        KafkaError.FENCED_MEMBER_EPOCH,
        KafkaError.NON_EMPTY_GROUP,
    }
)
# At most this many partitions named in one refusal line (then "and N more").
_NAMED = 5
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


# --- one group --------------------------------------------------------------------------------


@dataclass
class _Group:
    """One group's plan and, with --execute, what became of it. ``status``: planned, refused
    (nothing of it written), failed (see ``errors``), or verified."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    status: str = "planned"
    errors: list[dict[str, Any]] = field(default_factory=list)

    def refuse(self, why: str) -> None:
        self.status = "refused"
        self.errors.append({"group": self.name, "error": why})
        for r in self.rows:
            r["status"] = "refused"

    def failed(self, why: str, row: dict[str, Any] | None = None) -> None:
        self.status = "failed"
        where = {"topic": row["topic"], "partition": row["partition"]} if row is not None else {}
        self.errors.append({"group": self.name, **where, "error": why})


@dataclass(frozen=True)
class _Move:
    """What every group of one command shares."""

    source: tuple[Conn, AdminClient]
    dest: tuple[Conn, AdminClient]
    src: str  # "cluster" or "sidecar", as the lines name them
    dst: str
    force: bool
    allow_rewind: bool
    replace: bool

    @property
    def now(self) -> str:
        return f"{self.dst}-now"

    def members_on_dest(self, g: str, why: str) -> str:
        return f"group {g!r} {why} on the {self.dst}; stop its consumers first (--force applies to the {self.src} side only)"


def _named(parts: list[str]) -> str:
    more = len(parts) - _NAMED
    return ", ".join(parts[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def _plan(m: _Move, g: str, required: bool) -> _Group | None:
    """The rows of one group and whether it is refused; None for a group of --all-groups without
    committed offsets on the source (nothing to move)."""
    (sc, sadmin), (dc, dadmin) = m.source, m.dest
    entry = _Group(g)
    try:
        busy_dest = activity(dc, dadmin, g)
        busy_source = activity(sc, sadmin, g)
        have = committed(sc, g)
        now = committed(dc, g) if have or required else {}
    except CliError as exc:
        entry.failed(str(exc))
        return entry
    if not have and not required:
        return None
    for key in sorted(set(have) | set(now)):
        t, p = key
        there = now.get(key)
        tp = have.get(key)
        if tp is None:
            action = "delete" if m.replace else "keep"
        else:
            action = "rewind" if there is not None and there.offset > tp.offset else "copy"
        entry.rows.append(
            {
                "group": g,
                "topic": t,
                "partition": p,
                "offset": None if tp is None else tp.offset,
                "metadata": None if tp is None else tp.metadata or "",
                m.now: None if there is None else there.offset,
                "action": action,
                "status": "planned",
            }
        )
    rewinds = [r for r in entry.rows if r["action"] == "rewind"]
    if busy_dest:
        # --force cannot help: the destination's members would be fenced by the write (it fails
        # with UNKNOWN_MEMBER_ID) and would commit over it anyway.
        entry.refuse(m.members_on_dest(g, busy_dest))
    elif busy_source and not m.force:
        entry.refuse(f"group {g!r} {busy_source} on the {m.src}; stop its consumers first (or --force to copy anyway)")
    elif not have:
        entry.refuse(f"group {g!r} has no committed offsets on the {m.src}")
    elif rewinds and not m.allow_rewind:
        back = [f"{r['topic']}-{r['partition']} from {r[m.now]} to {r['offset']}" for r in rewinds]
        entry.refuse(
            f"group {g!r}: copying would move the {m.dst}'s committed offsets back ({_named(back)}), and its"
            f" consumers would read those records again; nothing of the group is written (--allow-rewind to"
            f" copy anyway)"
        )
    return entry


def _write_error(m: _Move, g: str, error: Any, partition: str = "") -> str:
    """Why a write was refused, in words (a group that members hold said as the plan says it)."""
    if isinstance(error, KafkaError) and error.code() in _MEMBERS_HOLD_IT:
        return m.members_on_dest(g, "has active members")
    what = f"the offset of group {g!r} for {partition}" if partition else f"the offsets of group {g!r}"
    return f"cannot write {what} to the {m.dst}: {describe_error(error)}"


def _execute(m: _Move, entry: _Group) -> None:
    """Delete (--replace), write, then read back and verify one group; each row's status says
    what became of it: verified, written (not read back), failed, skipped (not tried: an earlier
    step of the group failed) or kept."""
    dc, dadmin = m.dest
    g = entry.name
    deletes = [r for r in entry.rows if r["action"] == "delete"]
    copies = [r for r in entry.rows if r["action"] in ("copy", "rewind")]
    for r in entry.rows:
        r["status"] = "kept" if r["action"] == "keep" else "skipped"
    try:
        # Deletions first: the step a destination is likeliest to refuse as a whole (a cluster
        # without OffsetDelete), so that such a group has nothing written.
        if deletes:
            try:
                gone = delete_group_offsets(dc, g, [(r["topic"], r["partition"]) for r in deletes], f" on the {m.dst}")
            except CliError as exc:
                for r in deletes:
                    r["status"] = "failed"
                entry.failed(str(exc))
                return
            for r in deletes:
                why = gone.get((r["topic"], r["partition"]), "no answer for this partition")
                r["status"] = "failed" if why else "written"
                if why:
                    entry.failed(
                        f"cannot delete the offset of group {g!r} for {r['topic']}-{r['partition']}"
                        f" on the {m.dst}: {why}",
                        r,
                    )
            if entry.status == "failed":
                return
        if copies:
            mine = [TopicPartition(r["topic"], r["partition"], r["offset"], r["metadata"]) for r in copies]
            try:
                result = alter_offsets(dadmin, g, mine, dc.timeout)
            except KafkaException as exc:
                for r in copies:
                    r["status"] = "failed"
                entry.failed(_write_error(m, g, exc.args[0] if exc.args else exc))
                return
            except TimeoutError:
                for r in copies:
                    r["status"] = "failed"  # perhaps written: the read back below does not run
                entry.failed(
                    f"cannot write the offsets of group {g!r} to the {m.dst}: no answer within {dc.timeout:g}s"
                )
                return
            errors = {(tp.topic, tp.partition): tp.error for tp in result.topic_partitions if tp.error is not None}
            for r in copies:
                error = errors.get((r["topic"], r["partition"]))
                r["status"] = "failed" if error is not None else "written"
                if error is not None:
                    entry.failed(_write_error(m, g, error, f"{r['topic']}-{r['partition']}"), r)
        _verify(m, entry, deletes + copies)
    except CliError as exc:  # reading back (a connection lost, the coordinator moving)
        entry.failed(str(exc))
    if entry.status == "planned":
        entry.status = "verified"


def _verify(m: _Move, entry: _Group, done: list[dict[str, Any]]) -> None:
    """The destination must now return exactly what was written, and nothing where it was deleted."""
    dc, _ = m.dest
    back = committed(dc, entry.name)
    for r in done:
        if r["status"] != "written":
            continue
        got = back.get((r["topic"], r["partition"]))
        if r["action"] == "delete":
            ok = got is None
            wrote = "deleting it"
        else:
            # Offset and metadata both: an equal offset alone reads as no difference at all (a
            # cluster that keeps no metadata, as the local broker, differs there).
            ok = got is not None and got.offset == r["offset"] and (got.metadata or "") == r["metadata"]
            wrote = f"writing {r['offset']} with metadata {r['metadata']!r}"
        if ok:
            r["status"] = "verified"
            continue
        r["status"] = "failed"
        returned = "no offset" if got is None else f"offset {got.offset} with metadata {got.metadata or ''!r}"
        entry.failed(
            f"group {entry.name!r} {r['topic']}-{r['partition']}: the {m.dst} returns {returned} after {wrote}", r
        )


# --- the command ------------------------------------------------------------------------------


def _move(m: _Move, groups: list[str] | None, all_groups: bool, execute: bool, o: Output) -> None:
    sc, sadmin = m.source
    skipped: list[str] = []
    if all_groups:
        listed = [g["group"] for g in list_group_ids(sc, sadmin)]
        skipped = [g for g in listed if is_internal_group(g)]
        chosen = [g for g in listed if not is_internal_group(g)]
        if skipped:
            o.note(f"left out the sidecar's own groups: {', '.join(skipped)}")
    else:
        chosen = list(dict.fromkeys(groups or []))
    moves: list[_Group] = []
    for g in chosen:
        entry = _plan(m, g, required=not all_groups)
        if entry is None:
            continue
        if execute and entry.status == "planned":
            _execute(m, entry)  # one group after the other: a failure leaves the next ones going
        moves.append(entry)
    rows = [r for e in moves for r in e.rows]
    errors = [e for entry in moves for e in entry.errors]
    columns = ["group", "topic", "partition", "offset", "metadata", m.now, "action", "status"]
    verified = execute and not any(r["status"] in ("written", "failed", "skipped") for r in rows)
    o.result(columns, rows, errors=errors, executed=execute, verified=verified, skipped_groups=skipped)
    for e in errors:
        error_line(e["error"])
    kept = sum(r["action"] == "keep" and r["status"] != "refused" for r in rows)
    if kept:
        o.note(
            f"{'kept' if execute else 'would keep'} {kept} offset(s) the {m.dst} has for partitions the {m.src}"
            " has none for (ACTION keep): --replace deletes them"
        )
    if execute:
        done = [e for e in moves if e.status == "verified"]
        if done:
            copied = sum(r["action"] in ("copy", "rewind") for e in done for r in e.rows)
            deleted = sum(r["action"] == "delete" for e in done for r in e.rows)
            also = f", and deleted {deleted} there the {m.src} has none for" if deleted else ""
            o.note(f"copied and verified {copied} offset(s) of {len(done)} group(s) to the {m.dst}{also}")
    elif any(e.status == "planned" for e in moves):
        o.note("plan only: nothing changed (add --execute to copy these offsets)")
    if errors:
        raise typer.Exit(1)


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
        allow_rewind: AllowRewind = False,
        replace: Replace = False,
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
        m = _Move(connected[source], connected[dest], source, dest, force, allow_rewind, replace)
        _move(m, group, all_groups, execute, o)

    return copy_offsets


migrate_import = migrate_app.command(
    "import", help="Copy groups' committed offsets from the cluster's own coordinator into the sidecar."
)(_copy_command("cluster", "sidecar"))
migrate_export = migrate_app.command(
    "export", help="Copy groups' committed offsets from the sidecar back to the cluster's own coordinator."
)(_copy_command("sidecar", "cluster"))
