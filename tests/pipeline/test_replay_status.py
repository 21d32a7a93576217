"""The pipeline's replay statuses around an operator's LogSkip decision (``groupcoord log skip``),
without Spark: the record it names is ``skipped`` (not ``unreadable``), the decision itself is a
runtime record, and a Spark worker's failure reaches the command line as the exception it raised."""

from __future__ import annotations

import pandas as pd

from groupcoord.cli.pipeline import _one_line
from groupcoord.pipeline.replay import STATUS_COLUMNS, statuses
from groupcoord.records import RecordType

SHARD_EPOCH, LOG_SKIP, COMMIT = int(RecordType.SHARD_EPOCH), int(RecordType.LOG_SKIP), int(RecordType.OFFSET_COMMIT)


def _row(offset: int, type_id: int | None, epoch: int = 1, **fields: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(STATUS_COLUMNS)
    row.update(partition=1, offset=offset, record_type_id=type_id, shard_epoch=epoch, tombstone=False, **fields)
    return row


def _statuses(rows: list[dict[str, object]]) -> dict[int, str]:
    out = statuses(pd.DataFrame(rows, columns=STATUS_COLUMNS))
    return dict(zip(out["offset"], out["status"], strict=True))


def test_an_unreadable_record_named_by_a_log_skip_is_skipped() -> None:
    rows = [
        _row(0, SHARD_EPOCH, se_epoch=1),
        _row(1, COMMIT),
        _row(2, 7, error="bad key body for record type 7"),
        _row(3, COMMIT),
        _row(4, LOG_SKIP, epoch=0, skip_offset=2),
    ]
    assert _statuses(rows) == {0: "runtime", 1: "applied", 2: "skipped", 3: "applied", 4: "runtime"}


def test_without_a_decision_it_stays_unreadable_and_a_decision_changes_nothing_else() -> None:
    rows = [_row(0, SHARD_EPOCH, se_epoch=1), _row(1, 7, error="garbage"), _row(2, COMMIT)]
    assert _statuses(rows) == {0: "runtime", 1: "unreadable", 2: "applied"}
    # A decision naming a record that decodes (written with --force) leaves its status alone.
    rows = [_row(0, SHARD_EPOCH, se_epoch=1), _row(1, COMMIT), _row(2, LOG_SKIP, epoch=0, skip_offset=1)]
    assert _statuses(rows)[1] == "applied"


def test_a_spark_worker_failure_is_one_line_naming_what_was_raised() -> None:
    text = (
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "replay.py", line 88, in statuses\n'
        "    replayer.feed(offset)\n"
        "AttributeError: 'bool' object has no attribute 'reason'\n"
    )
    assert (
        _one_line(Exception(text)) == "a Spark worker failed: AttributeError: 'bool' object has no attribute 'reason'"
    )
    assert _one_line(Exception("one line\nand more")) == "one line"
