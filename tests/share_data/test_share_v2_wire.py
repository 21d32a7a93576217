"""ShareFetch and ShareAcknowledge v2 (Kafka 4.2) through a real ``groupcoord serve`` in front of the
local broker, with the project's own wire client: no client here speaks v2 (librdkafka 2.16's
ShareConsumer sends v1). KIP-1206's record-limit acquire mode, KIP-1222's RENEW (the lock moves,
nothing is written, the answer carries the lock duration; ``share.renew.acknowledge.enable`` turns it
off), and the bad input Kafka refuses."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.service.share_fetcher import record_batches
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess
from tests.share_data.test_share_consumer import (
    SHARE_ACK,
    SHARE_FETCH,
    _log_ends,
    _produce,
    _set_group_config,
    _topic_id,
    _wire_fetch,
    _wire_member,
    acquired_ranges,
    shared_serve,  # noqa: F401  (the module's serve: group record locks down to 1 s)
)

pytestmark = pytest.mark.integration

ACCEPT, RENEW = 1, 4
LOCK_MS = 4000


class Member:
    """One share-group member on its own connection, with its share session's epoch."""

    def __init__(self, client: WireClient, group: str, member: str, topic_id: uuid.UUID) -> None:
        self.client, self.group, self.member, self.topic_id = client, group, member, topic_id
        self.epoch = 0

    async def fetch(self, acks: list[tuple[int, int, int]] = (), **fields: int | bool) -> sf.ShareFetchResponse:  # type: ignore[assignment]
        batches = [
            sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
            for f, la, t in acks
        ]
        partition = sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=batches)
        request = sf.ShareFetchRequest(
            group_id=self.group,
            member_id=self.member,
            share_session_epoch=self.epoch,
            topics=[sf.ShareFetchRequestFetchTopic(topic_id=self.topic_id, partitions=[partition])],
            **fields,  # type: ignore[arg-type]
        )
        answer = await self.client.call(SHARE_FETCH, 2, request)
        assert isinstance(answer, sf.ShareFetchResponse)
        if answer.error_code == 0:
            self.epoch += 1
        return answer

    async def ack(
        self, first: int, last: int, kind: int, version: int = 2, renew: bool = False
    ) -> sa.ShareAcknowledgeResponse:
        batch = sa.ShareAcknowledgeRequestAcknowledgementBatch(
            first_offset=first, last_offset=last, acknowledge_types=[kind]
        )
        partition = sa.ShareAcknowledgeRequestAcknowledgePartition(partition_index=0, acknowledgement_batches=[batch])
        request = sa.ShareAcknowledgeRequest(
            group_id=self.group,
            member_id=self.member,
            share_session_epoch=self.epoch,
            is_renew_ack=renew,
            topics=[sa.ShareAcknowledgeRequestAcknowledgeTopic(topic_id=self.topic_id, partitions=[partition])],
        )
        answer = await self.client.call(SHARE_ACK, version, request)
        assert isinstance(answer, sa.ShareAcknowledgeResponse) and answer.error_code == 0, answer
        self.epoch += 1
        return answer


def _ack_error(answer: sa.ShareAcknowledgeResponse) -> int:
    (t,) = answer.responses
    return t.partitions[0].error_code


