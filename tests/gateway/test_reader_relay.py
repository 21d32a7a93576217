"""The reader relay: the sidecar's consumers see the cluster's ApiVersions with Fetch capped at v12,
every broker at a loopback listener of the relay, and read through it as they would directly
(issue 22, item 3: librdkafka's SIGSEGV on Tansu's Fetch answer for a deleted topic)."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from groupcoord.coordinator.gateway.apis import APIS, ApiKey
from groupcoord.coordinator.gateway.protocol import decode_response, encode_response
from groupcoord.coordinator.gateway.reader_relay import FETCH_MAX_VERSION, ReaderRelay, cap_api_versions, relayable
from groupcoord.coordinator.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    ApiVersionsResponseFinalizedFeatureKey,
)
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from tests.gateway.wire_client import WireClient
from tests.topics import ensure_topic


def _answer(version: int, error: int = 0) -> bytearray:
    body = ApiVersionsResponse(
        error_code=error,
        api_keys=[
            ApiVersionsResponseApiVersion(api_key=ApiKey.FETCH, min_version=4, max_version=17),
            ApiVersionsResponseApiVersion(api_key=ApiKey.METADATA, min_version=0, max_version=99),
            ApiVersionsResponseApiVersion(api_key=ApiKey.PRODUCE, min_version=3, max_version=12),
        ],
        finalized_features_epoch=7,
        finalized_features=[
            ApiVersionsResponseFinalizedFeatureKey(name="metadata.version", max_version_level=27, min_version_level=27)
        ],
    )
    return bytearray(encode_response(ApiKey.API_VERSIONS, version, 5, body)[4:])


@pytest.mark.parametrize("version", [0, 2, 3, 4])
def test_fetch_and_the_rewritten_apis_are_capped_and_nothing_else_changes(version: int) -> None:
    payload = _answer(version)
    cap_api_versions(payload, version)
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, version, memoryview(payload))
    assert correlation_id == 5 and isinstance(body, ApiVersionsResponse)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert ranges == {
        ApiKey.FETCH: (4, FETCH_MAX_VERSION),
        ApiKey.METADATA: (0, APIS[ApiKey.METADATA].max_version),
        ApiKey.PRODUCE: (3, 12),
    }
    if version >= 3:
        assert body.finalized_features_epoch == 7 and body.finalized_features[0].name == "metadata.version"


def test_an_answer_with_an_error_is_passed_on_as_it_is() -> None:
    payload = _answer(0, error=35)
    before = bytes(payload)
    cap_api_versions(payload, 0)
    assert bytes(payload) == before


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, True),
        ({"security.protocol": "PLAINTEXT"}, True),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"}, True),
        ({"security.protocol": "sasl_plaintext", "sasl.mechanisms": "PLAIN"}, True),
        # Kerberos names the broker's host in its ticket; librdkafka's default mechanism.
        ({"security.protocol": "SASL_PLAINTEXT"}, False),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, False),
        ({"security.protocol": "SSL"}, False),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, False),
    ],
)
def test_only_plaintext_without_kerberos_is_relayed(config: dict[str, str], expected: bool) -> None:
    assert relayable(config) is expected


async def _through(relay: ReaderRelay, topic: str) -> tuple[ApiVersionsResponse, MetadataResponse]:
    host, port = relay.bootstrap.split(",")[0].rsplit(":", 1)
    client = await WireClient.connect(host, int(port))
    try:
        versions = await client.call(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        metadata = await client.call(ApiKey.METADATA, 12, MetadataRequest(topics=[MetadataRequestTopic(name=topic)]))
        assert isinstance(versions, ApiVersionsResponse) and isinstance(metadata, MetadataResponse)
        return versions, metadata
    finally:
        await client.close()


def _produced(bootstrap: str, topic: str, values: list[bytes], linger_ms: int) -> list[bytes]:
    """``values`` written to partition 0 of ``topic``, in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0
    return values


