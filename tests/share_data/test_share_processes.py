"""ShareFetch at any process: the share-partitions live in the shard of the group, and a process
that does not own it relays ShareFetch/ShareAcknowledge to the one that does (as group configs are
relayed), so a share consumer bootstrapped at any sidecar gets its records wherever its fetches go."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import ShareConsumer

from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.service.partitioning import partition_for
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Sidecar, stop_all, wait_for
from tests.share_data.test_share_consumer import (
    _drain,
    _produce,
    _set_group_config,
    _topic_id,
    released_when_the_holder_disconnects,
)

pytestmark = pytest.mark.integration

PARTITIONS = 4


@pytest.fixture(scope="module")
def pair(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Sidecar]]:
    """Two processes for the module's tests (each uses groups and topics of its own)."""
    log_topic = f"gc-sf-pair-{uuid.uuid4().hex[:10]}"
    env = {"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"}
    logs = tmp_path_factory.mktemp("share-pair")
    made = [Sidecar(bootstrap, log_topic, logs / f"serve{i}.log", PARTITIONS, env=env) for i in range(2)]
    try:
        for s in made:
            s.start()
        yield made
    finally:
        stop_all(made)


def _group_of_the_second(pair: list[Sidecar], prefix: str) -> str:
    """A group name the second process coordinates, once the two own all the shards between them."""
    first, second = pair
    wait_for(
        lambda: (
            bool(first.owned() and second.owned())
            and sorted([*first.owned(), *second.owned()]) == list(range(PARTITIONS))
        ),
        60,
        "both processes owning shards",
    )
    return next(g for g in (f"{prefix}-{i}" for i in range(100)) if partition_for(g, PARTITIONS) in second.owned())


def test_a_consumer_at_the_process_that_does_not_own_the_group_gets_every_record(
    pair: list[Sidecar], bootstrap: str, unique_name: str
) -> None:
    first, second = pair
    # A group that the second process coordinates; the consumer talks to the first.
    group = _group_of_the_second(pair, unique_name)
    topic = unique_name
    create_topic(bootstrap, topic, 2)
    # From the start of the (new) topic: at ``latest`` a consumer slow to make its share-partitions
    # (a loaded machine) would start after the records and never see them.
    _set_group_config(second.address, group, "share.auto.offset.reset", "earliest")
    values = _produce(bootstrap, topic, 30, 2)
    consumer = ShareConsumer(
        {"bootstrap.servers": first.address, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    got = [value for _, value, _ in _drain([consumer], len(values), ack=True)]
    consumer.close()
    assert sorted(got) == sorted(values)
    failed = [r for r in first.records() if "relaying" in str(r.get("msg"))]
    assert not failed, failed


def test_share_requests_at_a_process_that_does_not_own_the_group_are_relayed_to_the_owner(
    pair: list[Sidecar], bootstrap: str, unique_name: str
) -> None:
    first, second = pair
    group = _group_of_the_second(pair, unique_name)
    topic = unique_name
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)
    member = str(uuid.uuid4())

    async def run() -> None:
        owner = await WireClient.connect("127.0.0.1", second.port)
        other = await WireClient.connect("127.0.0.1", first.port)
        joined = await owner.call(
            76,
            1,
            sgh.ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
            ),
        )
        assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0

        async def fetch(epoch: int) -> sf.ShareFetchResponse:
            partition = sf.ShareFetchRequestFetchPartition(partition_index=0)
            request = sf.ShareFetchRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                max_wait_ms=200,
                max_records=100,
                topics=[sf.ShareFetchRequestFetchTopic(topic_id=topic_id, partitions=[partition])],
            )
            answer = await other.call(78, 1, request)
            assert isinstance(answer, sf.ShareFetchResponse)
            return answer

        assert (await fetch(0)).error_code == 0
        _produce(bootstrap, topic, 3, 1)
        got = await fetch(1)
        assert got.error_code == 0
        acquired = got.responses[0].partitions[0].acquired_records
        assert [(a.first_offset, a.last_offset) for a in acquired] == [(0, 2)]
        batch = sa.ShareAcknowledgeRequestAcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=[1])
        ack = sa.ShareAcknowledgeRequest(
            group_id=group,
            member_id=member,
            share_session_epoch=2,
            topics=[
                sa.ShareAcknowledgeRequestAcknowledgeTopic(
                    topic_id=topic_id,
                    partitions=[
                        sa.ShareAcknowledgeRequestAcknowledgePartition(
                            partition_index=0, acknowledgement_batches=[batch]
                        )
                    ],
                )
            ],
        )
        answer = await other.call(79, 1, ack)
        assert isinstance(answer, sa.ShareAcknowledgeResponse)
        assert (answer.error_code, answer.responses[0].partitions[0].error_code) == (0, 0)
        await owner.close()
        await other.close()

    asyncio.run(run())


def test_records_of_a_closed_connection_at_the_relaying_process_are_released_at_the_owner(
    pair: list[Sidecar], bootstrap: str, unique_name: str
) -> None:
    """The session a relayed ShareFetch opened belongs to the client's connection at the relaying
    process: when that connection closes, the owner is told and releases its records at once."""
    first, second = pair
    group = _group_of_the_second(pair, unique_name)
    create_topic(bootstrap, unique_name, 1)
    got = asyncio.run(
        released_when_the_holder_disconnects(bootstrap, unique_name, group, first.port, second.port, second.port)
    )
    assert got == [(0, 2, 2)]
