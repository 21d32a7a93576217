"""``groupcoord offsets reset``: Kafka's scopes and strategies, a dry run unless ``--execute``.

As kafka-consumer-groups.sh does: the plan is computed from the committed offsets and the
partitions' earliest/latest offsets; targets outside [earliest, latest] are clamped; a group
with active members is refused; ``--export`` prints the plan as CSV (the format ``--from-file``
reads back).
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import Consumer, TopicPartition

from groupcoord.cli.admin import SIDECAR, _connect, activity, committed, list_group_ids, offsets_app
from groupcoord.cli.common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    CommandConfig,
    Conn,
    Timeout,
    check_partitions,
    describe_error,
    fail,
    parse_topic_spec,
    topic_partitions,
    usage,
    watermarks,
)
from groupcoord.cli.offsets_alter import alter_offsets
from groupcoord.cli.offsets_wire import OffsetReader
from groupcoord.cli.output import AsJson, FormatOption, Output
from groupcoord.coordinator.share.auto_offset_reset import parse_duration_ms as duration_ms

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_duration_ms(text: str) -> int:
    """ISO-8601 durations as Kafka's --by-duration takes them (Java's Duration.parse: PnDTnHnMn.nS)."""
    try:
        ms = duration_ms(text.strip())
    except ValueError:
        ms = -1
    if ms < 0:
        usage(f"--by-duration {text!r}: expected an ISO-8601 duration such as PT1H30M or P1DT2H")
    return ms


def parse_datetime(text: str) -> tuple[datetime, bool]:
    """Kafka's --to-datetime format (YYYY-MM-DDTHH:mm:SS.sss, optional zone), and whether it named a
    zone. Without one it is this machine's local time, as kafka-consumer-groups.sh reads it (the
    JVM's default time zone)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        usage(f"--to-datetime {text!r}: expected YYYY-MM-DDTHH:mm:SS[.sss][+HH:MM]")
    if when.tzinfo is not None:
        return when, True
    try:
        return when.astimezone(), False  # a naive datetime's astimezone() reads it as local time
    except (OverflowError, ValueError, OSError):
        # Local midnight of 0001-01-01 east of UTC is in year 0, which datetime cannot hold, so the
        # local zone cannot be looked up there ("year 0 is out of range"); its offset a year later
        # or earlier is the same (such old times have the zone's fixed LMT offset anyway).
        near = when.replace(year=min(max(when.year, 2), 9998))
        return when.replace(tzinfo=near.astimezone().tzinfo), False


def _epoch_ms(when: datetime) -> int:
    # timedelta arithmetic, valid for every aware datetime (year 1 included), unlike a conversion.
    return (when - EPOCH) // timedelta(milliseconds=1)


def _resolved_ms(text: str, when: datetime, say: Callable[[str], None] | None = None) -> int:
    """The instant ListOffsets is asked for. Kafka's tool resets to the first offset whose record
    is at or after the instant, the earliest offset for any instant before every record; no record
    is older than the epoch (and ListOffsets takes negative timestamps as special values, or times
    out on them), so an earlier instant is the epoch. One past what an instant can be written as
    (year 9999 in UTC) is refused: the plan could not state it."""
    ms = _epoch_ms(when)
    if ms < 0:
        if say is not None:
            say(f"--to-datetime {text} is before {instant(0)}, older than any record: read as {instant(0)}")
        return 0
    try:
        instant(ms)
    except (OverflowError, ValueError, OSError):
        usage(f"--to-datetime {text!r}: out of range (after 9999-12-31T23:59:59.999Z in UTC)")
    return ms


def parse_datetime_ms(text: str) -> int:
    when, _ = parse_datetime(text)
    return _resolved_ms(text, when)


def datetime_ms(text: str, say: Callable[[str], None]) -> int:
    """``--to-datetime`` as epoch milliseconds (instants before the epoch read as the epoch); a
    time without a zone is read as local time, and ``say`` tells the person so (the same text
    names another instant on a machine in another zone)."""
    when, zoned = parse_datetime(text)
    if not zoned:
        say(zone_note(text, when))
    return _resolved_ms(text, when, say)


