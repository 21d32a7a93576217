"""The CLI's own parsing: durations, datetimes, properties files, reset plans and --topic specs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.cli.common import CliError, read_properties
from groupcoord.cli.common import parse_topic_spec as topic_spec
from groupcoord.cli.reset import (
    datetime_ms,
    instant,
    parse_datetime,
    parse_datetime_ms,
    parse_duration_ms,
    read_plan_file,
    zone_note,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("PT1H", 3_600_000), ("P1DT2H", 93_600_000), ("PT1M30S", 90_000), ("pt0.5s", 500), ("P2D", 172_800_000)],
)
def test_iso_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1h", "PT1X", "-PT1H"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(CliError, match="ISO-8601 duration"):
        parse_duration_ms(text)


def test_datetimes_without_a_zone_are_local_time_and_say_so(berlin: None) -> None:
    # Kafka's tool reads a zone-less --to-datetime in the JVM's default (local) zone.
    assert parse_datetime_ms("2023-11-14T23:13:20") == 1_700_000_000_000
    when, zoned = parse_datetime("2023-11-14T23:13:20")
    assert not zoned
    assert zone_note("2023-11-14T23:13:20", when) == (
        "--to-datetime 2023-11-14T23:13:20 has no zone: read as local time CET (UTC+01:00), as"
        " kafka-consumer-groups.sh does; that is 2023-11-14T22:13:20.000Z"
    )
    assert instant(1_700_000_000_250) == "2023-11-14T22:13:20.250Z"


def test_datetimes_honour_a_zone(berlin: None) -> None:
    assert parse_datetime("2023-11-14T22:13:20.250Z")[1]
    assert parse_datetime_ms("2023-11-14T22:13:20.250Z") == 1_700_000_000_250
    assert parse_datetime_ms("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    with pytest.raises(CliError, match="--to-datetime"):
        parse_datetime_ms("yesterday")


def test_properties_files_like_kafkas_tools(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "# comment\n! also a comment\n\nsecurity.protocol=SASL_SSL\nsasl.jaas.config: x=y\nssl.ca.location = /ca.pem\n"
    )
    assert read_properties(props) == {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": "x=y",
        "ssl.ca.location": "/ca.pem",
    }
    props.write_text("just words\n")
    with pytest.raises(CliError, match="client.properties:1: expected key=value"):
        read_properties(props)
    with pytest.raises(CliError, match="cannot read --command-config"):
        read_properties(tmp_path / "missing")


def test_reset_plan_files_with_and_without_the_group_column(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,5\norders,1,7\n")
    assert read_plan_file(plan, ["g"]) == {("g", "orders", 0): 5, ("g", "orders", 1): 7}
    with pytest.raises(CliError, match="three columns need exactly one --group"):
        read_plan_file(plan, ["g", "h"])
    plan.write_text("g,orders,0,5\nh,orders,0,6\n")
    assert read_plan_file(plan, ["g", "h"]) == {("g", "orders", 0): 5, ("h", "orders", 0): 6}
    plan.write_text("orders,zero,5\n")
    with pytest.raises(CliError, match="plan.csv:1: expected"):
        read_plan_file(plan, ["g"])
    plan.write_text("orders,0,5\norders,1,6\norders,0,7\n")
    with pytest.raises(CliError, match=r"plan.csv:3: orders-0 of group 'g' is given again \(first on line 1\)"):
        read_plan_file(plan, ["g"])
    plan.write_text("\n\n")
    with pytest.raises(CliError, match="names no offsets"):
        read_plan_file(plan, ["g"])


def test_reset_plan_files_that_are_not_plain_utf8(tmp_path: Path) -> None:
    """A spreadsheet's byte-order mark is no part of the first topic; a binary file is one error
    line, not a traceback (both found by an operator probe)."""
    plan = tmp_path / "plan.csv"
    plan.write_bytes("orders,0,5\n".encode("utf-8-sig"))
    assert read_plan_file(plan, ["g"]) == {("g", "orders", 0): 5}
    plan.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(CliError, match="cannot read --from-file .*plan.csv as UTF-8 text"):
        read_plan_file(plan, ["g"])


def test_topic_specs() -> None:
    assert topic_spec("orders") == ("orders", None)
    assert topic_spec("orders:2,0,2") == ("orders", [0, 2])
    for bad in ("orders:x", "orders:-1", ":1", "orders:"):
        with pytest.raises(CliError):
            topic_spec(bad)


@pytest.mark.parametrize("command", [("offsets", "reset"), ("share-groups", "reset-offsets")])
def test_an_empty_datetime_is_refused_before_connecting(command: tuple[str, ...]) -> None:
    """``--to-datetime ""`` picks the datetime strategy, so it must be parsed (and refused) like any
    other text, not skipped as false and reached later as a missing instant."""
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord.cli.main", *command, "--group", "g", "--topic", "t", "--to-datetime", ""]
        + ["-b", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "--to-datetime '': expected YYYY-MM-DDTHH:mm:SS" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("structured", [False, True])
def test_the_zone_note_is_for_people_only(structured: bool) -> None:
    """A zone-less ``--to-datetime`` is explained to a person (on stderr when piped), and left out
    of JSON output: what a script reads is the result alone."""
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord.cli.main", "offsets", "reset", "--group", "g", "--topic", "t"]
        + ["--to-datetime", "2023-01-01T00:00:00", "-b", "127.0.0.1:1", "--timeout", "1"]
        + (["--json"] if structured else []),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0  # nothing listens there
    said = result.stdout + result.stderr
    assert ("has no zone: read as local time" in said) is not structured, said


@pytest.mark.parametrize(
    "args",
    [
        ["offsets", "reset", "--group", "g", "--all-topics"],
        ["offsets", "reset", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"],
        ["offsets", "reset", "--all-topics", "--to-earliest"],
        ["offsets", "reset", "--group", "g", "--to-earliest"],
        ["groups", "describe"],
        ["groups", "describe", "g", "--offsets", "--members"],
        ["log", "dump"],
        ["migrate", "import", "--cluster", "127.0.0.1:1"],
        ["share-groups", "reset-offsets", "--group", "g", "--all-topics"],
    ],
    ids=" ".join,
)
def test_options_that_do_not_go_together_are_a_bad_command_line(args: list[str]) -> None:
    """Exit code 2, as an unknown option or a bad value, not 1 (a refusal of the cluster or the
    sidecar): the docs promise it for every bad command line, and scripts tell the two apart. The
    address is dead, so the line is refused before anything connects (else it would say so)."""
    from tests.inprocess_cli import cli

    result = cli(*args, "-b", "127.0.0.1:1", "--timeout", "1")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: give ") or line.startswith("error: name one or more groups"), line


@pytest.mark.parametrize(
    "args",
    [
        ["groups", "list", "--type", "bogus"],
        ["groups", "list", "--state", "Bogus"],
        ["share-groups", "list", "--state", "Rebalancing"],
        ["offsets", "delete", "--group", "g", "--topic", "orders:"],
        ["offsets", "delete", "--group", "g", "--topic", "orders:a"],
        ["offsets", "reset", "--group", "g", "--topic", "orders:", "--to-earliest"],
        ["offsets", "reset", "--group", "g", "--topic", "orders:a", "--to-earliest"],
        ["share-groups", "reset-offsets", "--group", "g", "--topic", "orders:-1", "--to-earliest"],
        ["offsets", "reset", "--group", "g", "--all-topics", "--by-duration", "1h"],
        ["offsets", "reset", "--group", "g", "--all-topics", "--to-datetime", "yesterday"],
    ],
    ids=" ".join,
)
def test_a_bad_value_is_a_bad_command_line(args: list[str]) -> None:
    """Exit code 2 as the docs promise for every bad command line (these exited 1, as a refusal of
    the sidecar does), said in one line before anything connects: the address is dead, so a
    connection attempt would fail with another line."""
    from tests.inprocess_cli import cli

    result = cli(*args, "-b", "127.0.0.1:1", "--timeout", "1")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --") and ("expected" in line or "must be" in line), line


def test_instants_before_the_epoch_read_as_the_epoch(berlin: None) -> None:
    """Kafka's tool resets to the first record at or after the instant: the earliest for any
    instant before every record. 0001-01-01 local time (in UTC+1, year 0 in UTC) crashed the
    conversion to local time; 1960 reached ListOffsets as a negative timestamp, which timed out."""
    assert parse_datetime_ms("0001-01-01T00:00:00") == 0
    assert parse_datetime_ms("0001-01-01T00:00:00+05:00") == 0
    assert parse_datetime_ms("1960-01-01T00:00:00Z") == 0
    said: list[str] = []
    assert datetime_ms("0001-01-01T00:00:00", said.append) == 0
    assert said == [
        "--to-datetime 0001-01-01T00:00:00 has no zone: read as local time LMT (UTC+00:53:28), as"
        " kafka-consumer-groups.sh does; that is before 0001-01-01T00:00:00.000Z",
        "--to-datetime 0001-01-01T00:00:00 is before 1970-01-01T00:00:00.000Z, older than any record:"
        " read as 1970-01-01T00:00:00.000Z",
    ]
    assert parse_datetime_ms("1970-01-01T00:00:00.001Z") == 1
    assert parse_datetime_ms("9999-12-31T23:59:59.999Z") == 253_402_300_799_999


@pytest.mark.parametrize("command", [("offsets", "reset"), ("share-groups", "reset-offsets")])
@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-05:00", "9999-12-31T23:00:00"])
def test_a_datetime_past_what_an_instant_can_be_is_a_bad_command_line(
    command: tuple[str, ...], when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Year 10000 in UTC: one line and exit code 2, not a traceback (New York: the zone-less one
    is past it too)."""
    import time

    from tests.inprocess_cli import cli

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        result = cli(*command, "--group", "g", "--topic", "t", "--to-datetime", when, "--json", "-b", "127.0.0.1:1")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == f"error: --to-datetime {when!r}: out of range (after 9999-12-31T23:59:59.999Z in UTC)"


