"""Issue #24 with Apache Kafka's Java client 3.9.1 (``java/EosDriver.java``, compiled here against
the jar tests/clients/fetch.py provides): sendOffsetsToTransaction with consumer.groupMetadata()
through ``groupcoord serve``, classic and consumer group protocols."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.fetch import kafka_clients_jar
from tests.integration.serve_process import ServeProcess
from tests.topics import ensure_topic
from tests.txn.eos import check_outcome, fill_input

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

HERE = Path(__file__).resolve().parent
SLF4J = Path("/usr/share/java")
PARTITIONS = 2
RECORDS = 24


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install openjdk-17-jdk-headless)")
    api = SLF4J / "slf4j-api.jar"
    binding = next((SLF4J / j for j in ("slf4j-simple.jar", "slf4j-nop.jar") if (SLF4J / j).exists()), None)
    jar = kafka_clients_jar()
    classes = tmp_path_factory.mktemp("eos-driver")
    compiled = subprocess.run(
        ["javac", "-d", str(classes), "-cp", f"{jar}:{api}", str(HERE / "java" / "EosDriver.java")],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr
    return ":".join(str(p) for p in (classes, jar, api, binding) if p is not None)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_producer_exactly_once(
    bootstrap: str, sidecar: ServeProcess, unique_name: str, classpath: str, protocol: str, tmp_path: Path
) -> None:
    source, sink, group = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-g"
    ensure_topic(bootstrap, source, PARTITIONS)
    ensure_topic(bootstrap, sink, 1)
    inputs = fill_input(bootstrap, source, PARTITIONS, RECORDS)
    argv = ["java", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath]
    argv += ["EosDriver", sidecar.bootstrap, source, sink, group, f"{unique_name}-tx", str(RECORDS), protocol]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=200)
    (tmp_path / "driver.log").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert "ABORTED" in run.stdout and "FENCED" in run.stdout, run.stdout
    check_outcome(bootstrap, sidecar.bootstrap, inputs, source, sink, group)