def _read_from_the_start(consumer: Consumer, topic: str, expected: int) -> list[bytes]:
    """The values of partition 0 of ``topic``, read from offset 0 to its end."""
    consumer.assign([TopicPartition(topic, 0, 0)])
    read: list[bytes] = []
    while True:
        msg = consumer.poll(20)
        assert msg is not None, f"read {len(read)} of {expected}"
        if msg.error() is not None:
            return read
        read.append(msg.value() or b"")


def test_the_cluster_is_seen_through_the_relay(bootstrap: str, unique_name: str) -> None:
    ensure_topic(bootstrap, unique_name, 2)
    relay = ReaderRelay(bootstrap).start()
    try:
        versions, metadata = asyncio.run(_through(relay, unique_name))
        fetch = next(k for k in versions.api_keys if k.api_key == ApiKey.FETCH)
        assert fetch.max_version == FETCH_MAX_VERSION
        assert metadata.brokers and all(b.host == "127.0.0.1" for b in metadata.brokers)
        broker_ports = {int(address.rsplit(":", 1)[1]) for address in bootstrap.split(",")}
        assert not broker_ports & {b.port for b in metadata.brokers}
        assert [t.name for t in metadata.topics] == [unique_name] and len(metadata.topics[0].partitions) == 2

        # The advertised listener reaches the broker too, and a coordinator is advertised there.
        async def coordinator() -> FindCoordinatorResponse:
            client = await WireClient.connect(metadata.brokers[0].host, metadata.brokers[0].port)
            try:
                answer = await client.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=unique_name))
                assert isinstance(answer, FindCoordinatorResponse)
                return answer
            finally:
                await client.close()

        found = asyncio.run(coordinator())
        assert found.error_code == 0 and (found.host, found.port) == (
            metadata.brokers[0].host,
            metadata.brokers[0].port,
        )
    finally:
        relay.close()


def test_a_consumer_reads_and_commits_through_the_relay(bootstrap: str, unique_name: str) -> None:
    ensure_topic(bootstrap, unique_name)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(500):
        producer.produce(unique_name, value=f"{i}".encode() * 100, partition=0)
    assert producer.flush(30) == 0
    relay = ReaderRelay(bootstrap).start()
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        relay.reader_config(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.partition.eof": True,
                "enable.auto.commit": False,
            }
        )
    )
    try:
        assert _read_from_the_start(consumer, unique_name, 500) == [f"{i}".encode() * 100 for i in range(500)]
        consumer.commit(offsets=[TopicPartition(unique_name, 0, 500)], asynchronous=False)
        assert consumer.committed([TopicPartition(unique_name, 0)], timeout=10)[0].offset == 500
    finally:
        consumer.close()
        relay.close()


def test_answers_of_many_reads_arrive_whole(bootstrap: str, unique_name: str) -> None:
    """Fetch answers of several MB pass through the relay in many reads (of at most 256 KiB each)."""
    ensure_topic(bootstrap, unique_name)
    values = _produced(bootstrap, unique_name, [bytes([i]) * 300_000 for i in range(40)], linger_ms=50)
    relay = ReaderRelay(bootstrap).start()
    consumer = Consumer(
        relay.reader_config(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"g-{uuid.uuid4().hex[:8]}",
                "enable.partition.eof": True,
                "fetch.max.bytes": 20_000_000,
                "max.partition.fetch.bytes": 20_000_000,
            }
        )
    )
    try:
        assert _read_from_the_start(consumer, unique_name, len(values)) == values
    finally:
        consumer.close()
        relay.close()


def test_an_unreadable_frame_closes_only_its_connection(bootstrap: str, unique_name: str) -> None:
    ensure_topic(bootstrap, unique_name)
    relay = ReaderRelay(bootstrap).start()
    host, port = relay.bootstrap.split(",")[0].rsplit(":", 1)

    async def garbage() -> bool:
        client = await WireClient.connect(host, int(port))
        client.send_raw(b"\xff\xff\xff\xfe")  # a negative frame length
        try:
            return await client.closed_by_peer()
        finally:
            await client.close()

    try:
        assert asyncio.run(garbage())
        versions, _ = asyncio.run(_through(relay, unique_name))
        assert any(k.api_key == ApiKey.FETCH for k in versions.api_keys)
    finally:
        relay.close()


