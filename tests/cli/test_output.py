"""The CLI's output formats without a cluster: plain columns when piped, one JSON/YAML shape, Kafka's
state names in filters."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from groupcoord.cli.admin import STATES, kafka_state, parse_states
from groupcoord.cli.common import CliError
from groupcoord.cli.output import Format, Output, key, plain

ROWS = [
    {"group": "orders", "current-offset": 5, "#members": 2, "host": None},
    {"group": "payments-eu", "current-offset": 12345, "#members": 0, "host": "/10.0.0.1"},
]
COLUMNS = ["group", "current-offset", "#members", "host"]


def test_plain_columns_are_whitespace_aligned_with_no_box_characters() -> None:
    text = plain(COLUMNS, ROWS)
    assert text.splitlines() == [
        "GROUP        CURRENT-OFFSET  #MEMBERS  HOST",
        "orders       5               2         -",
        "payments-eu  12345           0         /10.0.0.1",
    ]
    # What awk sees: the same fields in every line.
    assert [line.split()[1] for line in text.splitlines()] == ["CURRENT-OFFSET", "5", "12345"]


def test_a_cell_is_one_field_line() -> None:
    assert plain(["a", "b"], [{"a": "two\nlines", "b": ""}]).splitlines() == ["A          B", "two lines  -"]


def test_a_boolean_cell_reads_as_kafkas_tools_print_it() -> None:
    # groups list's SIMPLE column printed Python's "False" (operators review #17).
    assert plain(
        ["group", "simple"], [{"group": "g", "simple": False}, {"group": "h", "simple": True}]
    ).splitlines() == [
        "GROUP  SIMPLE",
        "g      false",
        "h      true",
    ]


@pytest.mark.parametrize("fmt", [Format.json, Format.yaml])
def test_one_structured_shape(fmt: Format, capsys: pytest.CaptureFixture[str]) -> None:
    Output(fmt).result(COLUMNS, ROWS, errors=[{"group": "nope", "error": "the group does not exist"}], executed=False)
    printed = capsys.readouterr().out
    document = json.loads(printed) if fmt is Format.json else yaml.safe_load(printed)
    assert document == {
        "items": [
            {"group": "orders", "current_offset": 5, "num_members": 2, "host": None},
            {"group": "payments-eu", "current_offset": 12345, "num_members": 0, "host": "/10.0.0.1"},
        ],
        "errors": [{"group": "nope", "error": "the group does not exist"}],
        "executed": False,
    }


def test_an_error_prints_no_table(capsys: pytest.CaptureFixture[str]) -> None:
    Output(Format.text).result(COLUMNS, [], errors=[{"group": "nope", "error": "the group does not exist"}])
    assert capsys.readouterr().out == ""


def test_wide_adds_its_columns(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"group": "g", "assignment": "t-0,t-1"}]
    Output(Format.text).result(["group"], rows, wide_columns=["assignment"])
    Output(Format.wide).result(["group"], rows, wide_columns=["assignment"])
    assert capsys.readouterr().out.splitlines() == ["GROUP", "g", "GROUP  ASSIGNMENT", "g      t-0,t-1"]


def test_json_flag_is_format_json() -> None:
    assert Output.of(None, True).format is Format.json
    assert Output.of(None, False).format is Format.text
    with pytest.raises(Exception, match="disagree"):
        Output.of(Format.yaml, True)
    assert key("#partitions") == "num_partitions" and key("log-end-offset") == "log_end_offset"


@pytest.mark.parametrize(
    ("given", "state"),
    [
        ("PreparingRebalance", "preparing_rebalance"),
        ("preparingrebalance", "preparing_rebalance"),
        ("preparing_rebalancing", "preparing_rebalance"),  # confluent-kafka's name, accepted before
        ("CompletingRebalance", "completing_rebalance"),
        ("STABLE", "stable"),
        ("Dead", "dead"),
        ("empty", "empty"),
        ("Assigning", "assigning"),
        ("Reconciling", "reconciling"),
    ],
)
def test_kafka_state_names_in_filters(given: str, state: str) -> None:
    assert parse_states([given]) == {state}
    assert state in STATES


def test_an_unknown_state_names_kafkas() -> None:
    with pytest.raises(CliError, match="PreparingRebalance, CompletingRebalance, Assigning, Reconciling"):
        parse_states(["rebalancing"])


def test_help_shows_bracketed_text() -> None:
    """Rich markup must not swallow ``[earliest, latest]`` in ``offsets reset --help``."""
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord.cli.main", "offsets", "reset", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert "[earliest, latest]" in result.stdout and "[+HH:MM]" in result.stdout, result.stdout


def test_kip848_states_from_consumer_group_describe_are_shown_as_the_others() -> None:
    # confluent-kafka has no enum value for these: they come from ConsumerGroupDescribe's group_state.
    assert [kafka_state(s) for s in ("Assigning", "Reconciling", "PreparingRebalance", "Empty")] == [
        "assigning",
        "reconciling",
        "preparing_rebalance",
        "empty",
    ]
