"""Transaction version 2 (KIP-890 part 2) at the wire: TxnOffsetCommit v5, sent with no
AddOffsetsToTxn, through a real ``groupcoord serve``.

The local broker has no transaction version 2, so it stands behind a front (test fixture,
``tests/security/sasl_front.py``) that reports ``transaction.version`` finalized at 2 and Produce up
to v12, and records every request that reaches the broker. What this proves: the sidecar offers v5
and the level 2 only then; a v5 request makes the sidecar write its transaction record with
Produce v12 and send no AddPartitionsToTxn (on Kafka 4.x the leader then adds the partition to the
transaction itself); the offsets stay pending until the client's own EndTxn puts a COMMIT marker
after that record, and are applied then. The local broker writes markers into every partition a
producer wrote in its transaction, which stands in for Kafka's implicit add here: that Kafka's
leader adds the partition is read from Kafka's source, not run (docs/design/transactional-offsets.md).
A v4 request on the same sidecar keeps the flow of version 1 (AddPartitionsToTxn v3, Produce v9).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.txn.wire import CLIENT_ID
from groupcoord.local_broker import free_port
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess, serving
from tests.security.sasl_front import SaslFront, fronted_broker
from tests.topics import ensure_topic
from tests.txn.eos import producer_identity, transactional_producer
from tests.txn.test_txn_validation import fetch, txn_commit

pytestmark = pytest.mark.integration

ADD_PARTITIONS_TO_TXN, PRODUCE = 24, 0


@pytest.fixture(scope="module")
def tv2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SaslFront, str, ServeProcess]]:
    directory = Path(tmp_path_factory.mktemp("tv2"))
    with fronted_broker(directory / "broker.log", {}, anonymous=True, transaction_version=2) as (front, bootstrap):
        serve = ServeProcess(bootstrap, free_port(), f"gc-tv2-{uuid.uuid4().hex[:12]}", 2, log=directory / "serve.log")
        with serving(serve, {"GROUPCOORD_METADATA_REFRESH_INTERVAL_MS": "1000"}):
            yield front, bootstrap, serve


def _api_versions(sidecar: str) -> ApiVersionsResponse:
    async def call() -> ApiVersionsResponse:
        host, port = sidecar.rsplit(":", 1)
        client = await WireClient.connect(host, int(port))
        try:
            answer = await client.call(
                ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
            )
        finally:
            await client.close()
        assert isinstance(answer, ApiVersionsResponse)
        return answer

    return asyncio.run(call())


def _bridge_requests(front: SaslFront, since: int) -> list[tuple[int, int]]:
    """(api key, version) of the transaction bridge's requests after the first ``since`` relayed ones."""
    return [(key, version) for _, client, key, version in front.requests[since:] if client == CLIENT_ID]


def _await_committed(sidecar: str, group: str, topic: str, offset: int) -> None:
    deadline = time.monotonic() + 20
    while fetch(sidecar, group, topic, require_stable=True) != (offset, ErrorCode.NONE):
        assert time.monotonic() < deadline, "the commit marker was not applied"
        time.sleep(0.1)


def test_txn_offset_commit_v5_joins_the_transaction_without_add_partitions(
    tv2: tuple[SaslFront, str, ServeProcess], unique_name: str
) -> None:
    front, bootstrap, serve = tv2
    sidecar = serve.bootstrap
    offered = _api_versions(sidecar)
    assert (ApiKey.TXN_OFFSET_COMMIT, 5) in {(k.api_key, k.max_version) for k in offered.api_keys}
    assert ("transaction.version", 2) in {(f.name, f.max_version_level) for f in offered.finalized_features}

    source, sink, group, txn_id = f"{unique_name}-in", f"{unique_name}-out", f"{unique_name}-g", f"{unique_name}-tx"
    ensure_topic(bootstrap, source, 1)
    ensure_topic(bootstrap, sink, 1)
    producer = transactional_producer(sidecar, txn_id)
    producer.begin_transaction()
    producer.produce(sink, value=b"a")
    assert producer.flush(10) == 0
    pid, epoch = producer_identity(bootstrap, sink)

    before = len(front.requests)
    assert txn_commit(sidecar, txn_id, group, pid, epoch, source, 7, version=5) == [ErrorCode.NONE]
    sent = _bridge_requests(front, before)
    assert (PRODUCE, 12) in sent, sent
    assert ADD_PARTITIONS_TO_TXN not in {key for key, _ in sent}, sent
    assert fetch(sidecar, group, source, require_stable=True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    producer.commit_transaction(30)
    _await_committed(sidecar, group, source, 7)

    # A client of transaction version 1 on the same sidecar: the partition is added as before.
    producer.begin_transaction()
    producer.produce(sink, value=b"b")
    assert producer.flush(10) == 0
    before = len(front.requests)
    assert txn_commit(sidecar, txn_id, group, pid, epoch, source, 9, version=4) == [ErrorCode.NONE]
    sent = _bridge_requests(front, before)
    assert (ADD_PARTITIONS_TO_TXN, 3) in sent and (PRODUCE, 9) in sent, sent
    producer.commit_transaction(30)
    _await_committed(sidecar, group, source, 9)