def instant(ms: int) -> str:
    """An instant in UTC, ISO 8601 with a Z: what the plan says it resets to."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _utc_text(when: datetime) -> str:
    try:
        return instant(_epoch_ms(when))
    except (OverflowError, ValueError, OSError):  # year 0 or 10000 in UTC
        return "before 0001-01-01T00:00:00.000Z" if when.year == 1 else "after 9999-12-31T23:59:59.999Z"


def _offset_text(when: datetime) -> str:
    """UTC+01:00; with seconds where the zone has them (the local mean time of old dates, +00:53:28)."""
    offset = when.utcoffset() or timedelta(0)
    seconds = int(offset.total_seconds())
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"UTC{'-' if seconds < 0 else '+'}{hours:02d}:{minutes:02d}" + (f":{secs:02d}" if secs else "")


def zone_note(text: str, when: datetime) -> str:
    return (
        f"--to-datetime {text} has no zone: read as local time {when.tzname()} ({_offset_text(when)}),"
        f" as kafka-consumer-groups.sh does; that is {_utc_text(when)}"
    )


def read_plan_file(path: Path, groups: list[str]) -> dict[tuple[str, str, int], int]:
    """``topic,partition,offset`` (one group) or ``group,topic,partition,offset`` lines."""
    try:
        # (utf-8-sig: a byte-order mark, as spreadsheets write, is not part of the first topic.)
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        fail(f"cannot read --from-file {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"cannot read --from-file {path} as UTF-8 text: {exc}")
    plan: dict[tuple[str, str, int], int] = {}
    lines: dict[tuple[str, str, int], int] = {}  # where each partition was given
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip():
            continue
        try:
            if len(row) == 3:
                if len(groups) != 1:
                    fail(
                        f"{path}:{number}: three columns need exactly one --group (else use group,topic,partition,offset)"
                    )
                key, offset = (groups[0], row[0].strip(), int(row[1])), int(row[2])
            elif len(row) == 4:
                key, offset = (row[0].strip(), row[1].strip(), int(row[2])), int(row[3])
            else:
                raise ValueError
        except ValueError:
            fail(f"{path}:{number}: expected topic,partition,offset or group,topic,partition,offset, got {row!r}")
        if key in lines:
            # Which one was meant is anyone's guess: not the last one, silently.
            fail(f"{path}:{number}: {key[1]}-{key[2]} of group {key[0]!r} is given again (first on line {lines[key]})")
        lines[key] = number
        plan[key] = offset
    if not plan:
        fail(f"--from-file {path} names no offsets")
    return plan


def offsets_for_time(
    c: Conn, tps: list[TopicPartition], ms: int, marks: dict[tuple[str, int], tuple[int, int]]
) -> dict[tuple[str, int], int]:
    """First offset whose record timestamp is at or after ``ms``; the log end when there is none.

    The cluster's ListOffsets answer is checked against the records themselves (the local
    development broker ignores the timestamp and answers 0); when it does not hold, the offset is
    found by binary search over the partition, reading one record per step (this assumes
    timestamps that grow with offsets, as CreateTime from one producer or LogAppendTime do)."""
    consumer = c.consumer()
    try:
        try:
            listed = consumer.offsets_for_times(
                [TopicPartition(tp.topic, tp.partition, ms) for tp in tps], timeout=c.timeout
            )
        except Exception as exc:
            fail(f"cannot look up offsets by time: {describe_error(exc.args[0] if exc.args else exc)}")
        result: dict[tuple[str, int], int] = {}
        for tp in listed:
            key = (tp.topic, tp.partition)
            result[key] = _first_at_or_after(c, consumer, key, ms, marks[key], tp.offset)
        return result
    finally:
        consumer.close()


def _stamp(c: Conn, consumer: Consumer, key: tuple[str, int], offset: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record at or after ``offset``."""
    consumer.assign([TopicPartition(key[0], key[1], offset)])
    deadline = time.monotonic() + c.timeout
    while time.monotonic() < deadline:
        for msg in consumer.consume(1, 0.5):
            if msg.error() is None:
                return msg.offset() or 0, msg.timestamp()[1]
    fail(f"cannot read {key[0]}-{key[1]} at offset {offset} within {c.timeout:g}s")


