"""``groupcoord`` commands run inside the test process, for tests about what a command does rather
than about the process (its exit on a signal, librdkafka's own lines on the real stderr).

A command run as a child process costs a python start and the CLI's imports (0.6-1 s, more on a
loaded machine) before it does anything; a test of offsets resets or share-group listings runs
tens of them. Here the same ``app`` runs through the same ``_App.__call__`` (refusals become one
"error: ..." line on stderr and an exit code exactly as in the process), in click's
``CliRunner`` isolation (stdout and stderr captured apart, not terminals, ``env`` set), and its
``os._exit`` is turned into a return. What the command set up in the logging module is restored.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any
from unittest import mock

from typer.testing import CliRunner

from groupcoord.cli import main
from groupcoord.coordinator.logs import CLIENT_DRIVEN_LOGGERS, rdkafka_logger


class _Left(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _leave(code: int) -> None:
    sys.stdout.flush()  # the runner's wrappers, read once the command is done
    sys.stderr.flush()
    raise _Left(code)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``groupcoord *args`` in this process: its exit code, stdout and stderr."""
    root, rdkafka = logging.getLogger(), rdkafka_logger()
    saved = (list(root.handlers), root.level, rdkafka.propagate)
    # serve rate-limits the lines clients cause on these loggers: left on, a later test's
    # caplog would miss a line its earlier neighbours had logged twenty times in ten seconds.
    limited = {name: list(logging.getLogger(name).filters) for name in CLIENT_DRIVEN_LOGGERS}
    code = 0
    try:
        with CliRunner().isolation(env=env) as (out, err, _), mock.patch.object(main, "_leave", _leave):
            try:
                main.app(args=list(args), prog_name="groupcoord")
            except _Left as left:
                code = left.code
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    finally:
        root.handlers[:], root.level, rdkafka.propagate = saved[0], saved[1], saved[2]
        for name, filters in limited.items():
            logging.getLogger(name).filters[:] = filters
    return subprocess.CompletedProcess(["groupcoord", *args], code, stdout, stderr)


def as_json(*args: str) -> dict[str, Any]:
    """``groupcoord *args --json``, which must succeed: its JSON document."""
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert isinstance(document, dict)
    return document
