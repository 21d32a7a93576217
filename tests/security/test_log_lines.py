"""Log lines are JSON objects, whatever a client put in the message."""

from __future__ import annotations

import json
import logging
import sys

from groupcoord.coordinator.logs import json_formatter


def test_log_lines_are_json_even_with_hostile_text() -> None:
    hostile = 'group "\\u202e\n{"level":"ERROR"}\x00\'quoted\''
    record = logging.LogRecord(
        "groupcoord.coordinator.x", logging.WARNING, __file__, 1, "closing: %s", (hostile,), None
    )
    line = json_formatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["msg"] == f"closing: {hostile}" and parsed["level"] == "WARNING"


def test_exceptions_stay_inside_the_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    parsed = json.loads(json_formatter().format(record))
    assert "ValueError: boom" in parsed["exc_info"]
