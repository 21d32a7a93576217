"""A share group's configs changed while its share-partitions are live, through a real ``groupcoord
serve`` in front of the local broker: Kafka's SharePartition reads the lock duration at each
acquisition and the delivery-count limit at each release, so a change applies from the next use,
not from the next load (found by a QA probe: a lowered limit let a poison record go on being
delivered, a raised lock duration was announced to the client while the old one ran)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from tests.clients.support import create_topic
from tests.integration.serve_process import ServeProcess
from tests.share_data.test_share_consumer import (
    _produce,
    _set_group_config,
    _topic_id,
    _wire_member,
    acquired_ranges,
    shared_serve,  # noqa: F401  (the module's serve: group record locks down to 1 s)
)
from tests.share_data.test_share_v2_wire import Member

pytestmark = pytest.mark.integration

RELEASE = 2


def _earliest_group(serve: ServeProcess, bootstrap: str, unique_name: str) -> tuple[str, str, uuid.UUID]:
    """A new one-partition topic and a share group that starts at its earliest record."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _set_group_config(serve.bootstrap, group, "share.auto.offset.reset", "earliest")
    return topic, group, _topic_id(bootstrap, topic)


async def _member(serve: ServeProcess, group: str, topic: str, topic_id: uuid.UUID) -> Member:
    """A member of the share group on a connection of its own."""
    client, member_id = await _wire_member(serve.port, group, topic)
    return Member(client, group, member_id, topic_id)


def test_a_changed_lock_duration_applies_to_the_next_acquisition(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    serve = shared_serve
    topic, group, topic_id = _earliest_group(serve, bootstrap, unique_name)
    _set_group_config(serve.bootstrap, group, "share.record.lock.duration.ms", "1000")

    async def run() -> None:
        mine, theirs = [await _member(serve, group, topic, topic_id) for _ in range(2)]
        _produce(bootstrap, topic, 5, 1, batch_records=5)
        got = await mine.fetch(max_wait_ms=5000, max_records=100)  # the share-partition goes live
        assert acquired_ranges(got) == [(0, 4, 1)] and got.acquisition_lock_timeout_ms == 1000
        await mine.ack(0, 4, 1)

        # Raised while live: the next acquisition's lock is the new one, as its answer says.
        _set_group_config(serve.bootstrap, group, "share.record.lock.duration.ms", "15000")
        _produce(bootstrap, topic, 5, 1, batch_records=5)
        got = await mine.fetch(max_wait_ms=5000, max_records=100)
        assert acquired_ranges(got) == [(5, 9, 1)] and got.acquisition_lock_timeout_ms == 15000
        # Under the old 1 s lock the other member would have them again within ~1 s.
        assert acquired_ranges(await theirs.fetch(max_wait_ms=3000, max_records=100)) == []

        # Lowered while live: the next acquisition runs out after the new one.
        await mine.ack(5, 9, 1)
        _set_group_config(serve.bootstrap, group, "share.record.lock.duration.ms", "1000")
        _produce(bootstrap, topic, 5, 1, batch_records=5)
        assert acquired_ranges(await mine.fetch(max_wait_ms=5000, max_records=100)) == [(10, 14, 1)]
        started = time.monotonic()
        assert acquired_ranges(await theirs.fetch(max_wait_ms=10_000, max_records=100)) == [(10, 14, 2)]
        assert time.monotonic() - started < 5  # 15 s under the lock it had before

    asyncio.run(run())


def test_a_lowered_delivery_count_limit_archives_at_the_next_release(
    shared_serve: ServeProcess,  # noqa: F811
    bootstrap: str,
    unique_name: str,
) -> None:
    serve = shared_serve
    topic, group, topic_id = _earliest_group(serve, bootstrap, unique_name)

    async def run() -> None:
        mine = await _member(serve, group, topic, topic_id)
        _produce(bootstrap, topic, 1, 1)
        assert acquired_ranges(await mine.fetch(max_wait_ms=5000, max_records=10)) == [(0, 0, 1)]  # live, limit 5
        _set_group_config(serve.bootstrap, group, "share.delivery.count.limit", "2")
        got = await mine.fetch([(0, 0, RELEASE)], max_wait_ms=2000, max_records=10)
        assert acquired_ranges(got) == [(0, 0, 2)]
        # Released at the limit: archived, never delivered a third time.
        assert acquired_ranges(await mine.fetch([(0, 0, RELEASE)], max_wait_ms=1000, max_records=10)) == []

    asyncio.run(run())