def test_version_names_the_commit_of_a_git_checkout() -> None:
    """Every commit of main says 0.1.0: an operator rolling an upgrade tells two apart by the
    commit, printed when the package runs from a git checkout (an editable install)."""
    from typer.testing import CliRunner

    import groupcoord
    from groupcoord.cli.main import app

    root = Path(__file__).resolve().parents[2]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    printed = CliRunner().invoke(app, ["--version"])
    assert printed.exit_code == 0
    if head.returncode == 0:
        assert printed.stdout == f"groupcoord {groupcoord.__version__} (commit {head.stdout.strip()})\n"
    else:  # not a checkout: the version alone
        assert "(commit" not in printed.stdout


def test_pipeline_import_names_the_line_of_a_negative_offset(tmp_path: Path) -> None:
    """A negative offset (or partition) in the CSV is refused in one line naming it, before
    anything connects; it ended in a traceback (confluent-kafka's ValueError) with --execute."""
    from tests.inprocess_cli import cli

    source = tmp_path / "offsets.csv"
    source.write_text("group,topic,partition,offset\ng,orders,0,5\ng,orders,1,-7\n")
    result = cli("pipeline", "import", "--from", str(source), "-s", "127.0.0.1:1", "--execute")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == f"error: {source}:3: partition and offset must not be negative, got 1,-7"
