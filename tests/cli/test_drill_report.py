"""The drill's text report says what its counts count."""

from __future__ import annotations

from typing import Any

from groupcoord.cli.drill import REPORTED, report_rows


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
