"""Log lines: JSON objects, librdkafka's lines routed through the same logger and rate-limited."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator import logs
from groupcoord.local_broker import LocalBroker, free_port
from tests.ha.sidecars import serve_alone
from tests.processes import popen

GROUPCOORD = str(Path(sys.executable).with_name("groupcoord"))


@pytest.fixture
def stderr_lines() -> Iterator[io.StringIO]:
    """The root logger configured as serve does, writing into a buffer; restored afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()
    real = sys.stderr
    sys.stderr = buffer
    try:
        logs.configure("WARNING")
    finally:
        sys.stderr = real
    logs.rate_limit.reset()
    yield buffer
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    logs.rate_limit.reset()
    for name in logs.CLIENT_DRIVEN_LOGGERS:  # other tests count these lines with caplog
        logging.getLogger(name).removeFilter(logs.client_rate_limit)


def parsed(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_every_line_is_one_json_object_with_extra_fields(stderr_lines: io.StringIO) -> None:
    log = logging.getLogger("groupcoord.coordinator.test")
    log.warning('shard %d: "quoted" \\ and\nnewline', 3, extra={"shard": 3, "owner": "h:1"})
    log.info("below the default level")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    lines = stderr_lines.getvalue().splitlines()
    assert len(lines) == 2  # the traceback is inside the second object, not on lines of its own
    first, second = (json.loads(line) for line in lines)
    assert first["msg"] == 'shard 3: "quoted" \\ and\nnewline'
    assert first["level"] == "WARNING" and first["logger"] == "groupcoord.coordinator.test"
    assert first["shard"] == 3 and first["owner"] == "h:1"
    assert str(first["ts"]).endswith("Z") and "T" in str(first["ts"])
    assert second["level"] == "ERROR" and "ValueError: boom" in str(second["exc_info"])


def test_text_format_for_humans() -> None:
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    buffer, real = io.StringIO(), sys.stderr
    sys.stderr = buffer
    try:
        logs.configure("INFO", "text")
        logging.getLogger("x").info("hello %s", "there")
    finally:
        sys.stderr = real
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert buffer.getvalue().rstrip().endswith("INFO x: hello there")


def test_rate_limit_lets_a_burst_through_then_counts_the_rest() -> None:
    now = [0.0]
    limit = RateLimitLogger(burst=3, interval=10.0, clock=lambda: now[0])
    for i in range(50):
        limit.log.error("%s [%s] %s", "FAIL", "rdkafka#producer-1", f"connect failed {i}")
        limit.log.error("%s [%s] %s", "ERROR", "rdkafka#producer-1", f"all brokers down {i}")
    assert [r.msg for r in limit.records if getattr(r, "fac", "") == "FAIL"] == [
        "connect failed 0",
        "connect failed 1",
        "connect failed 2",
    ]
    assert Counter(getattr(r, "fac", "") for r in limit.records) == {"FAIL": 3, "ERROR": 3}
    now[0] = 10.0  # the next interval: one line, carrying the count of those held back
    limit.log.error("%s [%s] %s", "FAIL", "rdkafka#producer-1", "connect failed again")
    last = limit.records[-1]
    assert last.getMessage().startswith("connect failed again (suppressed 47 similar lines")
    assert last.__dict__["suppressed"] == 47 and last.__dict__["client"] == "rdkafka#producer-1"


class RateLimitLogger:
    def __init__(self, burst: int, interval: float, clock: object) -> None:
        self.records: list[logging.LogRecord] = []
        self.log = logging.getLogger(f"librdkafka-test-{id(self)}")
        self.log.propagate = False
        self.log.addFilter(logs.RateLimit(burst, interval, clock))  # type: ignore[arg-type]
        handler = logging.Handler()
        handler.emit = self.records.append  # type: ignore[method-assign, assignment]  # [assignment]: checked against the unbound method
        self.log.addHandler(handler)


def test_librdkafka_lines_reach_the_logger_only_when_polled_and_are_bounded(
    stderr_lines: io.StringIO, dead_address: str
) -> None:
    dead = dead_address
    conf = logs.client_config({"bootstrap.servers": dead, "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 20})
    admin = AdminClient(conf)
    producer = Producer(conf)
    # Many reconnect attempts: each one is a FAIL line in librdkafka.
    with pytest.raises(Exception, match="Failed to get metadata"):
        admin.list_topics(timeout=2)
    assert stderr_lines.getvalue() == ""  # queued inside the client until it is polled
    logs.drain(admin)
    for _ in range(20):
        producer.poll(0.05)
    lines = parsed(stderr_lines)
    rdkafka = [line for line in lines if line["logger"] == "librdkafka"]
    assert rdkafka, "librdkafka's lines must come through the logger"
    assert all("Connection refused" in str(line["msg"]) for line in rdkafka if line["fac"] == "FAIL")
    per_fac = Counter(str(line["fac"]) for line in rdkafka)
    assert max(per_fac.values()) <= logs.rate_limit.burst, per_fac
    assert all(str(line["client"]).startswith("rdkafka#producer-") for line in rdkafka)


def test_serve_against_a_dead_cluster_writes_only_json_lines_and_a_bounded_number() -> None:
    # serve retries the cluster for cluster_wait_ms, then gives up with its one-line error; it exits by itself.
    env = {**os.environ, "GROUPCOORD_LOG_LEVEL": "WARNING", "GROUPCOORD_CLUSTER_WAIT_MS": "4000"}
    env.pop("GROUPCOORD_LOG_FORMAT", None)
    result = subprocess.run(
        [GROUPCOORD, "serve", "-b", f"127.0.0.1:{free_port()}", "--listen", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    # Every line, the reason serve stops included, is one JSON object (nothing wrapped, no raw
    # librdkafka "%3|..." line).
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert all(isinstance(r, dict) and {"ts", "level", "logger", "msg"} <= r.keys() for r in records)
    last = records[-1]
    assert last["level"] == "ERROR" and last["logger"] == "groupcoord.coordinator.server", last
    # In the CLI's words: the address, what failed and why, not a KafkaError repr.
    assert re.fullmatch(
        r"cannot reach 127\.0\.0\.1:\d+ or create the log topic __group_coordinator_log: "
        r"(no connection|timed out|no broker reachable) \(Connection refused\)",
        str(last["msg"]),
    ), last
    # Quiet by default: nothing below WARNING (the experimental-property notice included).
    assert all(r["level"] in ("WARNING", "ERROR", "CRITICAL") for r in records), records
    assert not [r for r in records if r.get("fac") == "CONFWARN"], records
    rdkafka = [r for r in records if r["logger"] == "librdkafka"]
    assert rdkafka  # the connection failures are reported, as JSON
    per_fac = Counter(str(r["fac"]) for r in rdkafka)
    # At most `burst` per kind in one interval (60 s, longer than the run), whatever the number
    # of clients and reconnect attempts.
    assert all(n <= logs.rate_limit.burst for n in per_fac.values()), per_fac


def test_cli_commands_keep_librdkafka_off_the_terminal() -> None:
    result = subprocess.run(
        [GROUPCOORD, "groups", "list", "-b", f"127.0.0.1:{free_port()}", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot reach"), result.stderr
    assert "rdkafka" not in result.stderr and result.stdout == ""


def test_a_property_set_on_purpose_is_no_warning(stderr_lines: io.StringIO) -> None:
    # The log writer sets enable.gapless.guarantee, which librdkafka calls experimental (CONFWARN):
    # at the default level that must not be a warning on every start.
    conf = {
        "bootstrap.servers": f"127.0.0.1:{free_port()}",
        "enable.idempotence": True,
        "enable.gapless.guarantee": True,
    }
    Producer(logs.client_config(conf)).poll(0.2)
    assert not [r for r in parsed(stderr_lines) if r.get("fac") == "CONFWARN"], stderr_lines.getvalue()
    logging.getLogger().setLevel(logging.INFO)
    Producer(logs.client_config(conf)).poll(0.2)
    (notice,) = [r for r in parsed(stderr_lines) if r.get("fac") == "CONFWARN"]
    assert notice["level"] == "INFO" and "enable.gapless.guarantee" in str(notice["msg"])


# The pipeline's clients (groupcoord/pipeline/cluster.py, groupcoord/pipeline/importer.py) against a dead cluster, in a
# process of their own since librdkafka writes raw "%3|..." lines to the process's stderr itself.
_PIPELINE_CLIENTS = """
import sys
from groupcoord.coordinator import logs
from groupcoord.pipeline import cluster, importer

getattr(logs, sys.argv[2])(*sys.argv[3:])
logs.rate_limit.burst = 1000  # every client's lines get through: which clients they come from is checked
config = {"bootstrap.servers": sys.argv[1], "reconnect.backoff.ms": "10", "reconnect.backoff.max.ms": "20"}
for call in (lambda: cluster.topic_partitions(config, "t", timeout=2), lambda: cluster.topic_names(config, timeout=2)):
    try:
        call()
    except cluster.ClusterError:
        pass
admin = importer._admin(config)
try:
    admin.list_topics(timeout=2)
except Exception:
    pass
logs.drain(admin)
"""


@pytest.mark.parametrize("configure", [["configure", "WARNING"], ["configure_cli"]])
def test_pipeline_clients_log_through_the_logger(configure: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PIPELINE_CLIENTS, f"127.0.0.1:{free_port()}", *configure],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "%3|" not in result.stderr and "%4|" not in result.stderr, result.stderr[:2000]
    records = [json.loads(line) for line in result.stderr.splitlines()]
    if configure[0] == "configure_cli":
        assert records == []  # the CLI keeps librdkafka's lines off the terminal
        return
    clients = {str(r["client"]).split("#")[1].split("-")[0] for r in records if r["logger"] == "librdkafka"}
    assert clients == {"consumer", "producer"}, records  # an AdminClient is a producer handle


def test_cli_pipeline_import_keeps_librdkafka_off_the_terminal(tmp_path: Path, dead_address: str) -> None:
    offsets = tmp_path / "offsets.csv"
    offsets.write_text("g,t,0,5\n")
    dead = dead_address
    result = subprocess.run(
        [GROUPCOORD, "pipeline", "import", "--from", str(offsets), "--sidecar", dead, "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {dead} did not answer within 3s"), result.stderr[:2000]
    assert result.stderr.count("\n") == 1 and "rdkafka" not in result.stderr, result.stderr[:2000]


@pytest.mark.integration
def test_serve_whose_broker_stops_stays_json_quiet_and_bounded(tmp_path: Path) -> None:
    """A broker of serve's own stops under it: what an operator's log collector then receives."""
    broker = LocalBroker(port=free_port()).start()
    stderr_path = tmp_path / "serve.err"
    settings = {
        "GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": "6000",
        "GROUPCOORD_PLACEMENT__HEARTBEAT_INTERVAL_MS": "500",
    }
    # Returned once placement has given this process its shards: a broker killed while the
    # placement consumer still joins never times its session out, and "lost" never comes.
    try:
        serve, _ = serve_alone(broker.bootstrap, stderr_path, settings, 60)
    except BaseException:
        broker.stop()
        raise
    try:
        assert stderr_path.read_text() == ""  # quiet by default: a healthy start says nothing
        broker.stop()
        deadline = time.monotonic() + 60
        while "lost" not in stderr_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        broker.stop()
        serve.terminate()
        serve.wait(30)
    records = [json.loads(line) for line in stderr_path.read_text().splitlines()]  # every line is JSON
    assert all(r["level"] in ("WARNING", "ERROR") for r in records), records
    (lost,) = [r for r in records if r["logger"] == "groupcoord.coordinator.server"]
    assert str(lost["msg"]).startswith("shards [0, 1] lost") and lost["level"] == "WARNING", lost
    per_fac = Counter(str(r["fac"]) for r in records if r["logger"] == "librdkafka")
    assert per_fac and max(per_fac.values()) <= logs.rate_limit.burst, per_fac  # within one interval


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_what_serve_says_is_one_line_each_in_either_format(fmt: str) -> None:
    from rich.console import Console

    from groupcoord.coordinator.server import Say

    root = logging.getLogger()
    saved = list(root.handlers), root.level
    logged, real = io.StringIO(), sys.stderr
    sys.stderr = logged
    try:
        logs.configure("WARNING", fmt)
    finally:
        sys.stderr = real
    console_out = io.StringIO()
    say = Say(Console(file=console_out, width=40), text=fmt == "text")
    long = "cannot reach the cluster: " + "x" * 100  # wider than the console: never wrapped
    try:
        say.info("owns shards [0, 1]")
        say.warning("shards [0, 1] lost")
        say.error(long)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    if fmt == "json":
        assert console_out.getvalue() == ""
        records = parsed(logged)
        assert [(r["level"], r["msg"]) for r in records] == [("WARNING", "shards [0, 1] lost"), ("ERROR", long)]
    else:
        # Below the level: a console line; at or above it: the log's own line, not both.
        assert console_out.getvalue().splitlines() == ["owns shards [0, 1]", f"error: {long}"]
        (warning,) = logged.getvalue().splitlines()
        assert warning.endswith("WARNING groupcoord.coordinator.server: shards [0, 1] lost")


def test_first_run_on_a_terminal_reads_as_plain_lines() -> None:
    """``serve`` with no log_format and no cluster, its stderr a terminal: plain lines (the embedded
    broker's note among them, no JSON WARNING) and the shard moves the README promises."""
    import os
    import pty
    import select
    import signal

    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORD_")}
    env["GROUPCOORD_EMBEDDED_BROKER_LISTEN"] = f"127.0.0.1:{free_port()}"
    env["GROUPCOORD_METRICS_LISTEN"] = "off"
    serve = popen(
        [GROUPCOORD, "serve", "--listen", f"127.0.0.1:{free_port()}", "--partitions", "2"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    seen = b""
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()  # "listening on ...", once the shards are loaded
        assert line.startswith(b"listening on"), line
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0
        while select.select([controller], [], [], 2)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other side is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)
        os.close(controller)
    lines = [ln.strip() for ln in seen.decode().splitlines() if ln.strip()]
    assert lines and not any(ln.startswith("{") for ln in lines), lines
    assert lines[0].startswith("embedded broker (in memory, for development): bootstrap.servers=127.0.0.1:"), lines
    assert any(ln.startswith("owns shards [0, 1]") for ln in lines), lines


def test_lines_a_client_causes_per_connection_are_rate_limited(stderr_lines: io.StringIO) -> None:
    """One attacker's loop of malformed connections (or accepts failing with EMFILE) must not write
    a line each: a burst of each kind, then the rest counted."""
    logs.client_rate_limit.reset()
    logs.limit_client_driven_lines()  # as serve does (cli/main.py configure_logging)
    connection = logging.getLogger("groupcoord.coordinator.gateway.connection")
    for port in range(1000):
        connection.warning(
            "closing client connection peer=%s:%s reason=%s", "127.0.0.1", port, "negative frame length -1"
        )
    for _ in range(1000):
        logging.getLogger("asyncio").error("socket.accept() out of system resource")
    # Requests relayed to a group's owner that died and is not replaced yet (share consumers retry at once).
    for name in (
        "groupcoord.coordinator.service.share_data",
        "groupcoord.coordinator.service.handover_relay",
        "groupcoord.coordinator.gateway.group_configs",
    ):
        for _ in range(1000):
            logging.getLogger(name).warning(
                "relaying %s to %s:%s failed: %r", "ShareFetchRequest", "127.0.0.1", 9, ConnectionRefusedError()
            )
    lines = parsed(stderr_lines)
    closing = [line for line in lines if str(line["msg"]).startswith("closing client connection")]
    accept = [line for line in lines if "out of system resource" in str(line["msg"])]
    relaying = [line for line in lines if str(line["msg"]).startswith("relaying ShareFetchRequest")]
    assert 0 < len(closing) <= logs.client_rate_limit.burst
    assert 0 < len(accept) <= logs.client_rate_limit.burst
    assert 0 < len(relaying) <= logs.client_rate_limit.burst
