"""The drill's text report says what its counts count; its serve processes start side by side."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest

from groupcoord.cli.drill import REPORTED, ServeChild, report_rows


def test_records_delivered_says_it_sums_groups_that_each_read_every_record() -> None:
    # 14,393 delivered against 7,203 produced read as double delivery in the operators' review:
    # two groups each consume every record, and the report did not say so.
    result: dict[str, Any] = {name: 0 for name in REPORTED}
    result |= {
        "records_produced": 7203,
        "records_delivered": 14393,
        "commits_by_group": {"drill-kip848": 10, "drill-classic": 9},
        "kills": [],
    }
    rows = {r["measure"]: r["value"] for r in report_rows(result)}
    assert rows["records_delivered"] == (
        "14393 (summed over 2 groups that each read every record: drill-classic, drill-kip848)"
    )
    assert rows["records_produced"] == "7203"


@pytest.mark.integration
def test_serve_children_take_no_metrics_address_from_the_environment(
    bootstrap: str, unique_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every child inherited GROUPCOORD_METRICS_LISTEN (or the default 127.0.0.1:9095 that anything
    may hold): the first to bind it won and the others exited (Address already in use), so the
    drill could not run. Here the address is held by another socket, and there are two children."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        monkeypatch.setenv("GROUPCOORD_METRICS_LISTEN", f"127.0.0.1:{held.getsockname()[1]}")
        children = [ServeChild(bootstrap, unique_name, 6000, tmp_path / f"serve{i}.log") for i in range(2)]
        try:
            for child in children:
                child.start()
            deadline = time.monotonic() + 60
            for child in children:
                assert child.proc is not None
                while not child.ready.wait(0.2):
                    assert child.proc.poll() is None, child.log.read_text()[-2000:]
                    assert time.monotonic() < deadline, "serve did not start"
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait_stopped()
