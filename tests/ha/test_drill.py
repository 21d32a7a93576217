"""``groupcoord drill`` end to end: real serve processes, real clients, real kills."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def run_drill(bootstrap: str, *args: str, timeout: float) -> tuple[int, dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "drill", "-b", bootstrap, "--json", *args],
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
    kills = report["kills"]
    assert isinstance(kills, list) and len(kills) >= faults
    # Every fault was followed by every group being served again.
    assert all(k["recovered_s"] is not None for k in kills), kills
    assert isinstance(report["commits_acknowledged"], int) and report["commits_acknowledged"] > 0


def test_short_kill_drill(bootstrap: str) -> None:
    code, report = run_drill(
        bootstrap, "--processes", "3", "--duration", "30", "--kill-every", "12", "--seed", "1", timeout=240
    )
    check(code, report, faults=2)


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
