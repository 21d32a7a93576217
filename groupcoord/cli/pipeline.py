"""``groupcoord pipeline``: Spark jobs over the coordinator log (needs the ``spark`` extra and Java 17+).

Every job reads the log topic straight from the backing cluster (``-b``), so it works whether a
coordinator runs or not; ``import`` is the one that talks to a running sidecar (``--sidecar``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from groupcoord.cli.output import plain, print_document, table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pipeline_app = typer.Typer(help="Spark jobs over the coordinator log: snapshot, audit, lag, history, import.")
out = Console()
err = Console(stderr=True)

Bootstrap = Annotated[str, typer.Option("--bootstrap-servers", "-b", help="The backing cluster (where the log is).")]
CommandConfig = Annotated[
    Path | None, typer.Option("--command-config", help="librdkafka properties file (TLS/SASL settings).")
]
Master = Annotated[
    str | None, typer.Option("--master", help="Spark master (default local[*]; spark-submit's when run under it).")
]
LogTopic = Annotated[str, typer.Option("--topic", help="Log topic.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables (the CLI's one shape).")]


def _fail(message: str, code: int = 2) -> NoReturn:
    _progress.stop()
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _config(bootstrap: str, command_config: Path | None) -> dict[str, str]:
    from groupcoord.pipeline.cluster import ClusterError, read_properties

    settings: dict[str, str] = {}
    if command_config is not None:
        try:
            settings.update(read_properties(command_config))
        except ClusterError as exc:
            _fail(str(exc))
    settings["bootstrap.servers"] = bootstrap
    return settings


def _not_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


class _Interrupted(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is."""


def _terminate(signum: int, frame: object) -> None:
    raise _Interrupted()


@contextmanager
def _jvm_output_to(path: Path) -> Iterator[None]:
    """While the JVM is started, file descriptor 2 is ``path``: the JVM (and every Spark process it
    starts) inherits it, so its log4j lines and JVM warnings land there, not on the terminal."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextmanager
def _spark(master: str | None, quiet: bool) -> Iterator[SparkSession]:
    """A Spark session for one job. Spark's own output (log4j, stage bars) goes to a log file;
    Ctrl-C or SIGTERM ends the job with one line (exit code 128 + the signal)."""
    import signal
    import tempfile

    try:
        from groupcoord.pipeline.source import session
    except ImportError:
        _fail("the pipeline needs the spark extra: pip install 'groupcoord[spark]' (and Java 17+)")
    # Under spark-submit the master comes from spark-submit itself.
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[*]"
    from pyspark.sql import SparkSession

    # py4j logs a whole traceback when a call is interrupted (some through its own logger, some
    # through the root logger): the one line below says it.
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    logging.getLogger().addFilter(_not_py4j)
    previous = signal.signal(signal.SIGTERM, _terminate)
    # A session already running in this process (a notebook, the tests) is used and left running.
    owned = SparkSession.getActiveSession() is None
    spark_log = Path(tempfile.gettempdir()) / f"groupcoord-pipeline-{os.getpid()}.log"
    interrupted = False
    try:
        _step(quiet, f"starting Spark ({master or 'from spark-submit'}); its own log: {spark_log}")
        try:
            with _jvm_output_to(spark_log) if owned else contextlib.nullcontext():
                spark = session(master)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # no Java, bad master URL: one line, not a JVM trace
            _fail(f"cannot start Spark: {str(exc).splitlines()[0] if str(exc) else exc!r} (see {spark_log})")
        try:
            yield spark
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            # No spark.stop(): a JVM whose calls were cut off does not stop cleanly (and says so);
            # it exits by itself once this process has gone (it watches its stdin).
            interrupted = True
            raise
        except Exception as exc:
            _fail(_one_line(exc))
        finally:
            if owned and not interrupted:
                spark.stop()
    except KeyboardInterrupt as exc:
        _progress.stop()
        signum = signal.SIGTERM if isinstance(exc, _Interrupted) else signal.SIGINT
        _fail(f"interrupted by {signum.name}: the job stopped", 128 + signum)
    finally:
        _progress.stop()
        signal.signal(signal.SIGTERM, previous)


# The line of a Python traceback that names the exception ("AttributeError: ...").
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b")


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    for line in text.splitlines():
        for marker in ("ClusterError: ", "RecordDecodeError: "):
            if marker in line:
                return line.split(marker, 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return repr(exc)
    if "Python worker" in lines[0]:
        # Spark's first line says only where it was thrown ("An exception was thrown from the
        # Python worker: ..."); what was thrown is the last line of the worker's traceback.
        raised = [line for line in lines[1:] if _RAISED.match(line)]
        if raised:
            return f"a Spark worker failed: {raised[-1]}"
    return lines[0]


class _Progress:
    """The job's steps: a rich progress line (spinner, step, time) on a terminal, a ``• step`` line
    each otherwise; nothing with --json."""

    def __init__(self) -> None:
        self._live: Progress | None = None
        self._task: TaskID | None = None

    def step(self, message: str) -> None:
        if not err.is_terminal:
            err.print(f"• {message}", highlight=False)
            return
        if self._live is None:
            self._live = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True
            )
            self._live.start()
            self._task = self._live.add_task(message, total=None)
        else:
            assert self._task is not None
            self._live.update(self._task, description=message)

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live, self._task = None, None


_progress = _Progress()


def _step(quiet: bool, message: str) -> None:
    if not quiet:
        _progress.step(message)


def _table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A table on a terminal (long values folded, never cut); plain whitespace-aligned columns
    when piped, whole values and no title, as every other command prints them."""
    if sys.stdout.isatty():
        out.print(table(title, columns, rows))
    else:
        print(plain(columns, rows), flush=True)


