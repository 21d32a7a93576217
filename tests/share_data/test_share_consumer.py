"""The share data path through a real ``groupcoord serve`` (share groups enabled) in front of the
local broker, with confluent-kafka's ``ShareConsumer`` (librdkafka 2.16, preview share consumer)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages import share_acknowledge as sa
from groupcoord.coordinator.messages import share_fetch as sf
from groupcoord.coordinator.messages import share_group_heartbeat as sgh
from groupcoord.coordinator.service.metadata_cache import _uuid_from_client
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.local_broker import free_port
from groupcoord.records import RecordType, decode
from groupcoord.records.codec import record_type_of
from tests.client_records import delivery_count_of, offset_of, value_of
from tests.clients.support import create_topic
from tests.gateway.wire_client import WireClient
from tests.integration.serve_process import ServeProcess

pytestmark = pytest.mark.integration


SHARE_GROUPS = {"GROUPCOORD_SHARE_GROUPS_ENABLED": "true"}


@pytest.fixture
def serves() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    yield started
    for serve in started:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.stop()


@pytest.fixture(scope="module")
def shared_serve(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One serve for the tests that do not restart it (each uses its own topic and group)."""
    log = tmp_path_factory.mktemp("share-serve") / "serve.log"
    # Groups may set record locks down to 1 s (Kafka's broker-level bound is 15 s): the lock-expiry
    # test takes seconds.
    env = {**SHARE_GROUPS, "GROUPCOORD_GROUP": json.dumps({"group.share.min.record.lock.duration.ms": "1000"})}
    serve = ServeProcess(bootstrap, free_port(), f"gc-sf-log-{uuid.uuid4().hex[:10]}", log=log).start(env=env)
    yield serve
    serve.stop()


def _produce(
    bootstrap: str, topic: str, count: int, partitions: int, prefix: str = "", batch_records: int | None = None
) -> set[bytes]:
    """``count`` records; ``batch_records`` caps a record batch's records (a ShareFetch v1 is
    batch-optimized: it acquires a batch it began to its end, past MaxRecords)."""
    extra = {"batch.num.messages": batch_records} if batch_records else {}
    producer = Producer({"bootstrap.servers": bootstrap, **extra})
    values = set()
    for i in range(count):
        value = f"{prefix}v{i}".encode()
        producer.produce(topic, value, partition=i % partitions)
        values.add(value)
    assert producer.flush(15) == 0
    return values


def _consumer(bootstrap: str, group: str, **extra: str) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})


def test_share_consumer_receives_every_record(shared_serve: ServeProcess, bootstrap: str, unique_name: str) -> None:
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 2)
    serve = shared_serve
    # Records from before the group: share.auto.offset.reset defaults to latest, so never delivered.
    old = _produce(bootstrap, topic, 10, 2)
    consumer = _consumer(serve.bootstrap, group)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    consumer.poll(1)
    values = _produce(bootstrap, topic, 20, 2, prefix="new-")
    got: list[bytes] = []
    while time.monotonic() < deadline and len(got) < len(values):
        for m in consumer.poll(1):
            if m.error() is None:
                got.append(value_of(m))
    assert not [m for m in consumer.poll(1) if m.error() is None]
    consumer.close()
    assert sorted(got) == sorted(values) and not old & set(got)