def test_share_fetch_and_acknowledge_v2_on_the_wire(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    serve = shared_serve
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id, log_topic = _topic_id(bootstrap, topic), serve.args[-3]
    _set_group_config(serve.bootstrap, group, "share.record.lock.duration.ms", str(LOCK_MS))

    async def run() -> None:
        async def member() -> Member:
            client, member_id = await _wire_member(serve.port, group, topic)
            return Member(client, group, member_id, topic_id)

        mine, theirs = await member(), await member()
        opened = await mine.fetch(max_wait_ms=200, max_records=100)  # the share-partition starts at the end
        assert opened.error_code == 0 and opened.acquisition_lock_timeout_ms == LOCK_MS
        assert acquired_ranges(await theirs.fetch(max_wait_ms=0, max_records=100)) == []
        _produce(bootstrap, topic, 10, 1)

        # KIP-1206 record-limit: at most MaxRecords, whatever the batches.
        got = await mine.fetch(max_wait_ms=5000, max_records=4, share_acquire_mode=1)
        acquired_at = time.monotonic()
        assert acquired_ranges(got) == [(0, 3, 1)]

        # Refused before anything is done: nothing written, the session's epoch unchanged.
        ends = _log_ends(bootstrap, log_topic)
        assert (await mine.fetch(max_records=4, share_acquire_mode=2)).error_code == ErrorCode.INVALID_REQUEST
        renew_asking_for_records = await mine.fetch([(0, 0, RENEW)], is_renew_ack=True, max_records=4)
        assert renew_asking_for_records.error_code == ErrorCode.INVALID_REQUEST
        # RENEW in a v1 request, or in a v2 one without IsRenewAck: INVALID_REQUEST; of records
        # another member holds: INVALID_RECORD_STATE.
        assert _ack_error(await mine.ack(0, 0, RENEW, version=1)) == ErrorCode.INVALID_REQUEST
        assert _ack_error(await mine.ack(0, 0, RENEW, renew=False)) == ErrorCode.INVALID_REQUEST
        assert _ack_error(await theirs.ack(0, 0, RENEW, renew=True)) == ErrorCode.INVALID_RECORD_STATE
        assert _log_ends(bootstrap, log_topic) == ends

        # Renewed halfway through the lock, by ShareAcknowledge and by a renew-only ShareFetch
        # (which fetches nothing though records wait): answered with the lock duration, and
        # nothing written (a renewal changes no state).
        await asyncio.sleep(max(0.0, acquired_at + LOCK_MS / 2000 - time.monotonic()))
        renewed = await mine.ack(0, 3, RENEW, renew=True)
        assert (_ack_error(renewed), renewed.acquisition_lock_timeout_ms) == (0, LOCK_MS)
        limits = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
        renew_fetch = await mine.fetch([(0, 1, RENEW)], is_renew_ack=True, **limits)
        assert renew_fetch.error_code == 0 and renew_fetch.acquisition_lock_timeout_ms == LOCK_MS
        assert acquired_ranges(renew_fetch) == []
        assert renew_fetch.responses[0].partitions[0].acknowledge_error_code == 0
        assert _log_ends(bootstrap, log_topic) == ends

        # Past the first lock's end the records are still held: the other member gets only the
        # rest, and the holder's ACCEPT (INVALID_RECORD_STATE after an expiry) is applied.
        await asyncio.sleep(max(0.0, acquired_at + LOCK_MS / 1000 + 0.5 - time.monotonic()))
        assert acquired_ranges(await theirs.fetch(max_wait_ms=1000, max_records=100)) == [(4, 9, 1)]
        assert _ack_error(await mine.ack(0, 3, ACCEPT)) == 0

        # share.renew.acknowledge.enable=false (Kafka 4.3) refuses renewals of records the member
        # holds, at once for the live share-partition: INVALID_RECORD_STATE, nothing written.
        _set_group_config(serve.bootstrap, group, "share.renew.acknowledge.enable", "false")
        ends = _log_ends(bootstrap, log_topic)
        assert _ack_error(await theirs.ack(4, 9, RENEW, renew=True)) == ErrorCode.INVALID_RECORD_STATE
        assert _log_ends(bootstrap, log_topic) == ends
        assert _ack_error(await theirs.ack(4, 9, ACCEPT)) == 0
        await mine.client.close()
        await theirs.client.close()

    asyncio.run(run())


def _batches(answer: sf.ShareFetchResponse) -> list[tuple[int, int]]:
    """The record batches the answer carries (first, last offset)."""
    return [(b.first, b.last) for t in answer.responses for p in t.partitions for b in record_batches(p.records)]


def test_batch_optimized_acquires_a_batch_it_began_to_its_end(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    """ShareFetch v1 and v2's ShareAcquireMode 0 are batch-optimized, as in Kafka: MaxRecords is
    soft and a record batch begun is acquired to its end, so the batches an answer carries hold
    acquired records only (librdkafka's share consumer parses every record of an answer and
    drops those outside AcquiredRecords). Record-limit (1) keeps to MaxRecords, in whole
    batches as Kafka sends them."""
    serve = shared_serve
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> None:
        async def member() -> Member:
            client, member_id = await _wire_member(serve.port, group, topic)
            return Member(client, group, member_id, topic_id)

        soft, hard = await member(), await member()
        v1_client, v1_member = await _wire_member(serve.port, group, topic)
        assert acquired_ranges(await soft.fetch(max_wait_ms=200, max_records=4)) == []  # starts at the end
        for n in range(3):
            _produce(bootstrap, topic, 10, 1, prefix=f"b{n}-")  # one batch each: 0-9, 10-19, 20-29
        got = await soft.fetch(max_wait_ms=5000, max_records=4)
        assert (acquired_ranges(got), _batches(got)) == ([(0, 9, 1)], [(0, 9)])
        got = await hard.fetch(max_wait_ms=5000, max_records=4, share_acquire_mode=1)
        assert (acquired_ranges(got), _batches(got)) == ([(10, 13, 1)], [(10, 19)])
        # v1 (batch-optimized is its only mode), from inside a batch: to that batch's end.
        ids = (group, v1_member, topic_id)
        assert await _wire_fetch(v1_client, ids, 0, max_wait_ms=5000, max_records=4) == [(14, 19, 1)]
        for client in (soft.client, hard.client, v1_client):
            await client.close()

    asyncio.run(run())