@pipeline_app.command()
def snapshot(
    out_dir: Annotated[str, typer.Option("--out", help="Directory for the tables (DIR/offsets, DIR/groups, ...).")],
    bootstrap: Bootstrap,
    fmt: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    command_config: CommandConfig = None,
    master: Master = None,
    topic: LogTopic = "__group_coordinator_log",
    as_json: AsJson = False,
) -> None:
    """The current state of every group, computed from the log with the runtime's replay rules."""
    if fmt not in ("parquet", "csv"):
        _fail(f"--format must be parquet or csv, got {fmt!r}")
    config = _config(bootstrap, command_config)
    from groupcoord.pipeline.cluster import topic_names
    from groupcoord.pipeline.jobs import load_log, snapshot_tables, with_status, write_tables

    with _spark(master, as_json) as spark:
        _step(as_json, f"reading {topic} from {bootstrap}")
        status_log = with_status(load_log(spark, config, topic)).persist()
        records = status_log.count()
        # A record that cannot be decoded (and that no ``log skip`` decision set aside) is left out
        # of every table, where a coordinator's load stops at it: the tables may then lack state,
        # which a snapshot must not keep quiet about.
        unreadable = status_log.where(status_log["status"] == "unreadable").select("partition", "offset")
        unread = sorted((r.partition, r.offset) for r in unreadable.limit(1000).collect())
        _step(as_json, f"{records} records read; resolving topic ids")
        names = topic_names(config)
        _step(as_json, f"writing tables to {out_dir} ({fmt})")
        counts = write_tables(snapshot_tables(spark, status_log, names), out_dir, fmt)
    if unread:
        partition, offset = unread[0]
        many = f"{len(unread)}" if len(unread) < 1000 else "1000 or more"
        err.print(
            f"[yellow]warning:[/yellow] {many} log records could not be read and are left out of the tables, "
            f"the first at partition {partition} offset {offset}: `groupcoord pipeline audit` names them",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        tables = [{"table": k, "rows": v} for k, v in counts.items()]
        print_document(tables, records=records, out=out_dir, format=fmt, unreadable=len(unread))
        return
    _table(
        f"snapshot of {records} log records -> {out_dir}",
        [{"table": k, "rows": v} for k, v in counts.items()],
        ["table", "rows"],
    )


@pipeline_app.command()
def audit(
    bootstrap: Bootstrap,
    command_config: CommandConfig = None,
    master: Master = None,
    topic: LogTopic = "__group_coordinator_log",
    share_delivery_count_limit: Annotated[
        int,
        typer.Option(
            "--share-delivery-count-limit",
            min=2,
            help="The sidecar's group.share.delivery.count.limit (a group's share.delivery.count.limit overrides it).",
        ),
    ] = 5,
    as_json: AsJson = False,
) -> None:
    """Check the coordinator's invariants across the whole log (every record decodes, epochs never
    go back, no partition given to two members, share-partition state included; the list is in
    the docs, Operations > Reading the log with Spark); exit code 1 if any is violated."""
    config = _config(bootstrap, command_config)
    from groupcoord.pipeline.jobs import audit as run_audit
    from groupcoord.pipeline.jobs import load_log, with_status

    with _spark(master, as_json) as spark:
        _step(as_json, f"auditing {topic} on {bootstrap}")
        status_log = with_status(load_log(spark, config, topic)).persist()
        records = status_log.count()
        violations = [r.asDict() for r in run_audit(status_log, share_delivery_count_limit).collect()]
    if as_json:
        print_document(violations, records=records)
    elif violations:
        _table(
            f"{len(violations)} violations in {records} records",
            violations,
            ["check", "group_id", "partition", "offset", "detail"],
        )
    else:
        out.print(f"ok: {records} records, no violations")
    if violations:
        raise typer.Exit(1)


@pipeline_app.command()
def lag(
    bootstrap: Bootstrap,
    command_config: CommandConfig = None,
    master: Master = None,
    topic: LogTopic = "__group_coordinator_log",
    group: Annotated[str | None, typer.Option("--group", help="Only this group.")] = None,
    as_json: AsJson = False,
) -> None:
    """Committed offsets against the data topics' end offsets, per partition and per group."""
    config = _config(bootstrap, command_config)
    from pyspark.sql import functions as F

    from groupcoord.pipeline.jobs import lag as run_lag
    from groupcoord.pipeline.jobs import load_log, snapshot_tables, with_status

    with _spark(master, as_json) as spark:
        _step(as_json, f"reading {topic} from {bootstrap}")
        status_log = with_status(load_log(spark, config, topic)).persist()
        offsets = snapshot_tables(spark, status_log, {})["offsets"]
        if group is not None:
            offsets = offsets.where(F.col("group_id") == group)
        _step(as_json, "reading end offsets of the data topics")
        result = run_lag(spark, offsets, config)
    if as_json:
        print_document(result.rows, groups=result.totals)
        return
    _table(
        "lag per partition", result.rows, ["group_id", "topic", "partition", "committed_offset", "end_offset", "lag"]
    )
    _table("lag per group", result.totals, ["group_id", "partitions", "total_lag"])


@pipeline_app.command()
def history(
    group: Annotated[str, typer.Option("--group", help="Group id.")],
    bootstrap: Bootstrap,
    command_config: CommandConfig = None,
    master: Master = None,
    topic: LogTopic = "__group_coordinator_log",
    as_json: AsJson = False,
) -> None:
    """Timeline of one group: epochs, members joining and leaving, assignments, commits per minute."""
    config = _config(bootstrap, command_config)
    from groupcoord.pipeline.cluster import topic_names
    from groupcoord.pipeline.jobs import history as run_history
    from groupcoord.pipeline.jobs import load_log, with_status

    with _spark(master, as_json) as spark:
        _step(as_json, f"reading {topic} from {bootstrap}")
        names = topic_names(config)
        events, commits = run_history(with_status(load_log(spark, config, topic)), group, names)
    if as_json:
        print_document(events, group=group, commits_per_minute=commits)
        return
    if not events and not commits:
        _fail(f"no records of group {group!r} in {topic}", 1)
    _table(f"history of {group}", events, ["time", "offset", "event", "member", "detail"])
    _table("commits per minute", commits, ["minute", "commits", "partitions"])


def _read_offsets(source: Path, master: str | None, quiet: bool) -> list[tuple[str, str, int, int, str]]:
    """(group, topic, partition, offset, metadata) from a snapshot directory or a CSV file."""
    if source.is_file():
        rows: list[tuple[str, str, int, int, str]] = []
        try:
            # (utf-8-sig: a byte-order mark, as spreadsheets write, is not part of the first group id.)
            text = source.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"{source}: cannot read it as UTF-8 text: {exc}")
        for number, fields in enumerate(csv.reader(io.StringIO(text, newline="")), 1):
            # A header names its columns: its partition column is no number (a data row with
            # a bad offset is an error, not a header).
            if not fields or (number == 1 and len(fields) >= 3 and not fields[2].strip().lstrip("-").isdigit()):
                continue  # blank line or header
            if len(fields) < 4:
                _fail(f"{source}:{number}: expected group,topic,partition,offset")
            try:
                partition, offset = int(fields[2]), int(fields[3])
            except ValueError:
                _fail(f"{source}:{number}: partition and offset must be numbers")
            if partition < 0 or offset < 0:
                # A commit cannot carry one (confluent-kafka raised ValueError, a traceback).
                _fail(f"{source}:{number}: partition and offset must not be negative, got {partition},{offset}")
            rows.append((fields[0], fields[1], partition, offset, ""))
        return rows
    table = source / "offsets" if (source / "offsets").is_dir() else source
    if not table.is_dir():
        _fail(f"{source}: neither a CSV file nor a snapshot directory with an offsets table")
    with _spark(master, quiet) as spark:
        parquet = any(p.suffix == ".parquet" for p in table.iterdir())
        reader = spark.read if parquet else spark.read.option("header", True).option("inferSchema", True)
        df = reader.parquet(str(table)) if parquet else reader.csv(str(table))
        return [
            (r.group_id, r.topic, int(r.partition), int(r.committed_offset), r.metadata or "")
            for r in df.select("group_id", "topic", "partition", "committed_offset", "metadata").collect()
        ]


