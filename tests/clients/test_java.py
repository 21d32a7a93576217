"""Apache Kafka's own Java consumer (kafka-clients 3.9.1) through the gateway.

``java/GroupDriver.java`` is compiled here with ``javac`` against the jar ``fetch.py`` takes from
PyPI, and runs its consumers on the machine's Java 17 with Debian's slf4j. One scenario per group
protocol: KIP-848 (``group.protocol=consumer``, server-side assignor), classic eager (RangeAssignor)
and classic cooperative (CooperativeStickyAssignor); see ``driven.run_group_scenario``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.driven import PARTITIONS, Driver, run_group_scenario
from tests.clients.fetch import HERE, kafka_clients_jar
from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SLF4J = Path("/usr/share/java")

# Java maps ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID on a classic commit to CommitFailedException and
# REBALANCE_IN_PROGRESS to RebalanceInProgressException: the commit raced a new generation.
CLASSIC_RACES = ("CommitFailedException", "RebalanceInProgressException")

MODES = {
    # mode: (incremental, tolerated commit errors)
    "consumer": (True, ()),
    "eager": (False, CLASSIC_RACES),
    "cooperative": (True, CLASSIC_RACES),
}


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The compiled driver, kafka-clients and slf4j; anything missing fails the tests (never skips)."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install openjdk-17-jdk-headless)")
    api = SLF4J / "slf4j-api.jar"
    if not api.exists():
        pytest.fail(f"{api} is missing (Debian: apt-get install libslf4j-java)")
    # slf4j-simple at WARN puts the client's warnings in the driver log; nop if simple is absent.
    binding = next((SLF4J / j for j in ("slf4j-simple.jar", "slf4j-nop.jar") if (SLF4J / j).exists()), None)
    jar = kafka_clients_jar()
    classes = tmp_path_factory.mktemp("java-driver")
    compile_path = f"{jar}:{api}"
    compiled = subprocess.run(
        ["javac", "-d", str(classes), "-cp", compile_path, str(HERE / "java" / "GroupDriver.java")],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr
    return ":".join(str(p) for p in (classes, jar, api, binding) if p is not None)


@pytest.fixture
def java_driver(
    java_classpath: str, sidecar: ServeProcess, unique_name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Driver]:
    mode = request.param
    argv = [
        "java",
        "-Xshare:auto",
        "-XX:TieredStopAtLevel=1",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        java_classpath,
        "GroupDriver",
        mode,
        sidecar.bootstrap,
        f"{unique_name}-group",
        unique_name,
    ]
    driver = Driver(argv, tmp_path / f"java-{mode}.log")
    try:
        yield driver
    finally:
        driver.stop()


@pytest.mark.parametrize("java_driver", list(MODES), indirect=True)
def test_java_consumer_group(java_driver: Driver, bootstrap: str, sidecar: ServeProcess, unique_name: str) -> None:
    """All partitions covered, none owned twice (checked in the rebalance callbacks), a join and a leave
    absorbed (incrementally for KIP-848 and cooperative), commits succeed, committed offsets complete."""
    mode = java_driver.argv[-4]
    incremental, tolerated = MODES[mode]
    create_topic(bootstrap, unique_name, PARTITIONS)
    run_group_scenario(java_driver, sidecar.bootstrap, f"{unique_name}-group", unique_name, incremental, tolerated)