def _first_at_or_after(
    c: Conn, consumer: Consumer, key: tuple[str, int], ms: int, marks: tuple[int, int], listed: int
) -> int:
    earliest, latest = marks
    if listed < 0 or listed >= latest:
        # "No record at or after that time": true only if the last record is older.
        if latest == earliest or _stamp(c, consumer, key, latest - 1)[1] < ms:
            return latest
    elif (
        listed >= earliest
        and _stamp(c, consumer, key, listed)[1] >= ms
        and (listed == earliest or _stamp(c, consumer, key, listed - 1)[1] < ms)
    ):
        return listed
    lo, hi = earliest, latest
    while lo < hi:
        mid = (lo + hi) // 2
        found, ts = _stamp(c, consumer, key, mid)
        if ts >= ms:
            hi = mid
        else:
            lo = found + 1
    return lo


@offsets_app.command("reset")
def reset_offsets(
    group: Annotated[list[str] | None, typer.Option("--group", help="Group id (repeatable).")] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Every group.")] = False,
    topic: Annotated[list[str] | None, typer.Option("--topic", help="TOPIC or TOPIC:P,P,... (repeatable).")] = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="Every topic the group has offsets for.")] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest")] = False,
    to_current: Annotated[bool, typer.Option("--to-current")] = False,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="Clamped to \\[earliest, latest].")] = None,
    shift_by: Annotated[
        int | None, typer.Option("--shift-by", help="Add to the committed offset (may be negative).")
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            help="YYYY-MM-DDTHH:mm:SS.sss\\[+HH:MM]; without a zone, this machine's local time (as Kafka's tool).",
        ),
    ] = None,
    by_duration: Annotated[
        str | None, typer.Option("--by-duration", help="ISO-8601 duration back from now, e.g. PT1H.")
    ] = None,
    from_file: Annotated[
        Path | None, typer.Option("--from-file", help="CSV of [group,]topic,partition,offset.")
    ] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Commit the plan (default: dry run).")] = False,
    export: Annotated[bool, typer.Option("--export", help="Print the plan as CSV (for --from-file).")] = False,
    bootstrap: Bootstrap = SIDECAR,
    command_config: CommandConfig = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    fmt: FormatOption = None,
    as_json: AsJson = False,
) -> None:
    """Reset committed offsets like kafka-consumer-groups.sh --reset-offsets (a dry run unless --execute)."""
    o = Output.of(fmt, as_json)
    strategies = {
        "--to-earliest": to_earliest,
        "--to-latest": to_latest,
        "--to-current": to_current,
        "--to-offset": to_offset is not None,
        "--shift-by": shift_by is not None,
        "--to-datetime": to_datetime is not None,
        "--by-duration": by_duration is not None,
        "--from-file": from_file is not None,
    }
    chosen = [name for name, on in strategies.items() if on]
    if len(chosen) != 1:
        usage(f"give exactly one strategy: {', '.join(strategies)}")
    strategy = chosen[0]
    if bool(group) == all_groups:
        usage("give --group GROUP (repeatable) or --all-groups")
    if from_file is None and bool(topic) == all_topics:
        usage("give --topic TOPIC[:P,...] (repeatable) or --all-topics")
    when_ms = datetime_ms(to_datetime, o.note) if to_datetime is not None else None
    if by_duration is not None:
        # A duration longer than the time since the epoch reaches back before every record.
        when_ms = max(int(time.time() * 1000) - parse_duration_ms(by_duration), 0)

    topics = dict(parse_topic_spec(t) for t in topic or [])

    c, admin = _connect(bootstrap, command_config, timeout)
    groups = [g["group"] for g in list_group_ids(c, admin)] if all_groups else list(dict.fromkeys(group or []))
    for g in groups:
        why = activity(c, admin, g)
        if why:
            fail(f"cannot reset offsets of group {g!r}: it {why}; stop its consumers first")
    from_plan = read_plan_file(from_file, groups) if from_file is not None else {}
    with OffsetReader(c) as reader:
        current = {g: committed(c, g, reader) for g in groups}

    # Which partitions of which groups.
    wanted: dict[str, dict[str, list[int] | None]] = {}
    for g in groups:
        if from_file is not None:
            scope: dict[str, list[int] | None] = {}
            for (pg, t, p), _ in sorted(from_plan.items()):
                if pg == g:
                    scope.setdefault(t, [])
                    scope[t].append(p)  # type: ignore[union-attr]
        elif all_topics:
            scope = {}
            for t, p in sorted(current[g]):
                scope.setdefault(t, [])
                scope[t].append(p)  # type: ignore[union-attr]
        else:
            scope = dict(topics)
        wanted[g] = scope
    for pg, _, _ in from_plan:
        if pg not in groups:
            fail(f"--from-file names group {pg!r}, which is not in --group")
    counts = topic_partitions(admin, c, sorted({t for scope in wanted.values() for t in scope}))
    per_group = {g: check_partitions(counts, scope) for g, scope in wanted.items()}
    all_tps = sorted({(tp.topic, tp.partition) for tps in per_group.values() for tp in tps})
    marks = watermarks(c, [TopicPartition(t, p) for t, p in all_tps])
    by_time = (
        offsets_for_time(c, [TopicPartition(t, p) for t, p in all_tps], when_ms, marks) if when_ms is not None else {}
    )

    rows: list[dict[str, Any]] = []
    clamped: list[str] = []
    for g in groups:
        for tp in per_group[g]:
            key = (tp.topic, tp.partition)
            earliest, latest = marks[key]
            now = current[g][key].offset if key in current[g] else None
            if strategy == "--to-earliest":
                target = earliest
            elif strategy == "--to-latest":
                target = latest
            elif strategy == "--to-current":
                target = now if now is not None else latest
            elif strategy == "--to-offset":
                assert to_offset is not None
                target = to_offset
            elif strategy == "--shift-by":
                assert shift_by is not None
                if now is None:
                    fail(f"cannot shift group {g!r} {tp.topic}-{tp.partition}: it has no committed offset")
                target = now + shift_by
            elif strategy in ("--to-datetime", "--by-duration"):
                target = by_time[key]
            else:
                target = from_plan[(g, tp.topic, tp.partition)]
            new = min(max(target, earliest), latest)
            if new != target:
                # As kafka-consumer-groups.sh says it ("New offset (x) is higher than latest offset").
                side = "above the latest" if target > latest else "below the earliest"
                clamped.append(f"{g} {tp.topic}-{tp.partition}: {target} is {side} offset, {new} is used")
            rows.append(
                {
                    "group": g,
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "current-offset": now,
                    "new-offset": new,
                }
            )

    if execute:
        for g in groups:
            mine = [TopicPartition(r["topic"], r["partition"], r["new-offset"]) for r in rows if r["group"] == g]
            if not mine:
                continue
            result = c.wait_for(
                partial(alter_offsets, admin, g, mine, c.timeout), f"cannot reset offsets of group {g!r}"
            )
            failed = [tp for tp in result.topic_partitions if tp.error is not None]
            if failed:
                fail(
                    f"cannot reset offsets of group {g!r}: "
                    + "; ".join(f"{tp.topic}-{tp.partition}: {describe_error(tp.error)}" for tp in failed)
                )
    if export:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for r in rows:
            cells = [r["topic"], r["partition"], r["new-offset"]]
            writer.writerow(cells if len(groups) == 1 else [r["group"], *cells])
        print(buf.getvalue(), end="")
    else:
        at: dict[str, Any] = {"to_datetime": instant(when_ms)} if when_ms is not None else {}
        o.result(["group", "topic", "partition", "current-offset", "new-offset"], rows, executed=execute, **at)
        if when_ms is not None:
            o.note(f"offsets of the first records at or after {instant(when_ms)}")
        for line in clamped:
            o.note(line)
        if not execute:
            o.note("dry run: nothing changed (add --execute to commit these offsets)")