def _socket_with(local: tuple[str, int], peer: tuple[str, int]) -> socket.socket | None:
    """This process's socket whose ends are ``local`` and ``peer`` (a duplicate of it), if any."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            sock = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            if sock.type == socket.SOCK_STREAM and sock.getsockname() == local and sock.getpeername() == peer:
                return sock
        except OSError:
            pass
        sock.close()
    return None


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="finds the relay's socket through /proc")
def test_the_relay_sends_every_answer_at_once(bootstrap: str, unique_name: str) -> None:
    """TCP_NODELAY on the relay's end of every client connection. asyncio sets it only on sockets
    made with proto IPPROTO_TCP, which an accepted socket of ``socket.create_server`` is not: Nagle
    then held each Fetch answer's rest behind its first bytes until the client's delayed ACK (40 ms
    per read-back of an acknowledged write; a 300-join flood's sessions expired through it)."""
    ensure_topic(bootstrap, unique_name)
    relay = ReaderRelay(bootstrap).start()
    host, port = relay.bootstrap.split(",")[0].rsplit(":", 1)

    async def relay_side() -> int:
        client = await WireClient.connect(host, int(port))
        try:
            await client.call(
                ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")
            )
            mine = client.writer.get_extra_info("sockname")
            sock = _socket_with((host, int(port)), mine)
            assert sock is not None, "the relay's end of the connection not found"
            with sock:
                return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            await client.close()

    try:
        assert asyncio.run(relay_side()) != 0
    finally:
        relay.close()


# The log reader's fetches wait in the relay (``tail_bootstrap``) for ``kick``. Its consumer here
# waits a minute at the broker: a record reaching it within the tests' poll timeout (20 s) came
# because the relay let the fetch go when told of the write, not because any wait ended.
_LONG_WAIT = {
    "fetch.wait.max.ms": 60_000,
    "enable.partition.eof": True,
    "enable.auto.commit": False,
    # Its telemetry requests (every 5 s) would let a held fetch go too.
    "enable.metrics.push": False,
}


def _tail_consumer(relay: ReaderRelay, bootstrap: str, topic: str) -> Consumer:
    """A log reader that read the partition's one record (its first fetch, at once: the record is
    there) and its end: its next fetch asks again for the same partition, and waits."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=b"first", partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer(
        relay.reader_config(
            {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}", **_LONG_WAIT}, tails=True
        )
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    msg = consumer.poll(20)
    assert msg is not None and msg.error() is None and msg.value() == b"first"
    # librdkafka tells the end from an answer without records: let the fetch asking for them go.
    relay.kick()
    msg = consumer.poll(20)
    assert msg is not None and msg.error() is not None, "the end of the partition was not reached"
    return consumer


def test_the_log_readers_fetch_goes_on_when_a_write_lands(bootstrap: str, unique_name: str) -> None:
    ensure_topic(bootstrap, unique_name)
    producer = Producer({"bootstrap.servers": bootstrap})
    relay = ReaderRelay(bootstrap).start()
    consumer = _tail_consumer(relay, bootstrap, unique_name)
    try:
        for i in range(3):
            producer.produce(unique_name, value=b"written-%d" % i, partition=0)
            assert producer.flush(10) == 0
            relay.kick()  # what serve's log writer does once the write is acknowledged
            msg = consumer.poll(20)
            assert msg is not None and msg.error() is None and msg.value() == b"written-%d" % i
    finally:
        consumer.close()  # (with a fetch held in the relay: librdkafka waits for its answer)
        relay.close()


def _fetch_v12(correlation_id: int, topic: str, wait_ms: int, offset: int = 0) -> bytes:
    """Fetch v12 of partition 0 from ``offset``, as librdkafka writes one (no fetch session)."""
    name = topic.encode()
    body = struct.pack(">iiiibii", -1, wait_ms, 1, 1 << 20, 0, 0, -1)
    body += b"\x02" + bytes([len(name) + 1]) + name  # one topic
    body += b"\x02" + struct.pack(">iiqiqi", 0, -1, offset, -1, -1, 1 << 20) + b"\x00"  # one partition
    body += b"\x00" + b"\x01" + b"\x01" + b"\x00"  # topic tags, no forgotten topics, rack "", tags
    header = struct.pack(">hhih", ApiKey.FETCH, 12, correlation_id, 4) + b"test" + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _relay_after_one_record(bootstrap: str, topic: str) -> tuple[Producer, ReaderRelay, str, int]:
    """A relay, its log readers' listener, and ``topic`` holding one record ("first") at offset 0."""
    ensure_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=b"first", partition=0)
    assert producer.flush(10) == 0
    relay = ReaderRelay(bootstrap).start()
    host, port = relay.tail_bootstrap.split(",")[0].rsplit(":", 1)
    return producer, relay, host, int(port)


