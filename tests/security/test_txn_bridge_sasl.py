"""TxnOffsetCommit on a cluster that requires SASL: the transaction bridge's own connections
(AddPartitionsToTxn, the transactional Produce, the Fetch that reads the markers) log in with the
sidecar's ``client`` credentials, as its librdkafka clients do; the SASL front (test fixture)
records who sent what."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from groupcoord.coordinator.messages.txn_offset_commit import TxnOffsetCommitResponse
from groupcoord.coordinator.security.cluster_login import ClusterLogin
from groupcoord.coordinator.txn.wire import CLIENT_ID
from tests.security.conftest import SaslCluster, Sidecar
from tests.security.test_authentication import authenticated, committed, create_topic
from tests.txn.eos import producer_identity, transactional_producer, txn_offset_commit

pytestmark = pytest.mark.integration

ADD_PARTITIONS_TO_TXN, PRODUCE, FETCH = 24, 0, 1
GCADMIN = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-256",
    "sasl.username": "gcadmin",
    "sasl.password": "gcadmin-secret",
}


def test_the_bridge_logs_in_with_the_sidecars_credentials(sasl_cluster: SaslCluster, sidecar: Sidecar) -> None:
    bridge_logs_in_as(sasl_cluster, sidecar, "gcadmin")


def bridge_logs_in_as(sasl_cluster: SaslCluster, sidecar: Sidecar, principal: str) -> None:
    """A TxnOffsetCommit through ``sidecar`` is applied at the commit, the bridge's requests made
    as ``principal`` (the sidecar's own login)."""
    tag = uuid.uuid4().hex[:8]
    source, sink, group, txn_id = f"shared-in-{tag}", f"shared-out-{tag}", f"alice-g-{tag}", f"tx-{tag}"
    create_topic(sasl_cluster, source, partitions=1)
    create_topic(sasl_cluster, sink, partitions=1)
    producer = transactional_producer(sidecar.bootstrap, txn_id, **GCADMIN)
    producer.begin_transaction()
    producer.produce(sink, value=b"a")
    assert producer.flush(10) == 0
    pid, epoch = producer_identity(sasl_cluster.bootstrap, sink, ClusterLogin.from_client_config(GCADMIN))

    async def commit_and_wait() -> None:
        client = await authenticated(sidecar, "gcadmin")
        try:
            answer = await client.call(28, 3, txn_offset_commit(txn_id, group, pid, epoch, source, 7))
            assert isinstance(answer, TxnOffsetCommitResponse)
            assert [p.error_code for t in answer.topics for p in t.partitions] == [0]
            await asyncio.to_thread(producer.commit_transaction, 30)
            deadline = time.monotonic() + 20
            while await committed(client, group, source) != 7:
                assert time.monotonic() < deadline, "the commit marker was not applied"
                await asyncio.sleep(0.1)
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(commit_and_wait(), 60))
    bridge = {(who, key) for who, client, key, _ in sasl_cluster.front.requests if client == CLIENT_ID}
    assert {(principal, ADD_PARTITIONS_TO_TXN), (principal, PRODUCE), (principal, FETCH)} <= bridge