@pipeline_app.command("import")
def import_offsets(
    source: Annotated[Path, typer.Option("--from", help="A snapshot directory (its offsets table) or a CSV file.")],
    sidecar: Annotated[str, typer.Option("--sidecar", "-s", help="The running sidecar's HOST:PORT.")],
    execute: Annotated[bool, typer.Option("--execute", help="Commit (default: dry run).")] = False,
    batch_size: Annotated[int, typer.Option(help="Partitions per OffsetCommit.", min=1)] = 500,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the sidecar's answer.", min=0.1)
    ] = 30.0,
    command_config: CommandConfig = None,
    master: Master = None,
    as_json: AsJson = False,
) -> None:
    """Bulk-load offsets into a running sidecar through its OffsetCommit path (groups with members refused)."""
    from groupcoord.pipeline.importer import ImportError_, import_plan, run_import

    if not source.exists():
        _fail(f"{source}: no such file or directory")
    rows = _read_offsets(source, master, as_json)
    config = _config(sidecar, command_config)
    by_group: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    for g, t, p, o, m in rows:
        by_group[g].append((t, p, o, m))
    try:
        plan = import_plan(config, by_group, timeout)
        result = run_import(config, plan, batch_size) if execute else None
    except ImportError_ as exc:
        _fail(str(exc))
    summary = [
        {
            "group": g.group,
            "partitions": len(g.offsets),
            "action": g.refusal or ("committed" if execute else "would commit"),
            "failed": (result or {}).get(g.group, 0),
        }
        for g in plan
    ]
    # Why each partition failed: the errors of the document, and one line each on stderr.
    errors = [{"group": g.group, "error": why} for g in plan for why in g.failures]
    if as_json:
        print_document(summary, errors, executed=execute)
    else:
        _table(
            "import" + ("" if execute else " (dry run: add --execute to commit)"),
            summary,
            ["group", "partitions", "action", "failed"],
        )
        for e in errors:
            line = escape(f"group {e['group']!r}: {e['error']}")
            err.print(f"[red]error:[/red] {line}", highlight=False, soft_wrap=True)
    if any(g.refusal for g in plan) or any((result or {}).values()):
        raise typer.Exit(1)


if __name__ == "__main__":
    # ``python -m groupcoord.cli.pipeline ...`` or ``spark-submit groupcoord/cli/pipeline.py ...``: the same commands
    # as ``groupcoord pipeline``.
    pipeline_app()