def test_another_request_is_not_kept_behind_a_held_fetch(bootstrap: str, unique_name: str) -> None:
    """Answers come in the order of the requests, as from a broker: a request that follows a held
    fetch lets it go first."""
    producer, relay, host, port = _relay_after_one_record(bootstrap, unique_name)

    async def answered_in_order() -> list[int]:
        client = await WireClient.connect(host, port)
        try:
            # The record is there: answered at once, and small. The same fetch again waits (a
            # minute) in the relay, until the next request comes.
            client.send_raw(_fetch_v12(1, unique_name, 60_000))
            first = await client.read_frame(20)
            client.send_raw(_fetch_v12(2, unique_name, 60_000))
            client.send(
                ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
            )
            later = [await client.read_frame(20), await client.read_frame(20)]
            return [struct.unpack_from(">i", frame)[0] for frame in [first, *later]]
        finally:
            await client.close()

    try:
        assert asyncio.run(answered_in_order()) == [1, 2, 3]
    finally:
        relay.close()


def test_a_held_fetch_of_a_reader_behind_goes_on_with_time_to_find_the_records(
    bootstrap: str, unique_name: str
) -> None:
    """Told the reader is behind, the relay lets its held fetch go to the broker with its wait
    (at least 100 ms), not 1 ms: a broker may spend the wait finding the records (Tansu's memory
    store lists a partition's batches within it, and a 1 ms fetch of a long partition comes back
    empty). Seen by what the broker does with the wait: the fetch, for the record after the last
    one, waits at the broker and is answered with the record written while it waited there."""
    producer, relay, host, port = _relay_after_one_record(bootstrap, unique_name)

    async def answer_after_behind() -> bytes:
        client = await WireClient.connect(host, port)
        try:
            client.send_raw(_fetch_v12(1, unique_name, 3_000))  # the record is there: at once, small
            await client.read_frame(20)
            client.send_raw(_fetch_v12(2, unique_name, 3_000, offset=1))  # the same fetch again: held
            await asyncio.sleep(0.2)
            relay.behind()
            await asyncio.sleep(0.3)  # at the broker now, waiting (at 1 ms it would be answered)
            producer.produce(unique_name, value=b"written-while-waiting", partition=0)
            assert producer.flush(10) == 0
            return await client.read_frame(20)
        finally:
            await client.close()

    try:
        answer = asyncio.run(answer_after_behind())
        assert struct.unpack_from(">i", answer)[0] == 2
        assert b"written-while-waiting" in answer, "the held fetch went to the broker without its wait"
    finally:
        relay.close()


def test_a_log_read_whole_through_the_readers_listeners(bootstrap: str, unique_name: str) -> None:
    """A load's answers (MBs) let the next fetch through at once; all of it arrives, in order."""
    ensure_topic(bootstrap, unique_name)
    values = _produced(bootstrap, unique_name, [b"%06d" % i * 50 for i in range(20_000)], linger_ms=20)
    relay = ReaderRelay(bootstrap).start()
    consumer = Consumer(
        relay.reader_config(
            {"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.partition.eof": True},
            tails=True,
        )
    )
    try:
        assert _read_from_the_start(consumer, unique_name, len(values)) == values
    finally:
        consumer.close()
        relay.close()
