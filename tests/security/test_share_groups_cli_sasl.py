"""Share groups through a sidecar that requires SASL, with ACLs: ``groupcoord share-groups``
logs in with the ``--command-config`` properties (PLAIN, SCRAM-SHA-256/512) and sees what
the principal may describe; a wrong password is one line, never a traceback. The share data
path reads the cluster as the sidecar's own principal."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer, ShareConsumer

from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.service.share_fetcher import CLIENT_ID as SHARE_CLIENT_ID
from tests.cli.test_share_groups_cli import cli
from tests.security.conftest import SaslCluster, Sidecar, start_acl_sidecar
from tests.security.test_authentication import SASL_CLIENT, authenticated, create_topic
from tests.security.test_txn_bridge_sasl import GCADMIN

pytestmark = pytest.mark.integration

FETCH, LIST_OFFSETS, METADATA = 1, 2, 3


@pytest.fixture(scope="module")
def share_sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    with pytest.MonkeyPatch.context() as env:  # a top-level setting; the environment is simplest
        env.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
        running = start_acl_sidecar(sasl_cluster, tmp_path_factory.mktemp("share-sidecar"))
    try:
        yield running
    finally:
        running.stop()


def properties(path: Path, mechanism: str, user: str, password: str | None = None) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.username={user}\n"
        f"sasl.password={password or user + '-secret'}\n"
    )
    return path


def test_share_groups_cli_logs_in_and_sees_what_it_may_describe(
    sasl_cluster: SaslCluster, share_sidecar: Sidecar, tmp_path: Path
) -> None:
    topic, group = f"shared-{uuid.uuid4().hex[:8]}", f"alice-{uuid.uuid4().hex[:8]}"
    create_topic(sasl_cluster, topic, 2)

    async def join() -> None:
        client = await authenticated(share_sidecar, "alice")
        request = sgh.ShareGroupHeartbeatRequest(
            group_id=group, member_id=str(uuid.uuid4()), member_epoch=0, subscribed_topic_names=[topic]
        )
        answer = await client.call(76, 1, request)
        await client.close()
        assert isinstance(answer, sgh.ShareGroupHeartbeatResponse) and answer.error_code == 0, answer

    asyncio.run(join())
    b = share_sidecar.bootstrap
    for mechanism, user in (("PLAIN", "alice"), ("SCRAM-SHA-256", "alice"), ("SCRAM-SHA-512", "gcadmin")):
        config = properties(tmp_path / f"{mechanism}-{user}.properties", mechanism, user)
        listed = cli("share-groups", "list", "-b", b, "--command-config", str(config), "--json")
        assert listed.returncode == 0, listed.stderr
        assert {"group": group, "state": "stable"} in json.loads(listed.stdout)["items"], (mechanism, user)
        described = cli("share-groups", "describe", group, "--members", "-b", b, "--command-config", str(config))
        assert described.returncode == 0 and group in described.stdout, described.stderr

    # bob may not describe alice's groups: left out of the list, refused when named.
    bob = properties(tmp_path / "bob.properties", "PLAIN", "bob")
    listed = cli("share-groups", "list", "-b", b, "--command-config", str(bob), "--json")
    assert listed.returncode == 0 and group not in listed.stdout
    refused = cli("share-groups", "describe", group, "-b", b, "--command-config", str(bob))
    assert refused.returncode == 1 and f"group '{group}': not authorized for this group" in refused.stderr

    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        wrong = properties(tmp_path / f"wrong-{mechanism}.properties", mechanism, "alice", "not-it")
        failed = cli("share-groups", "list", "-b", b, "--command-config", str(wrong))
        assert failed.returncode == 1, failed.stdout
        (line,) = failed.stderr.strip().splitlines()
        assert line.startswith(f"error: cannot connect to {b}: authentication failed"), line


def test_share_consumer_gets_records_the_sidecar_read_as_its_own_principal(
    sasl_cluster: SaslCluster, share_sidecar: Sidecar
) -> None:
    """On a cluster that requires SASL the share data path's own reads (Metadata, ListOffsets,
    Fetch) log in with the sidecar's ``client`` credentials, as the transaction bridge does."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"shared-{tag}", f"alice-{tag}"
    create_topic(sasl_cluster, topic, 1)
    login = {**SASL_CLIENT, "sasl.username": "alice", "sasl.password": "alice-secret"}
    consumer = ShareConsumer({"bootstrap.servers": share_sidecar.bootstrap, "group.id": group, **login})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(4):
            consumer.poll(0.5)  # the share-partition is made (at the end: latest) by these fetches
        producer = Producer({"bootstrap.servers": sasl_cluster.bootstrap, **GCADMIN})
        for i in range(5):
            producer.produce(topic, f"v{i}".encode())
        assert producer.flush(15) == 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(got) < 5:
            got += [m.value() for m in consumer.poll(0.5) if m.error() is None]
    finally:
        consumer.close()
    assert sorted(got) == [f"v{i}".encode() for i in range(5)]
    reads = {(who, key) for who, client, key, _ in sasl_cluster.front.requests if client == SHARE_CLIENT_ID}
    assert {("gcadmin", METADATA), ("gcadmin", LIST_OFFSETS), ("gcadmin", FETCH)} <= reads
    assert not {who for who, _ in reads} - {"gcadmin"}