def _drain(
    consumers: list[ShareConsumer], want: int, timeout: float = 30, ack: bool = False
) -> list[tuple[int, bytes, int]]:
    """Poll the consumers in turn until ``want`` records came (each: consumer index, value,
    delivery count); with ``ack`` (explicit mode) each record is ACCEPTed and committed."""
    got: list[tuple[int, bytes, int]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(got) < want:
        for i, c in enumerate(consumers):
            messages = [m for m in c.poll(0.3) if m.error() is None]
            for m in messages:
                got.append((i, value_of(m), delivery_count_of(m)))
                if ack:
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
            if ack and messages:
                c.commit_sync(15)
    return got


def _started(serves: list[ServeProcess], bootstrap: str, tmp_path: Path, log_topic: str | None = None) -> ServeProcess:
    topic = log_topic or f"gc-sf-log-{uuid.uuid4().hex[:10]}"
    serve = ServeProcess(bootstrap, free_port(), topic, log=tmp_path / f"serve{len(serves)}.log").start(
        env=SHARE_GROUPS
    )
    serves.append(serve)
    return serve


def _joined(serve: ServeProcess, group: str, topic: str, count: int, **extra: str) -> list[ShareConsumer]:
    """``count`` subscribed consumers, each having fetched once (their share-partitions now exist:
    share.auto.offset.reset=latest starts them at the end, so produce after this)."""
    consumers = [_consumer(serve.bootstrap, group, **extra) for _ in range(count)]
    for c in consumers:
        c.subscribe([topic])
    for c in consumers:
        assert not [m for m in c.poll(1.5) if m.error() is None]
    return consumers


def test_more_consumers_than_partitions_all_receive_and_each_record_is_accepted_once(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    serve = shared_serve
    consumers = _joined(serve, group, topic, 3, **{"share.acknowledgement.mode": "explicit", "max.poll.records": "5"})
    values = _produce(bootstrap, topic, 120, 1, batch_records=5)
    got = _drain(consumers, len(values), ack=True)
    for c in consumers:
        c.close()
    # Every record once (all ACCEPTed, so none comes back), and all three consumers took part.
    assert sorted(v for _, v, _ in got) == sorted(values)
    assert {i for i, _, _ in got} == {0, 1, 2}
    assert {count for _, _, count in got} == {1}


def test_release_redelivers_with_delivery_count_two_and_reject_archives(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    serve = shared_serve
    (consumer,) = _joined(serve, group, topic, 1, **{"share.acknowledgement.mode": "explicit"})
    values = _produce(bootstrap, topic, 5, 1)
    rejected = b"v0"
    seen: dict[bytes, list[int | None]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sum(len(v) for v in seen.values()) < 2 * len(values) - 1:
        messages = [m for m in consumer.poll(0.5) if m.error() is None]
        for m in messages:
            value = value_of(m)
            first = value not in seen
            seen.setdefault(value, []).append(m.delivery_count())
            if value == rejected:
                consumer.acknowledge(m, AcknowledgeType.REJECT)
            else:
                consumer.acknowledge(m, AcknowledgeType.RELEASE if first else AcknowledgeType.ACCEPT)
        if messages:
            consumer.commit_sync(15)
    # Nothing more comes: each released record was accepted at its second delivery, the
    # rejected one is archived.
    assert not [m for m in consumer.poll(1.5) if m.error() is None]
    consumer.close()
    assert seen == {v: [1] if v == rejected else [1, 2] for v in values}


def test_records_a_member_holds_past_its_lock_go_to_another(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """A member that stops acknowledging loses its records when their lock runs out (the shard's
    timer): a ShareConsumer gets them, delivery count 2. The first member is a client on the wire,
    which fetches only when told (librdkafka's consumer fetches ahead in the background, so two of
    them race for who holds the records when)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _set_group_config(shared_serve.bootstrap, group, "share.record.lock.duration.ms", "1500")
    topic_id = _topic_id(bootstrap, topic)

    async def hold() -> list[tuple[int, int, int]]:
        client, member = await _wire_member(shared_serve.port, group, topic)
        ids = (group, member, topic_id)
        assert await _wire_fetch(client, ids, 0, max_wait_ms=500) == []
        _produce(bootstrap, topic, 5, 1)
        held = await _wire_fetch(client, ids, 1, max_wait_ms=500, max_records=100)
        await client.close()  # the member stays in the group: its records stay locked
        return held

    assert asyncio.run(hold()) == [(0, 4, 1)]
    other = _consumer(shared_serve.bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    other.subscribe([topic])
    again = _drain([other], 5, ack=True)
    other.close()
    assert sorted(count for _, _, count in again) == [2] * 5


def _set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])]
    ).values():
        future.result(15)


def test_read_committed_delivers_no_aborted_record(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """With a real transactional producer. (Tansu keeps no aborted records in the log, only the
    markers, so here this cannot tell the filter of aborted transactions from none: that filter is
    checked on record batches in ``test_record_batches.py``.)"""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _set_group_config(shared_serve.bootstrap, group, "share.isolation.level", "read_committed")
    (consumer,) = _joined(shared_serve, group, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{unique_name}-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"aborted-{i}".encode())
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"committed-{i}".encode())
    producer.commit_transaction(30)
    got = _drain([consumer], 2)
    assert not [m for m in consumer.poll(1.5) if m.error() is None]
    consumer.close()
    assert sorted(v for _, v, _ in got) == [b"committed-0", b"committed-1"]


@pytest.mark.parametrize("kill", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["stop", "kill9"])
def test_accepted_records_stay_accepted_across_a_restart_of_the_owner(
    serves: list[ServeProcess], bootstrap: str, unique_name: str, tmp_path: Path, kill: bool
) -> None:
    """The share-partitions are rebuilt from the log by the next owner: a stopped process (the
    shard reloaded from its records by a new process), or one killed with -9 (slow: the next
    process waits for the placement group to let the dead one go)."""
    topic, group, log_topic = unique_name, f"{unique_name}-sg", f"gc-sf-log-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, topic, 2)
    first = _started(serves, bootstrap, tmp_path, log_topic)
    explicit = {"share.acknowledgement.mode": "explicit", "max.poll.records": "10"}
    (consumer,) = _joined(first, group, topic, 1, **explicit)
    values = _produce(bootstrap, topic, 60, 2)
    accepted = _drain([consumer], 20, ack=True)
    assert len(accepted) >= 20
    # Records acquired after the last commit are neither accepted nor released: after the kill
    # they are delivered again, with their delivery count kept.
    if kill:
        first.kill9()
    consumer.close()
    if not kill:
        assert first.stop() == 0
    second = _started(serves, bootstrap, tmp_path, log_topic)
    consumer = _consumer(second.bootstrap, group, **explicit)
    consumer.subscribe([topic])
    rest = _drain([consumer], len(values) - len(accepted), timeout=60, ack=True)
    assert not [m for m in consumer.poll(1.5) if m.error() is None]
    consumer.close()
    before = {v for _, v, _ in accepted}
    after = [v for _, v, _ in rest]
    assert not before & set(after), "an ACCEPTed record was delivered again"
    assert sorted(before | set(after)) == sorted(values) and len(after) == len(set(after))


# --- the wire, with the project's own codec ------------------------------------------------------

SHARE_HEARTBEAT, SHARE_FETCH, SHARE_ACK = 76, 78, 79
SHARE_TYPES = {int(RecordType.SHARE_SNAPSHOT), int(RecordType.SHARE_UPDATE)}


def fetch_partition_zero(group: str, member: str, epoch: int, topic_id: uuid.UUID) -> sf.ShareFetchRequest:
    """A ShareFetch v1 of partition 0 of one topic (200 ms wait, up to 100 records)."""
    return sf.ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=200,
        max_records=100,
        topics=[
            sf.ShareFetchRequestFetchTopic(
                topic_id=topic_id, partitions=[sf.ShareFetchRequestFetchPartition(partition_index=0)]
            )
        ],
    )


def acquired_ranges(answer: sf.ShareFetchResponse) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of every acquired range, once the answer has no error."""
    assert answer.error_code == 0, answer
    assert not any(p.error_code for t in answer.responses for p in t.partitions), answer
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for t in answer.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def _topic_id(bootstrap: str, topic: str, config: dict[str, str] | None = None) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": bootstrap, **(config or {})})  # kept alive until the answer comes
    described = admin.describe_topics(TopicCollection([topic]))
    return _uuid_from_client(described[topic].result(15).topic_id)


def _log_ends(bootstrap: str, log_topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gc-sf-probe"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(log_topic, p), 10)[1] for p in range(4)]
    finally:
        consumer.close()


def test_share_fetch_and_acknowledge_on_the_wire(shared_serve: ServeProcess, bootstrap: str, unique_name: str) -> None:
    """Session epochs and the errors Kafka answers; a refused request writes nothing; an
    acknowledgement is written before it is answered."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id, port, log_topic = _topic_id(bootstrap, topic), shared_serve.port, shared_serve.args[-3]

    async def run() -> None:
        client = await WireClient.connect("127.0.0.1", port)

        async def fetch(
            member: str, epoch: int, acks: list[tuple[int, int, int]] | None = None
        ) -> sf.ShareFetchResponse:
            batches = [
                sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
                for f, la, t in acks or []
            ]
            partition = sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=batches)
            request = sf.ShareFetchRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                max_wait_ms=200,
                max_records=100,
                topics=[sf.ShareFetchRequestFetchTopic(topic_id=topic_id, partitions=[partition])],
            )
            answer = await client.call(SHARE_FETCH, 1, request)
            assert isinstance(answer, sf.ShareFetchResponse)
            return answer

        async def ack(member: str, epoch: int, first: int, last: int, kind: int) -> sa.ShareAcknowledgeResponse:
            batch = sa.ShareAcknowledgeRequestAcknowledgementBatch(
                first_offset=first, last_offset=last, acknowledge_types=[kind]
            )
            partition = sa.ShareAcknowledgeRequestAcknowledgePartition(
                partition_index=0, acknowledgement_batches=[batch]
            )
            request = sa.ShareAcknowledgeRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                topics=[sa.ShareAcknowledgeRequestAcknowledgeTopic(topic_id=topic_id, partitions=[partition])],
            )
            answer = await client.call(SHARE_ACK, 1, request)
            assert isinstance(answer, sa.ShareAcknowledgeResponse)
            return answer

        def partition_error(answer: sa.ShareAcknowledgeResponse) -> int:
            (t,) = answer.responses
            return t.partitions[0].error_code

        member = str(uuid.uuid4())
        joined = await client.call(
            SHARE_HEARTBEAT,
            1,
            sgh.ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
            ),
        )
        assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0
        ends = _log_ends(bootstrap, log_topic)
        # Refused before anything is done: nothing written.
        assert (await fetch("not-a-member", 0)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await fetch(member, 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert (await fetch(member, 0, [(0, 0, 1)])).error_code == ErrorCode.INVALID_REQUEST
        assert (await ack(member, 0, 0, 0, 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert (await ack(member, 1, 0, 0, 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert _log_ends(bootstrap, log_topic) == ends

        opened = await fetch(member, 0)  # creates the share-partition at the end (latest)
        assert opened.error_code == 0 and opened.acquisition_lock_timeout_ms == 30_000  # the default
        _produce(bootstrap, topic, 3, 1)
        got = await fetch(member, 1)
        (t,) = got.responses
        (p,) = t.partitions
        assert (t.topic_id, p.error_code) == (topic_id, 0)
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(0, 2, 1)]
        assert p.records  # the batches holding them, as the broker returned them
        assert (await fetch(member, 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH  # stale

        ends = _log_ends(bootstrap, log_topic)
        assert partition_error(await ack(member, 2, 0, 5, 1)) == ErrorCode.INVALID_REQUEST  # past SPEO
        assert partition_error(await ack(member, 3, 0, 0, 9)) == ErrorCode.INVALID_REQUEST  # no such type
        assert _log_ends(bootstrap, log_topic) == ends
        assert partition_error(await ack(member, 4, 0, 2, 1)) == 0
        assert _log_ends(bootstrap, log_topic) != ends  # written, and read back, before the answer
        # Offsets below the start (all done) are skipped, as Kafka does; one in flight that this
        # member no longer holds is INVALID_RECORD_STATE.
        assert partition_error(await ack(member, 5, 0, 0, 1)) == 0
        _produce(bootstrap, topic, 2, 1)
        got = await fetch(member, 6)
        assert [(a.first_offset, a.last_offset) for a in got.responses[0].partitions[0].acquired_records] == [(3, 4)]
        assert partition_error(await ack(member, 7, 4, 4, 1)) == 0
        ends = _log_ends(bootstrap, log_topic)
        assert partition_error(await ack(member, 8, 4, 4, 1)) == ErrorCode.INVALID_RECORD_STATE
        assert _log_ends(bootstrap, log_topic) == ends
        closed = await fetch(member, -1)  # closes the session, releasing offset 3
        assert closed.error_code == 0
        assert (await fetch(member, 9)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        reopened = await fetch(member, 0)  # a new session fetches at once
        acquired = reopened.responses[0].partitions[0].acquired_records
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired] == [(3, 3, 2)]
        # Leaving the group keeps the session and what it holds (Kafka 4.2 releases on the session's
        # end): the final ShareAcknowledge after the leave heartbeat still accepts offset 3.
        leave = sgh.ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1)
        left = await client.call(SHARE_HEARTBEAT, 1, leave)
        assert isinstance(left, sgh.ShareGroupHeartbeatResponse) and left.error_code == 0
        assert partition_error(await ack(member, -1, 3, 3, 1)) == 0
        other = str(uuid.uuid4())
        rejoin = sgh.ShareGroupHeartbeatRequest(
            group_id=group, member_id=other, member_epoch=0, subscribed_topic_names=[topic]
        )
        rejoined = await client.call(SHARE_HEARTBEAT, 1, rejoin)
        assert isinstance(rejoined, sgh.ShareGroupHeartbeatResponse) and rejoined.error_code == 0
        assert not (await fetch(other, 0)).responses[0].partitions[0].acquired_records  # 3 stays accepted
        await client.close()

    asyncio.run(run())


def test_a_new_share_partition_starts_at_the_end_of_the_log(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """share.auto.offset.reset=latest: records from before are never delivered, even when the log
    ends with a batch of several records (Tansu's ListOffsets LATEST points inside it). A partition
    the topic does not have is UNKNOWN_TOPIC_OR_PARTITION."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    _produce(bootstrap, topic, 5, 1)  # one batch, offsets 0-4
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> list[tuple[int, int]]:
        client = await WireClient.connect("127.0.0.1", shared_serve.port)
        member = str(uuid.uuid4())
        await client.call(
            SHARE_HEARTBEAT,
            1,
            sgh.ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
            ),
        )
        acquired: list[tuple[int, int]] = []
        for epoch in (0, 1):
            if epoch:
                _produce(bootstrap, topic, 2, 1)
            # (Partition 7 does not exist: refused, and never part of the session.)
            partitions = [sf.ShareFetchRequestFetchPartition(partition_index=i) for i in (0, 7)]
            request = sf.ShareFetchRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                max_wait_ms=200,
                max_records=100,
                topics=[sf.ShareFetchRequestFetchTopic(topic_id=topic_id, partitions=partitions)],
            )
            answer = await client.call(SHARE_FETCH, 1, request)
            assert isinstance(answer, sf.ShareFetchResponse) and answer.error_code == 0
            errors = {p.partition_index: p.error_code for t in answer.responses for p in t.partitions}
            assert errors == {0: 0, 7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            acquired += [
                (a.first_offset, a.last_offset)
                for t in answer.responses
                for p in t.partitions
                for a in p.acquired_records
            ]
        await client.close()
        return acquired

    assert asyncio.run(run()) == [(5, 6)]


async def released_when_the_holder_disconnects(
    bootstrap: str, topic: str, group: str, holder_port: int, taker_port: int, owner_port: int
) -> list[tuple[int, int, int]]:
    """Member A (at ``holder_port``) acquires three records and closes its socket without a word;
    member B (at ``taker_port``) is answered what it acquires next, within a bound far below the
    30 s lock. Returns B's acquired (first, last, delivery count)."""
    topic_id = _topic_id(bootstrap, topic)
    owner = await WireClient.connect("127.0.0.1", owner_port)
    holder = await WireClient.connect("127.0.0.1", holder_port)
    taker = await WireClient.connect("127.0.0.1", taker_port)
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    for member in (a, b):
        joined = await owner.call(
            SHARE_HEARTBEAT,
            1,
            sgh.ShareGroupHeartbeatRequest(
                group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
            ),
        )
        assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0, joined

    async def fetch(client: WireClient, member: str, epoch: int) -> list[tuple[int, int, int]]:
        answer = await client.call(SHARE_FETCH, 1, fetch_partition_zero(group, member, epoch, topic_id))
        assert isinstance(answer, sf.ShareFetchResponse)
        return acquired_ranges(answer)

    assert await fetch(holder, a, 0) == []  # the share-partition starts at the end
    _produce(bootstrap, topic, 3, 1)
    assert await fetch(holder, a, 1) == [(0, 2, 1)]
    assert await fetch(taker, b, 0) == []  # A holds them all
    await holder.close()
    got: list[tuple[int, int, int]] = []
    epoch, deadline = 1, time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        got = await fetch(taker, b, epoch)
        epoch += 1
    await taker.close()
    await owner.close()
    return got


def test_records_of_a_closed_connection_go_to_another_member_at_once(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """Kafka 4.1+: the share session belongs to the connection that opened it; when it closes, the
    session goes and its acquired records are released, delivery count as it is (A's delivery
    counted: B's is the second)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    port = shared_serve.port
    got = asyncio.run(released_when_the_holder_disconnects(bootstrap, topic, group, port, port, port))
    assert got == [(0, 2, 2)]


def test_by_duration_reset_starts_at_the_first_record_that_recent(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """share.auto.offset.reset=by_duration:PT1H starts a new share-partition at its first record of
    the last hour. The local broker answers ListOffsets by timestamp with the log start whatever the
    timestamp; the sidecar checks the answer against the records and searches them instead. Old and
    recent records share one batch here: the search reads each record's own timestamp."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100})
    for i in range(8):
        stamp = now - 2 * 3_600_000 + i if i < 5 else now - 600_000 + i
        producer.produce(topic, f"{'old' if i < 5 else 'new'}-{i}".encode(), partition=0, timestamp=stamp)
    assert producer.flush(15) == 0
    _set_group_config(shared_serve.bootstrap, group, "share.auto.offset.reset", "by_duration:PT1H")
    consumer = _consumer(shared_serve.bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    got = _drain([consumer], 3, ack=True)
    assert not [m for m in consumer.poll(1) if m.error() is None]
    consumer.close()
    assert sorted(value for _, value, _ in got) == [b"new-5", b"new-6", b"new-7"]


def _share_records_since(bootstrap: str, log_topic: str, group: str, since: list[int]) -> int:
    """How many share-state records (snapshots and updates) of ``group`` its shard's partition of
    the coordinator log got since the ends ``since`` (``_log_ends``): only those are read."""
    partition = partition_for(group, len(since))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gc-sf-probe", "enable.auto.commit": False})
    try:
        end = consumer.get_watermark_offsets(TopicPartition(log_topic, partition), 10)[1]
        consumer.assign([TopicPartition(log_topic, partition, since[partition])])
        count, seen = 0, since[partition]
        while seen < end:
            for m in consumer.consume(end - seen, 5):  # returns once it has them all
                seen = offset_of(m) + 1
                if m.error() is None and record_type_of(m.key()) in SHARE_TYPES:
                    count += decode(m.key(), m.value()).key.group == group
        return count
    finally:
        consumer.close()


async def _wire_member(port: int, group: str, topic: str) -> tuple[WireClient, str]:
    client = await WireClient.connect("127.0.0.1", port)
    member = str(uuid.uuid4())
    joined = await client.call(
        SHARE_HEARTBEAT,
        1,
        sgh.ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]
        ),
    )
    assert isinstance(joined, sgh.ShareGroupHeartbeatResponse) and joined.error_code == 0
    return client, member


async def _wire_fetch(
    client: WireClient,
    request_of: tuple[str, str, uuid.UUID],
    epoch: int,
    acks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
    max_wait_ms: int = 200,
    max_records: int = 3,
    max_bytes: int = 2**31 - 1,
) -> list[tuple[int, int, int]]:
    """A ShareFetch of partition 0 (acknowledging ``acks``: first, last, type); the acquired
    ranges (first, last, delivery count)."""
    group, member, topic_id = request_of
    batches = [
        sf.ShareFetchRequestAcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=[t])
        for f, la, t in acks
    ]
    partition = sf.ShareFetchRequestFetchPartition(partition_index=0, acknowledgement_batches=batches)
    request = sf.ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        max_records=max_records,
        max_bytes=max_bytes,
        topics=[sf.ShareFetchRequestFetchTopic(topic_id=topic_id, partitions=[partition])],
    )
    answer = await client.call(SHARE_FETCH, 1, request)
    assert isinstance(answer, sf.ShareFetchResponse) and answer.error_code == 0
    assert all(p.acknowledge_error_code == 0 and p.error_code == 0 for t in answer.responses for p in t.partitions)
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in answer.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


async def _opened(
    port: int, group: str, topic: str, topic_id: uuid.UUID
) -> tuple[WireClient, tuple[str, str, uuid.UUID]]:
    """A member on the wire whose first ShareFetch (epoch 0) created the share-partition of
    ``topic`` partition 0 at its end (share.auto.offset.reset=latest): produce after this."""
    client, member = await _wire_member(port, group, topic)
    ids = (group, member, topic_id)
    assert await _wire_fetch(client, ids, 0) == []
    return client, ids


def test_a_share_fetch_writes_its_acknowledgements_and_never_its_acquisition(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """A ShareFetch that only acquires writes nothing (as Kafka's acquisition, which its share
    coordinator never sees); one that acknowledges writes one record, holding the
    acknowledgements, before it is answered (the records are the property tests' concern)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id, log_topic = _topic_id(bootstrap, topic), shared_serve.args[-3]

    async def run() -> None:
        client, ids = await _opened(shared_serve.port, group, topic, topic_id)
        _produce(bootstrap, topic, 6, 1, batch_records=3)
        ends = _log_ends(bootstrap, log_topic)
        assert await _wire_fetch(client, ids, 1) == [(0, 2, 1)]
        assert _share_records_since(bootstrap, log_topic, group, ends) == 0
        assert await _wire_fetch(client, ids, 2, acks=[(0, 2, 1)]) == [(3, 5, 1)]
        assert _share_records_since(bootstrap, log_topic, group, ends) == 1
        await client.close()

    asyncio.run(run())


def test_a_share_fetch_with_max_bytes_zero_acquires_nothing_and_applies_its_acknowledgements(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """MaxBytes 0 reads nothing, as in Kafka 4.2 (librdkafka's fetch.max.bytes=0 expects no
    records): answered at once without records, though records wait, its acknowledgements
    applied, and the records left for the next fetch at delivery count 1."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> None:
        client, ids = await _opened(shared_serve.port, group, topic, topic_id)
        _produce(bootstrap, topic, 6, 1, batch_records=3)
        assert await _wire_fetch(client, ids, 1, max_wait_ms=5000) == [(0, 2, 1)]
        for epoch in (2, 3):  # the second one carries no acknowledgement
            acks = [(0, 2, 1)] if epoch == 2 else []
            assert await _wire_fetch(client, ids, epoch, acks=acks, max_wait_ms=5000, max_bytes=0) == []
        assert await _wire_fetch(client, ids, 4, max_wait_ms=5000) == [(3, 5, 1)]
        # The ACCEPT of 0-2 carried by the MaxBytes 0 fetch was applied: they are not redelivered.
        assert await _wire_fetch(client, ids, 5, acks=[(3, 5, 2)], max_wait_ms=200) == [(3, 5, 2)]
        await client.close()

    asyncio.run(run())


def test_a_share_fetch_gets_no_more_record_batches_than_its_max_bytes_holds(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """MaxBytes is soft only for the first batch, as a Kafka broker reads the log: 1,000-byte
    records, one batch each, and MaxBytes 1,500 give one batch per fetch (librdkafka's 0171
    with fetch.max.bytes=1500), though the local broker answers the sidecar's own read with
    more (it ignores a partition's MaxBytes)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> None:
        client, ids = await _opened(shared_serve.port, group, topic, topic_id)
        _produce(bootstrap, topic, 3, 1, prefix="x" * 1000, batch_records=1)
        got = [await _wire_fetch(client, ids, epoch, max_wait_ms=5000, max_bytes=1500) for epoch in (1, 2, 3)]
        assert got == [[(0, 0, 1)], [(1, 1, 1)], [(2, 2, 1)]]
        await client.close()

    asyncio.run(run())


def test_a_waiting_share_fetch_is_woken_when_records_are_released(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """A ShareFetch that finds every record held by another member waits in its MaxWaitMs (here
    30 s, the most served) and is answered with the records as soon as they are released, not at
    the end of its wait (the call below gives up after 10 s)."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)

    async def run() -> None:
        holder, held = await _opened(shared_serve.port, group, topic, topic_id)
        waiter, second = await _wire_member(shared_serve.port, group, topic)
        _produce(bootstrap, topic, 3, 1)
        assert await _wire_fetch(holder, held, 1) == [(0, 2, 1)]
        assert await _wire_fetch(waiter, (group, second, topic_id), 0) == []
        waiting = asyncio.ensure_future(_wire_fetch(waiter, (group, second, topic_id), 1, max_wait_ms=30_000))
        await asyncio.sleep(0.5)  # (lets it arrive first; it is answered either way)
        batch = sa.ShareAcknowledgeRequestAcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=[2])
        release = sa.ShareAcknowledgeRequest(
            group_id=group,
            member_id=held[1],
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
        released = await holder.call(SHARE_ACK, 1, release)
        assert isinstance(released, sa.ShareAcknowledgeResponse) and released.error_code == 0
        assert await waiting == [(0, 2, 2)]
        await holder.close()
        await waiter.close()

    asyncio.run(run())


def test_room_an_acknowledging_fetch_frees_goes_to_the_member_already_waiting(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """A ShareFetch that acknowledges and acquires acquires only once its acknowledgements are
    read back from the log, so it holds no record during that write: the room they free in the
    in-flight window goes at once to a fetch already waiting for room (woken by the
    acknowledgement, answered without waiting for the write), not to the acknowledging fetch."""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    topic_id = _topic_id(bootstrap, topic)
    _set_group_config(shared_serve.bootstrap, group, "share.partition.max.record.locks", "100")  # the least

    async def run() -> None:
        holder, held = await _opened(shared_serve.port, group, topic, topic_id)
        waiter, second = await _wire_member(shared_serve.port, group, topic)
        _produce(bootstrap, topic, 200, 1, batch_records=100)
        assert await _wire_fetch(holder, held, 1, max_records=100) == [(0, 99, 1)]
        assert await _wire_fetch(waiter, (group, second, topic_id), 0) == []
        # The window is full: the waiter waits for room.
        waiting = asyncio.ensure_future(
            _wire_fetch(waiter, (group, second, topic_id), 1, max_wait_ms=30_000, max_records=100)
        )
        await asyncio.sleep(0.5)  # (lets it arrive and wait first)
        acked = await _wire_fetch(holder, held, 2, acks=[(0, 99, 1)], max_records=100)
        assert await waiting == [(100, 199, 1)]
        assert acked == []
        await holder.close()
        await waiter.close()

    asyncio.run(run())


def test_acknowledgements_a_closing_consumer_sends_after_leaving_the_group_count(
    shared_serve: ServeProcess, bootstrap: str, unique_name: str
) -> None:
    """librdkafka sends a closing consumer's pending acknowledgements (its final ShareAcknowledge)
    after its leave heartbeat. As in Kafka 4.2, the member's records go back when its share session
    ends, not when it leaves the group: those acknowledgements count and nothing it ACCEPTed is
    delivered again. (In implicit mode librdkafka 2.16 acknowledges nothing of its last poll at
    close: those records do come back, as they would from Kafka.)"""
    topic, group = unique_name, f"{unique_name}-sg"
    create_topic(bootstrap, topic, 1)
    (first,) = _joined(shared_serve, group, topic, 1, **{"share.acknowledgement.mode": "explicit"})
    values = _produce(bootstrap, topic, 100, 1)
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(got) < len(values):
        for m in first.poll(0.5):
            if m.error() is None:
                got.append(value_of(m))
                first.acknowledge(m, AcknowledgeType.ACCEPT)  # not committed: sent by close()
    first.close()
    assert sorted(got) == sorted(values)
    second = _consumer(shared_serve.bootstrap, group)
    second.subscribe([topic])
    again = _drain([second], 1, timeout=6)
    second.close()
    assert again == []
