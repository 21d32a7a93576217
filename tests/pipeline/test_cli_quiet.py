"""The pipeline jobs as a person runs them, in a process of their own: Spark's own output (stage
bars, log4j warnings, JVM notices) stays off the terminal, and SIGTERM ends a job with one line
and leaves no process behind (the JVM and its Python workers included)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from tests.ha.test_drill import _descendants
from tests.pipeline.conftest import WrittenLog
from tests.processes import alive, popen, run


def _audit(wl: WrittenLog) -> list[str]:
    return [
        sys.executable,
        "-m",
        "groupcoord.cli.main",
        "pipeline",
        "audit",
        "-b",
        wl.bootstrap,
        "--topic",
        wl.log_topic,
    ]


def test_a_job_prints_its_own_steps_only(written_log: WrittenLog) -> None:
    done = run(_audit(written_log), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: "), done.stdout
    # Piped: one "• step" line each; nothing of Spark's (its log file is named in the first).
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("• ") for line in lines), done.stderr
    assert "its own log: " in lines[0]


def test_sigterm_ends_a_job_with_one_line_and_no_process_left(written_log: WrittenLog) -> None:
    job = popen(_audit(written_log), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stderr is not None
        line = ""
        while not line.startswith("• auditing"):
            line = job.stderr.readline()
            assert line, "the job ended before it ran"
        children = _descendants(job.pid)
        assert children  # the JVM, at least
        job.send_signal(signal.SIGTERM)
        _, rest = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait(10)
    assert job.returncode == 128 + signal.SIGTERM, rest
    assert rest.splitlines() == ["error: interrupted by SIGTERM: the job stopped"], rest
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in children if alive(pid)]
