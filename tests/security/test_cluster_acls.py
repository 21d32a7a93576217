"""ACLs read from the cluster (DescribeAcls through the sidecar's admin client) and refreshed.

The SASL front (test fixture) plays a cluster with an authorizer: it answers DescribeAcls with the
ACLs the test sets, and records that the sidecar asked as its own principal.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from groupcoord.coordinator.messages.offset_commit import OffsetCommitResponse
from groupcoord.local_broker import free_port
from tests.security.conftest import SaslCluster, Sidecar, sidecar_config
from tests.security.test_authentication import authenticated, commit_request, create_topic

pytestmark = pytest.mark.integration

GROUP_DENIED = 30


@pytest.fixture(scope="module")
def cluster_acl_sidecar(sasl_cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    sasl_cluster.front.acls = [
        ("GROUP", "alice-", "PREFIXED", "User:alice", "*", "ALL", "ALLOW"),
        ("TOPIC", "shared-", "PREFIXED", "User:*", "*", "READ", "ALLOW"),
    ]
    directory = tmp_path_factory.mktemp("cluster-acls")
    port = free_port()
    config = sidecar_config(
        directory / "sidecar.toml",
        sasl_cluster.bootstrap,
        port,
        {"authentication": "required"},
        '\n[gateway.authorization]\nacls = "cluster"\nrefresh_interval_ms = 1000\n',
    )
    running = Sidecar(config, port, directory / "sidecar.log")
    try:
        yield running
    finally:
        running.stop()


def _commit_code(sidecar: Sidecar, user: str, group: str, topic: str) -> int:
    async def attempt() -> int:
        client = await authenticated(sidecar, user)
        answer = await client.call(8, 8, commit_request(group, topic, 3))
        await client.close()
        assert isinstance(answer, OffsetCommitResponse)
        return answer.topics[0].partitions[0].error_code

    return asyncio.run(asyncio.wait_for(attempt(), 30))


def test_cluster_acls_are_enforced_and_refreshed(sasl_cluster: SaslCluster, cluster_acl_sidecar: Sidecar) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, group = f"shared-{tag}", f"alice-{tag}"
    create_topic(sasl_cluster, topic)
    assert ("gcadmin", 29) in sasl_cluster.front.seen  # DescribeAcls, as the sidecar's own principal
    assert _commit_code(cluster_acl_sidecar, "alice", group, topic) == 0
    assert _commit_code(cluster_acl_sidecar, "bob", group, topic) == GROUP_DENIED
    # The cluster grants bob the group too; the sidecar picks it up on its next refresh.
    sasl_cluster.front.acls.append(("GROUP", group, "LITERAL", "User:bob", "*", "READ", "ALLOW"))
    deadline = time.monotonic() + 30
    while _commit_code(cluster_acl_sidecar, "bob", group, topic) != 0:
        assert time.monotonic() < deadline, "the new ACL was never picked up"
        time.sleep(0.5)
    # And a DENY added on the cluster wins over the ALLOW.
    sasl_cluster.front.acls.append(("GROUP", group, "LITERAL", "User:bob", "*", "READ", "DENY"))
    deadline = time.monotonic() + 30
    while _commit_code(cluster_acl_sidecar, "bob", group, topic) != GROUP_DENIED:
        assert time.monotonic() < deadline, "the DENY was never picked up"
        time.sleep(0.5)
