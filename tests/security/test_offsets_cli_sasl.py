"""The CLI's committed-offset reads (OffsetFetch over its own connections, ``groupcoord.cli.offsets_wire``)
log in with the ``--command-config`` properties, as the rest of the command does through
librdkafka: against a sidecar that requires SASL, with ACLs, and against the SASL cluster itself
(what ``migrate`` reads on the cluster's side)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.inprocess_cli import cli
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import create_topic
from tests.security.test_share_groups_cli_sasl import properties

pytestmark = pytest.mark.integration


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_offsets_are_read_with_the_command_config_login(
    sasl_cluster: SaslCluster, sidecar: Sidecar, tmp_path: Path
) -> None:
    topic, group = f"shared-ofs-{uuid.uuid4().hex[:8]}", f"alice-ofs-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic, 1)
    for address, offset in ((sidecar.bootstrap, 3), (sasl_cluster.bootstrap, 4)):
        commit(address, group, topic, offset)
        for mechanism in ("PLAIN", "SCRAM-SHA-256"):
            config = properties(tmp_path / f"{mechanism}.properties", mechanism, "alice")
            shown = cli("offsets", "show", group, "-b", address, "--command-config", str(config), "--json")
            assert shown.returncode == 0, (address, mechanism, shown.stderr)
            items = json.loads(shown.stdout)["items"]
            assert [(r["topic"], r["partition"], r["offset"]) for r in items] == [(topic, 0, offset)], address

    # bob may not read alice's group: one line, from the sidecar's ACLs.
    bob = properties(tmp_path / "bob.properties", "PLAIN", "bob")
    refused = cli(
        "offsets", "delete", "--group", group, "--topic", topic, "-b", sidecar.bootstrap, "--command-config", str(bob)
    )
    assert refused.returncode == 1, refused.stdout
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: ") and "not authorized for this group" in line, line
