"""Fixtures: the local broker behind a SASL front (test fixture), and ``groupcoord serve`` in front of that."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.local_broker import free_port
from tests.integration.serve_process import PLACEMENT_DEFAULTS
from tests.processes import popen
from tests.security.sasl_front import SaslFront, fronted_broker

USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "gcadmin": "gcadmin-secret"}


class SaslCluster:
    def __init__(self, front: SaslFront, bootstrap: str) -> None:
        self.front = front
        self.bootstrap = bootstrap


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    """A Tansu broker that advertises the SASL front's address, so every client path goes through it."""
    with fronted_broker(tmp_path_factory.mktemp("sasl-broker") / "broker.log", dict(USERS)) as (front, bootstrap):
        yield SaslCluster(front, bootstrap)


class Sidecar:
    """``groupcoord serve`` as a child process, configured by a TOML file."""

    def __init__(self, config: Path, port: int, log: Path, log_topic: str = "") -> None:
        self.port = port
        self.log_topic = log_topic
        self.log = log
        self.acl_file: Path | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.proc = popen(
            [sys.executable, "-m", "groupcoord.cli.main", "serve", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=open(log, "ab"),  # noqa: SIM115
            text=True,
            env={**PLACEMENT_DEFAULTS, **os.environ},  # a start waits for placement's JoinGroup answer
        )
        assert self.proc.stdout is not None
        stdout = self.proc.stdout

        def pump() -> None:
            for line in stdout:
                self.lines.put(line.rstrip("\n"))

        threading.Thread(target=pump, daemon=True).start()
        while True:
            try:
                line = self.lines.get(timeout=90)
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"sidecar did not start; see {log}") from None
            if line.startswith("listening on "):
                return

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# The sidecar's own ``client`` settings (its librdkafka clients and its own connections).
SIDECAR_CLIENT = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-256",
    "sasl.username": "gcadmin",
    "sasl.password": "gcadmin-secret",
}


def sidecar_config(
    path: Path,
    bootstrap: str,
    port: int,
    gateway: dict[str, object],
    extra: str = "",
    log_topic: str = "",
    client: dict[str, str] | None = None,
) -> Path:
    gateway_lines = "\n".join(f"{k} = {_toml(v)}" for k, v in gateway.items())
    client_lines = "\n".join(f'"{k}" = {_toml(v)}' for k, v in (client or SIDECAR_CLIENT).items())
    path.write_text(
        f"""bootstrap_servers = "{bootstrap}"
listen = "127.0.0.1:{port}"
log_topic = "{log_topic or "__gc_log_" + uuid.uuid4().hex[:8]}"
log_partitions = 2
log_level = "INFO"

[client]
{client_lines}

[gateway]
{gateway_lines}
{extra}
"""
    )
    return path


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f'"{value}"'


# Tenants: alice owns groups "alice-*", bob owns "bob-*"; both may read topics "shared-*" except
# that bob is denied "shared-secret"; only alice reads "alice-only-*"; gcadmin is a super user.
ACLS = """
[[acls]]
principal = "User:alice"
resource_type = "GROUP"
resource_name = "alice-"
pattern_type = "PREFIXED"
operation = "ALL"

[[acls]]
principal = "User:bob"
resource_type = "GROUP"
resource_name = "bob-"
pattern_type = "PREFIXED"
operation = "ALL"

[[acls]]
principal = "User:*"
resource_type = "TOPIC"
resource_name = "shared-"
pattern_type = "PREFIXED"
operation = "READ"

[[acls]]
principal = "User:bob"
resource_type = "TOPIC"
resource_name = "shared-secret"
operation = "READ"
permission = "DENY"

[[acls]]
principal = "User:carol"
resource_type = "GROUP"
resource_name = "carol-"
pattern_type = "PREFIXED"
operation = "ALL"

[[acls]]
principal = "User:alice"
resource_type = "TOPIC"
resource_name = "alice-only-"
pattern_type = "PREFIXED"
operation = "READ"
"""


def acl_settings(directory: Path) -> tuple[Path, str]:
    """The ACLS above in a file of ``directory``, and the settings that load it (gcadmin a super user)."""
    acl_file = directory / "acls.toml"
    acl_file.write_text(ACLS)
    return (
        acl_file,
        f"""
[gateway.authorization]
acls = "file"
acl_file = "{acl_file}"
super_users = ["User:gcadmin"]
refresh_interval_ms = 1000
""",
    )


def start_acl_sidecar(cluster: SaslCluster, directory: Path, client: dict[str, str] | None = None) -> Sidecar:
    """A sidecar that requires SASL, with the ACLS above from a file (gcadmin a super user);
    ``client`` its own ``client`` settings (SCRAM as gcadmin unless given)."""
    port = free_port()
    acl_file, authorization = acl_settings(directory)
    log_topic = f"__gc_log_{uuid.uuid4().hex[:8]}"
    config = sidecar_config(
        directory / "sidecar.toml",
        cluster.bootstrap,
        port,
        {"authentication": "required"},
        authorization,
        log_topic=log_topic,
        client=client,
    )
    running = Sidecar(config, port, directory / "sidecar.log", log_topic)
    running.acl_file = acl_file
    return running


@pytest.fixture(scope="module")
def sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    running = start_acl_sidecar(sasl_cluster, tmp_path_factory.mktemp("sidecar"))
    try:
        yield running
    finally:
        running.stop()
