"""Share requests relayed between sidecar processes whose listeners use TLS and require SASL: the
relay reaches the owner over TLS, logged in as the sidecar (its ``client`` credentials, checked by
the cluster behind the SASL front, a test fixture before the real local broker), and the owner
answers for the caller it names, down to the close of the caller's connection. Only a connection authenticated as the sidecar may name a caller:
a client writing a relay client id keeps its own principal."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from groupcoord.coordinator.gateway.broker_connection import BrokerConnection
from groupcoord.coordinator.gateway.relay import RelayedFor
from groupcoord.coordinator.messages import find_coordinator as wire_fc
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.security.cluster_login import ClusterLogin
from groupcoord.local_broker import free_port
from tests.security.conftest import SaslCluster, Sidecar, acl_settings, sidecar_config
from tests.security.test_authentication import create_topic
from tests.security.test_identity import make_pki
from tests.security.test_txn_bridge_sasl import GCADMIN
from tests.share_data.test_share_consumer import _topic_id, acquired_ranges, fetch_partition_zero

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]

GROUP_DENIED = 30


@pytest.fixture(scope="module")
def secured_pair(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Sidecar]]:
    """Two processes sharing one log, TLS listeners (certificate for 127.0.0.1 from a test CA),
    SASL required, the conftest's ACLs (gcadmin a super user)."""
    directory = tmp_path_factory.mktemp("secured-pair")
    pki = make_pki(directory)
    _, authorization = acl_settings(directory)
    extra = (
        authorization
        + f"""
[gateway.listener_tls]
certfile = "{pki["server"]}"
keyfile = "{pki["server-key"]}"
cafile = "{pki["ca"]}"
"""
    )
    log_topic = f"__gc_log_{uuid.uuid4().hex[:8]}"
    made: list[Sidecar] = []
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GROUPCOORD_SHARE_GROUPS_ENABLED", "true")
        try:
            for i in range(2):
                port = free_port()
                config = sidecar_config(
                    directory / f"sidecar{i}.toml",
                    sasl_cluster.bootstrap,
                    port,
                    {"authentication": "required"},
                    extra,
                    log_topic=log_topic,
                )
                made.append(Sidecar(config, port, directory / f"sidecar{i}.log", log_topic))
            yield made
        finally:
            for s in made:
                s.stop()


def _tls(pki_dir: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pki_dir / "ca.pem"))


async def _login(port: int, tls: ssl.SSLContext, user: str, client_id: str = "t") -> BrokerConnection:
    login = ClusterLogin("PLAIN", user, f"{user}-secret")
    return await BrokerConnection.open(("127.0.0.1", port), tls, 15, login, client_id)


async def _group_owned_by(owner: Sidecar, tls: ssl.SSLContext, prefix: str) -> str:
    """A group name whose coordinator is ``owner`` (once both processes own shards)."""
    conn = await _login(owner.port, tls, "gcadmin")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = [f"{prefix}-{i}" for i in range(20)]
            found = await conn.call(
                wire_fc.FindCoordinatorRequest(key_type=0, coordinator_keys=names),
                wire_fc.FindCoordinatorResponse,
                4,
                15,
            )
            for c in found.coordinators:
                if c.error_code == 0 and c.port == owner.port:
                    return c.key
            await asyncio.sleep(0.5)
        raise AssertionError(f"no group of {owner.port} found")
    finally:
        conn.close()


def _heartbeat(group: str, member: str, topic: str) -> sgh.ShareGroupHeartbeatRequest:
    return sgh.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
    )


def test_share_fetch_is_relayed_over_tls_and_sasl_for_the_caller(
    sasl_cluster: SaslCluster, secured_pair: list[Sidecar]
) -> None:
    """alice's member A fetches at the process that does not own the group (relayed); when A's
    connection closes, the owner is told (as alice, whose READ on the group it checks) and A's
    records go to member B at once, long before the 30 s lock."""
    first, second = secured_pair
    pki_dir = first.log.parent
    tag = uuid.uuid4().hex[:8]
    topic = f"shared-{tag}"
    create_topic(sasl_cluster, topic, 1)
    topic_id = _topic_id(sasl_cluster.bootstrap, topic, GCADMIN)

    async def run() -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
        tls = _tls(pki_dir)
        group = await _group_owned_by(second, tls, f"alice-{tag}")
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        at_owner = await _login(second.port, tls, "alice")
        at_other = await _login(first.port, tls, "alice")
        try:
            for member in (a, b):
                joined = await at_owner.call(_heartbeat(group, member, topic), sgh.ShareGroupHeartbeatResponse, 1, 15)
                assert joined.error_code == 0, joined

            async def fetch(conn: BrokerConnection, member: str, epoch: int) -> list[tuple[int, int, int]]:
                request = fetch_partition_zero(group, member, epoch, topic_id)
                return acquired_ranges(await conn.call(request, sf.ShareFetchResponse, 1, 15))

            async def until_got(conn: BrokerConnection, member: str, epoch: int) -> list[tuple[int, int, int]]:
                got: list[tuple[int, int, int]] = []
                deadline = time.monotonic() + 10
                while not got and time.monotonic() < deadline:
                    got = await fetch(conn, member, epoch)
                    epoch += 1
                return got

            assert await fetch(at_other, a, 0) == []
            producer = Producer({"bootstrap.servers": sasl_cluster.bootstrap, **GCADMIN})
            for i in range(3):
                producer.produce(topic, f"v{i}".encode())
            assert producer.flush(15) == 0
            by_a = await until_got(at_other, a, 1)
            assert await fetch(at_owner, b, 0) == []  # A holds them
            at_other.close()
            return by_a, await until_got(at_owner, b, 1)
        finally:
            at_owner.close()
            at_other.close()

    # Answered at a process that does not own the group: relayed (else NOT_LEADER_OR_FOLLOWER).
    by_a, by_b = asyncio.run(run())
    assert by_a == [(0, 2, 1)]
    assert by_b == [(0, 2, 2)]


def test_only_the_sidecar_may_name_the_caller_of_a_relayed_request(
    sasl_cluster: SaslCluster, secured_pair: list[Sidecar]
) -> None:
    """alice may use groups ``alice-*`` only, bob ``bob-*``; gcadmin (the sidecar) is a super user."""
    _, second = secured_pair
    tls = _tls(second.log.parent)
    tag = uuid.uuid4().hex[:8]
    topic = f"shared-{tag}"
    bobs = asyncio.run(_group_owned_by(second, tls, f"bob-{tag}"))  # else NOT_COORDINATOR when allowed

    async def heartbeat(user: str, claimed: str | None) -> int:
        client_id = RelayedFor(uuid.uuid4().hex, claimed, "127.0.0.1").client_id() if claimed else "t"
        conn = await _login(second.port, tls, user, client_id)
        try:
            answer = await conn.call(_heartbeat(bobs, str(uuid.uuid4()), topic), sgh.ShareGroupHeartbeatResponse, 1, 15)
            return answer.error_code
        finally:
            conn.close()

    async def run() -> None:
        # alice writing a relay client id that names gcadmin or bob is still alice.
        assert await heartbeat("alice", "gcadmin") == GROUP_DENIED
        assert await heartbeat("alice", "bob") == GROUP_DENIED
        # The sidecar's own login naming alice gets alice's rights, not its own; naming bob, bob's.
        assert await heartbeat("gcadmin", "alice") == GROUP_DENIED
        assert await heartbeat("gcadmin", "bob") == 0

    asyncio.run(run())
