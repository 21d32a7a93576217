"""The log reader across a slow link: every read-back completes, whatever the round trip to the
broker, and an idle partition's peeks still read what another process writes.

A TCP proxy that delays every chunk both ways sits between the clients and the broker (which
advertises the proxy, so every connection goes through it). With a round trip longer than the
reader's hot time (1 s), a partition used to be paused again before its own append's record came
back, and each later peek (25 ms) ended long before a fetch could be answered: a pause drops the
answer of a fetch on its way, so the record was never read and the write never acknowledged
(a chaos probe: 130 ms one-way, a shard stuck, then reloaded after 60 s)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.runtime.log import LogTailer
from groupcoord.local_broker import LocalBroker, free_port
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue
from tests.client_records import log_headers
from tests.runtime.test_tailer import new_load

ONE_WAY_S = 0.5


class DelayProxy:
    """Forwards ``port`` to ``upstream``, every chunk ``delay`` seconds late, in order."""

    def __init__(self, port: int, upstream: tuple[str, int], delay: float) -> None:
        self.port, self.upstream, self.delay = port, upstream, delay
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> DelayProxy:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _stop(self) -> None:
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        self._loop.create_task(self._pump(client_r, broker_w))
        self._loop.create_task(self._pump(broker_r, client_w))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await chunks.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not data:
                    writer.close()
                    return
                writer.write(data)

        sender = self._loop.create_task(send())
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                chunks.put_nowait((time.monotonic() + self.delay, data))
        chunks.put_nowait((time.monotonic() + self.delay, b""))
        await sender


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_reads_back_and_peeks_across_a_round_trip_longer_than_the_hot_time(tmp_path: Path) -> None:
    broker_port, proxy_port = free_port(), free_port()
    broker = LocalBroker(port=broker_port, advertised=("127.0.0.1", proxy_port), log_file=tmp_path / "b.log")
    broker.start()
    try:
        topic = "slow_link"
        key, value = encode(
            CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), OffsetCommitValue(1))
        )
        with DelayProxy(proxy_port, ("127.0.0.1", broker_port), 0.0) as proxy:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{proxy_port}"})
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{proxy_port}", "linger.ms": 0})
            delivered: list[int] = []

            def produce() -> None:
                def report(err: KafkaError | None, msg: Message) -> None:
                    assert err is None
                    delivered.append(msg.offset() or 0)

                producer.produce(
                    topic, key=key, value=value, headers=log_headers(0, 0, 1), partition=0, on_delivery=report
                )
                producer.flush(30)

            produce()  # the record a load reads first, as a shard's ShardEpoch
            loaded = threading.Event()
            read: list[int] = []
            tailer = LogTailer(
                {"bootstrap.servers": f"127.0.0.1:{proxy_port}"},
                topic,
                on_records=lambda p, g, msgs: read.extend(m.offset() or 0 for m in msgs),
                on_loaded=lambda p, g, outcome: loaded.set(),
                on_error=lambda p, g, err: None,
            )
            try:
                tailer.load(0, 1, new_load())
                assert loaded.wait(20)
                proxy.delay = ONE_WAY_S  # the link turns slow under a running reader (the probe's way)
                assert wait_for(lambda: tailer.paused == {0}, 10)

                # This process's append: reported, then read back, however long that takes.
                produce()
                tailer.expect(0, delivered[-1])
                assert wait_for(lambda: read == [1], 15), read

                # Another writer's record, while paused: a peek reads it.
                assert wait_for(lambda: tailer.paused == {0}, 10)
                produce()
                assert wait_for(lambda: read == [1, 2], 15), read
            finally:
                tailer.close()
    finally:
        broker.stop(graceful=False)
