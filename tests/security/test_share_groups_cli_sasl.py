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
from tests.client_records import value_of
from tests.security.conftest import SaslCluster, Sidecar, start_acl_sidecar
from tests.security.test_authentication import SASL_CLIENT, authenticated, create_topic
from tests.security.test_txn_bridge_sasl import GCADMIN, bridge_logs_in_as

pytestmark = pytest.mark.integration

FETCH, LIST_OFFSETS, METADATA = 1, 2, 3
# The sidecar's own login as an OAUTHBEARER token, librdkafka's unsecured JWT, whose subject the
# SASL front takes for the principal; its sessions last 3 s (KIP-368), so the share data path's
# connections log in again as they are reused.
OAUTH_PRINCIPAL = "gcoauth"
OAUTH_CLIENT = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "OAUTHBEARER",
    "enable.sasl.oauthbearer.unsecure.jwt": "true",
    "sasl.oauthbearer.config": f"principal={OAUTH_PRINCIPAL} scope=kafka extension_traceId=groupcoord",
}


@pytest.fixture(scope="module")
def share_sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    with pytest.MonkeyPatch.context() as env:  # a top-level setting; the environment is simplest
        env.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
        running = start_acl_sidecar(sasl_cluster, tmp_path_factory.mktemp("share-sidecar"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def oauth_sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    sasl_cluster.front.lifetimes[OAUTH_PRINCIPAL] = 3000
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
        running = start_acl_sidecar(sasl_cluster, tmp_path_factory.mktemp("oauth-sidecar"), OAUTH_CLIENT)
    try:
        yield running
    finally:
        running.stop()
        del sasl_cluster.front.lifetimes[OAUTH_PRINCIPAL]


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

    # OAUTHBEARER with librdkafka's unsecured JWT: the token's subject, as the cluster verified it.
    oauth = tmp_path / "oauth.properties"
    oauth.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
        "enable.sasl.oauthbearer.unsecure.jwt=true\nsasl.oauthbearer.config=principal=alice scope=kafka\n"
    )
    listed = cli("share-groups", "list", "-b", b, "--command-config", str(oauth), "--json")
    assert listed.returncode == 0, listed.stderr
    assert {"group": group, "state": "stable"} in json.loads(listed.stdout)["items"]

    mallory = tmp_path / "refused.properties"
    mallory.write_text(oauth.read_text().replace("principal=alice", "principal=mallory"))
    sasl_cluster.front.refused_subjects.add("mallory")
    try:
        wrongs = [
            properties(tmp_path / f"wrong-{m}.properties", m, "alice", "not-it") for m in ("PLAIN", "SCRAM-SHA-256")
        ]
        for wrong in [*wrongs, mallory]:
            failed = cli("share-groups", "list", "-b", b, "--command-config", str(wrong))
            assert failed.returncode == 1, failed.stdout
            (line,) = failed.stderr.strip().splitlines()
            assert line.startswith(f"error: cannot connect to {b}: authentication failed"), line
    finally:
        sasl_cluster.front.refused_subjects.discard("mallory")


def _share_records(sidecar: Sidecar, cluster: SaslCluster, want: int, timeout: float = 20) -> list[bytes]:
    """What alice's share consumer of a new topic gets of ``want`` records produced after it joined."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"shared-{tag}", f"alice-{tag}"
    create_topic(cluster, topic, 1)
    login = {**SASL_CLIENT, "sasl.username": "alice", "sasl.password": "alice-secret"}
    consumer = ShareConsumer({"bootstrap.servers": sidecar.bootstrap, "group.id": group, **login})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(4):
            consumer.poll(0.5)  # the share-partition is made (at the end: latest) by these fetches
        producer = Producer({"bootstrap.servers": cluster.bootstrap, **GCADMIN})
        for i in range(want):
            producer.produce(topic, f"v{i}".encode())
        assert producer.flush(15) == 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(got) < want:
            got += [value_of(m) for m in consumer.poll(0.5) if m.error() is None]
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
def test_share_consumer_gets_records_the_sidecar_read_as_its_own_principal(
    sasl_cluster: SaslCluster, mechanism: str, request: pytest.FixtureRequest
) -> None:
    """On a cluster that requires SASL the share data path's own reads (Metadata, ListOffsets,
    Fetch) log in with the sidecar's ``client`` settings, as the transaction bridge does: SCRAM's
    user, or the subject of the OAUTHBEARER token librdkafka's settings describe."""
    sidecar = request.getfixturevalue("share_sidecar" if mechanism.startswith("SCRAM") else "oauth_sidecar")
    principal = "gcadmin" if mechanism.startswith("SCRAM") else OAUTH_PRINCIPAL
    before = len(sasl_cluster.front.requests)
    assert sorted(_share_records(sidecar, sasl_cluster, 5)) == [f"v{i}".encode() for i in range(5)]
    requests = sasl_cluster.front.requests[before:]
    reads = {(who, key) for who, client, key, _ in requests if client == SHARE_CLIENT_ID}
    assert {(principal, METADATA), (principal, LIST_OFFSETS), (principal, FETCH)} <= reads
    assert not {who for who, _ in reads} - {principal}
    # The sidecar's librdkafka clients logged in with the same settings.
    assert any(who == principal for who, client, _, _ in requests if client != SHARE_CLIENT_ID)


def test_a_refused_oauthbearer_token_is_a_readable_warning(sasl_cluster: SaslCluster, oauth_sidecar: Sidecar) -> None:
    """The cluster refuses the token on the share data path's connections (its librdkafka clients
    keep theirs): once the open session runs out (3 s), the new login fails, the share consumer
    gets nothing, and serve's log says why."""
    front = sasl_cluster.front
    front.refused_clients.add(SHARE_CLIENT_ID)
    try:
        assert _share_records(oauth_sidecar, sasl_cluster, 1, timeout=2) == []
    finally:
        front.refused_clients.discard(SHARE_CLIENT_ID)
    logged = oauth_sidecar.log.read_text()
    assert "SASL OAUTHBEARER login: error 58" in logged and "invalid_token" in logged, logged[-2000:]


def test_the_transaction_bridge_logs_in_with_the_oauthbearer_token(
    sasl_cluster: SaslCluster, oauth_sidecar: Sidecar
) -> None:
    bridge_logs_in_as(sasl_cluster, oauth_sidecar, OAUTH_PRINCIPAL)
    assert "TxnOffsetCommit will be answered" not in oauth_sidecar.log.read_text()
