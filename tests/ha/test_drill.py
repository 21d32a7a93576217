"""``groupcoord drill`` end to end: real serve processes, real clients, real kills."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.processes import alive, popen, run

pytestmark = pytest.mark.integration


def run_drill(bootstrap: str, *args: str, timeout: float) -> tuple[int, dict[str, object]]:
    done = run(
        [sys.executable, "-m", "groupcoord.cli.main", "drill", "-b", bootstrap, "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.stdout, done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def check(code: int, report: dict[str, object], faults: int) -> None:
    assert report["acknowledged_commits_lost"] == 0, report["lost"]
    assert report["double_deliveries"] == 0
    assert report["offsets_backwards"] == 0, report["backwards"]
    assert code == 0
    assert report["errors"] == []
    kills = report["items"]  # one per fault
    assert isinstance(kills, list) and len(kills) >= faults
    # Every fault was followed by every group being served again.
    assert all(k["recovered_s"] is not None for k in kills), kills
    assert isinstance(report["commits_acknowledged"], int) and report["commits_acknowledged"] > 0


def _free_block(count: int) -> int:
    """The first of ``count`` consecutive ports free now, below the kernel's ephemeral range (which
    begins at 32768 here, so that no connection of another test takes one meanwhile)."""
    for base in range(20000, 32000, count):
        held: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise AssertionError("no free block of ports")


def test_short_kill_drill(bootstrap: str) -> None:
    # Two faults, then the load stays on until both were recovered from (the drill waits for that).
    # The serve processes on ports of the operator's choice (an operator probe could not keep the
    # drill inside its range of ports).
    base = _free_block(3)
    code, report = run_drill(
        bootstrap,
        *("--processes", "3", "--faults", "2", "--kill-every", "5", "--seed", "1", "--base-port", str(base)),
        timeout=240,
    )
    check(code, report, faults=2)
    kills = report["items"]
    assert isinstance(kills, list)
    assert {k["process"] for k in kills} <= {f"127.0.0.1:{base + i}" for i in range(3)}, kills


@pytest.mark.slow
def test_long_drill_with_kills_and_pauses(bootstrap: str) -> None:
    for signal_name in ("KILL", "STOP"):
        code, report = run_drill(
            bootstrap,
            "--processes",
            "3",
            "--duration",
            "120",
            "--kill-every",
            "15",
            "--signal",
            signal_name,
            timeout=600,
        )
        check(code, report, faults=4)


def _descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (from /proc: children of children too)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()  # noqa: SIM115
            except OSError:
                continue
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its last ')'.
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z":
                parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_sigterm_stops_every_process_of_the_drill_and_reports_so_far() -> None:
    """SIGTERM to a drill (its own embedded broker, two serve processes) stops them all and prints
    the report so far, marked interrupted, with the exit code of a SIGTERM."""
    drill = popen(
        [sys.executable, "-m", "groupcoord.cli.main", "drill", "--processes", "2", "--duration", "300", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert drill.stderr is not None
        deadline = time.monotonic() + 120
        line = ""
        while "workload running" not in line and time.monotonic() < deadline:
            line = drill.stderr.readline()
            assert line or drill.poll() is None, "the drill ended before its workload ran"
        assert "workload running" in line
        children = _descendants(drill.pid)
        assert len(children) >= 3, children  # the broker and two serve processes at least
        drill.send_signal(signal.SIGTERM)
        stdout, stderr = drill.communicate(timeout=90)
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.wait(10)
    assert drill.returncode == 128 + signal.SIGTERM, stderr
    report = json.loads(stdout)
    assert report["interrupted"] is True and report["acknowledged_commits_lost"] is None
    assert report["processes"] == 2
    assert "drill interrupted by SIGTERM" in stderr
    left = [pid for pid in children if alive(pid)]
    assert not left, left


def test_the_breakdown_of_a_recovery_is_read_from_the_serve_lines() -> None:
    """Each step's first line after the fault, for the shards of the drill's groups the victim owned."""
    from groupcoord.cli.drill import _LOADED, breakdown

    lines = {
        "victim": [(99.0, "owns shards [0, 3] (assigned [0, 3])"), (100.5, "placement evicted node 1 (member m)")],
        "survivor": [
            (98.0, "owns shards [1, 2] (assigned [1, 2])"),
            (101.0, "placement rebalance: revoked [1, 2]"),
            (104.0, "owns shards [0, 1, 2, 3] (assigned [0, 1, 2, 3])"),
            (104.2, "shard 3 loaded in 0.1s (5 records, epoch 2)"),
            (
                104.5,
                "shard 0 loaded in 0.400s (9 records, epoch 2; first record 0.010s, end of log 0.011s,"
                " taken over 0.012s, decoded 0.013s, epoch written 0.390s, read back 0.400s)",
            ),
        ],
    }
    got = breakdown({"wall": 100.0, "process": "victim"}, lines, {0, 5})
    assert got == {
        "group_shards_lost": [0],
        "detected_s": 0.5,
        "rebalance_seen_s": 1.0,
        "assigned_s": 4.0,
        "loaded_s": 4.5,
    }
    # A fault of a process that held none of the groups' shards costs nothing to recover.
    assert breakdown({"wall": 100.0, "process": "survivor"}, lines, {0}) == {"group_shards_lost": []}
    # The load's time is read from both forms of the line, with or without its steps.
    assert [m.group(1) for _, line in lines["survivor"] if (m := _LOADED.search(line))] == ["0.1", "0.400"]


def test_the_longest_gap_counts_a_move_after_the_first_acknowledgement() -> None:
    """A group acknowledged at once after the fault but interrupted later (its stopping owner served
    on a while) shows in the gap, not in the recovery."""
    from groupcoord.cli.drill import longest_gap

    groups = {"a": "consumer", "b": "classic"}
    acks = [(100.1, "a"), (100.2, "b"), (100.3, "a"), (102.8, "a"), (100.4, "b"), (101.0, "b"), (99.0, "a")]
    assert longest_gap(100.0, 103.0, groups, acks) == 2.5  # a: 100.3 -> 102.8
    assert longest_gap(100.0, 104.5, groups, acks) == 3.5  # b: nothing after 101.0 until the end


def test_a_fault_never_recovered_from_counts_in_the_percentiles() -> None:
    """Left out of them, a placement group that stalled for minutes read as a good p99."""
    from groupcoord.cli.drill import Stats, _result

    now = time.monotonic()
    stats = Stats()
    stats.acks = [(now - 58.0, "a")]  # the first fault's recovery; nothing after the second one
    kills = [
        {"process": "p", "signal": "KILL", "at": now - 60.0, "wall": time.time() - 60.0},
        {"process": "p", "signal": "KILL", "at": now - 45.0, "wall": time.time() - 45.0},
    ]
    report = _result(1, 60.0, 15.0, "KILL", 6000, stats, kills, {"a": "consumer"}, [], [], now - 60.0)
    assert report["not_recovered"] == 1
    assert [k["recovered_s"] for k in report["kills"]] == [2.0, None]
    assert report["recovery_s_max"] >= 45.0


def test_the_report_prints_plain_columns_in_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    """Piped (or sent to a file), the report is MEASURE / VALUE columns without box characters, and
    the median breakdown reads like each fault's line, not as a Python dict."""
    from groupcoord.cli.drill import Stats, _result, print_report

    now = time.monotonic()
    stats = Stats()
    stats.acks = [(now - 58.0, "a")]
    kills = [{"process": "p", "signal": "KILL", "at": now - 60.0, "wall": time.time() - 60.0}]
    print_report(_result(1, 60.0, 15.0, "KILL", 6000, stats, kills, {"a": "consumer"}, [], [], now - 60.0))
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].split() == ["MEASURE", "VALUE"]
    assert not set(text) & set("┃│┏━┡└─"), text
    assert "{" not in text and "'" not in text, text
    assert any(line.split()[0] == "faults" and line.split()[1] == "1" for line in lines[1:])
