"""The shard runtime against a real broker: write path, read path, loading, failures."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest
from confluent_kafka import Producer

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.runtime import log as log_module
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.headers import make_headers
from groupcoord.coordinator.runtime.shard import ShardStatus
from groupcoord.coordinator.service.service import GroupCoordinatorService
from groupcoord.records import CoordinatorRecord, RecordType, encode
from groupcoord.records.definitions import OffsetCommitKey, OffsetCommitValue
from tests.integration.runtime_helpers import commit_request, fetch_request, running_service
from tests.messages import COMMIT_CONTEXT

pytestmark = pytest.mark.integration


def committed_offset(service: GroupCoordinatorService, group: str, topic: str, partition: int) -> int:
    shard = service.shard_for(group)
    value = shard.read(lambda s: s.offsets.get(group, topic, partition))
    return -1 if value is None else value.offset


def test_commit_then_fetch(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            response = await service.commit_offsets(
                commit_request("g1", "orders", {0: 5, 1: 7}, "meta"), COMMIT_CONTEXT
            )
            assert [p.error_code for t in response.topics for p in t.partitions] == [0, 0]
            (fetched,) = await service.fetch_offsets(fetch_request("g1", "orders", [0, 1, 2]))
            rows = [(p.partition_index, p.committed_offset, p.metadata) for p in fetched.topics[0].partitions]
            assert rows == [(0, 5, "meta"), (1, 7, "meta"), (2, -1, "")]

    asyncio.run(main())


def test_response_waits_until_the_record_is_read_back(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            shard = service.shard_for("stalled")
            service.runtime.tailer.stall()
            task = asyncio.ensure_future(
                service.commit_offsets(commit_request("stalled", "t", {0: 42}), COMMIT_CONTEXT)
            )
            await asyncio.sleep(1.5)
            # The record is in the log (the live state has it) but the reader has not read it
            # back, so the client has no answer and readers do not see it.
            assert not task.done()
            assert shard.live.offsets.get("stalled", "t", 0) is not None
            assert committed_offset(service, "stalled", "t", 0) == -1
            service.runtime.tailer.resume()
            response = await asyncio.wait_for(task, 10)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert committed_offset(service, "stalled", "t", 0) == 42
            assert shard.caught_up and shard.replay_matches()

    asyncio.run(main())


def test_answers_read_back_are_released_before_the_next_flush_runs(bootstrap: str, unique_name: str) -> None:
    """A write's records read back while the next flush is already queued on the loop release
    its answer before that flush's handlers run (``ShardHost.drain_reads``): in a mass join the
    flush ahead of the read-back was thousands of joins, and every answer of the batch read back
    waited for it."""

    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            shard = service.shard_for("g")
            tailer = service.runtime.tailer
            reported = threading.Event()
            report = tailer._on_records

            def reported_then_signal(*args):  # type: ignore[no-untyped-def]
                report(*args)
                reported.set()

            tailer._on_records = reported_then_signal
            record = CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("g", "t", 0), OffsetCommitValue(7))
            first = shard.submit(lambda state, now: Result("first", [record]))
            shard._flush()  # the first write is appended now, its answer waits for the read-back
            seen: list[bool] = []

            def note_first(state: object, now: int) -> Result[str]:
                seen.append(first.done())
                return Result("second")

            second = shard.submit(note_first)
            # The loop's next turn holds the second write's flush; the loop is held until the
            # reader has read the first write back and reported it, so its report comes after.
            assert reported.wait(30)
            assert await asyncio.wait_for(second, 10) == "second"
            assert seen == [True] and first.result() == "first"

    asyncio.run(main())


def test_two_runtimes_replaying_the_same_log_agree(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        async with running_service(bootstrap, unique_name, owner="first") as first:
            await asyncio.gather(
                *(
                    first.commit_offsets(
                        commit_request(f"group-{i % 13}", f"topic-{i % 3}", {i % 5: i}), COMMIT_CONTEXT
                    )
                    for i in range(400)
                )
            )
            before = {p: s.live.snapshot() for p, s in first.runtime.shards.items()}
            assert all(s.replay_matches() for s in first.runtime.shards.values())
        async with running_service(bootstrap, unique_name, owner="second") as second:
            after = {p: s.committed.snapshot() for p, s in second.runtime.shards.items()}
        assert after == before
        assert sum(len(s["offsets"]) for s in after.values()) == 13

    asyncio.run(main())


def _produce(bootstrap: str, topic: str, partition: int, items: list[tuple[bytes, bytes | None, list]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value, headers in items:
        producer.produce(topic, key=key, value=value, partition=partition, headers=headers)
    assert producer.flush(10) == 0


def test_an_unreadable_record_of_a_fenced_epoch_is_ignored(bootstrap: str, unique_name: str) -> None:
    """Records of an epoch older than the latest owner's are never applied, so a headerless
    (epoch 0) record written by anyone but the owners cannot take a shard down."""

    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            shard = service.partition_for("victim")
            await service.commit_offsets(commit_request("victim", "t", {0: 7}), COMMIT_CONTEXT)
        _produce(bootstrap, unique_name, shard, [(b"\x00\x01garbage", b"\xff\xff\xff", [])])
        async with running_service(bootstrap, unique_name) as service:
            assert service.runtime.shards[shard].status is ShardStatus.ACTIVE
            (fetched,) = await service.fetch_offsets(fetch_request("victim", "t", [0]))
            assert fetched.topics[0].partitions[0].committed_offset == 7

    asyncio.run(main())


def test_unreadable_record_fails_only_its_shard(bootstrap: str, unique_name: str) -> None:
    unretrieved: list[str] = []

    async def main() -> None:
        # A failed shard's own futures (its claim's write) count as retrieved: asyncio logged
        # "Future exception was never retrieved" at every such load.
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unretrieved.append(context["message"]))
        async with running_service(bootstrap, unique_name) as service:
            bad = service.partition_for("victim")
        # Written under the current owner's epoch, so the log rules do not set it aside.
        _produce(bootstrap, unique_name, bad, [(b"\x00\x01garbage", b"\xff\xff\xff", make_headers(1, 0, 1))])
        async with running_service(bootstrap, unique_name) as service:
            shard = service.runtime.shards[bad]
            assert shard.status is ShardStatus.FAILED
            assert f"topic {unique_name!r} partition {bad} offset 1" in (shard.error or "")
            response = await service.commit_offsets(commit_request("victim", "t", {0: 1}), COMMIT_CONTEXT)
            assert response.topics[0].partitions[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            other = next(g for g in (f"g{i}" for i in range(100)) if service.partition_for(g) != bad)
            response = await service.commit_offsets(commit_request(other, "t", {0: 1}), COMMIT_CONTEXT)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
        gc.collect()

    asyncio.run(main())
    assert not [m for m in unretrieved if "never retrieved" in m], unretrieved


def test_batch_cut_short_is_never_applied(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            partition = service.partition_for("cut")
            await service.commit_offsets(commit_request("cut", "t", {0: 1}), COMMIT_CONTEXT)
            epoch = service.runtime.shards[partition].epoch
        # Two records of a three-record batch reach the log, then the writer dies.
        partial = [
            encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("cut", "t", p), OffsetCommitValue(99)))
            for p in (0, 1)
        ]
        _produce(
            bootstrap, unique_name, partition, [(k, v, make_headers(epoch, i, 3)) for i, (k, v) in enumerate(partial)]
        )
        for owner in ("after-crash", "again"):
            async with running_service(bootstrap, unique_name, owner=owner) as service:
                assert committed_offset(service, "cut", "t", 0) == 1
                assert committed_offset(service, "cut", "t", 1) == -1
                await service.commit_offsets(commit_request("cut", "t", {2: 5}), COMMIT_CONTEXT)
                assert committed_offset(service, "cut", "t", 2) == 5

    asyncio.run(main())


def test_zombie_writes_are_ignored_on_replay(bootstrap: str, unique_name: str) -> None:
    async def main() -> None:
        async with running_service(bootstrap, unique_name, owner="old") as service:
            partition = service.partition_for("z")
            await service.commit_offsets(commit_request("z", "t", {0: 1}), COMMIT_CONTEXT)
            old_epoch = service.runtime.shards[partition].epoch
        async with running_service(bootstrap, unique_name, owner="new") as service:
            assert service.runtime.shards[partition].epoch == old_epoch + 1
        # The old owner, not knowing it was replaced, appends under its old epoch.
        k, v = encode(CoordinatorRecord(RecordType.OFFSET_COMMIT, OffsetCommitKey("z", "t", 0), OffsetCommitValue(666)))
        _produce(bootstrap, unique_name, partition, [(k, v, make_headers(old_epoch, 0, 1))])
        async with running_service(bootstrap, unique_name, owner="third") as service:
            assert committed_offset(service, "z", "t", 0) == 1

    asyncio.run(main())


def test_fatal_producer_error_replaces_the_writer_and_reloads(bootstrap: str, unique_name: str) -> None:
    from confluent_kafka import KafkaError

    async def main() -> None:
        async with running_service(bootstrap, unique_name) as service:
            await service.commit_offsets(commit_request("w", "t", {0: 1}), COMMIT_CONTEXT)
            shard = service.shard_for("w")
            old = service.runtime.writer
            fatal = KafkaError(KafkaError._FENCED, "fenced by a newer producer", fatal=True)
            # The report travels the way the writer's own reports do: through the runtime.
            report = shard.on_delivery
            service.runtime._delivered(
                old, lambda i, n, e, o: report(shard.generation, shard.next_offset, e, o, n), 1, fatal, -1
            )
            assert service.runtime.writer is not old
            await shard.wait_loaded()
            response = await service.commit_offsets(commit_request("w", "t", {0: 2}), COMMIT_CONTEXT)
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert committed_offset(service, "w", "t", 0) == 2

    asyncio.run(main())


def test_a_record_larger_than_the_log_accepts_fails_only_its_request(bootstrap: str, unique_name: str) -> None:
    """Issue 14: a commit whose record exceeds the log topic's max.message.bytes is refused
    before anything is applied; the shard keeps serving and its state matches the log."""
    from groupcoord.coordinator.runtime.log import LogTopicSpec
    from groupcoord.coordinator.runtime.runtime import max_record_bytes

    async def main() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            configs = {"cleanup.policy": "compact", "max.message.bytes": "100000"}
            service.runtime.max_record_bytes = max_record_bytes({}, LogTopicSpec(unique_name, 1, 1, configs))
            shard = service.shard_for("ok")
            generation = shard.generation
            huge = "g" * 150_000
            big, small = await asyncio.gather(
                service.commit_offsets(commit_request(huge, "t", {0: 1}), COMMIT_CONTEXT),
                service.commit_offsets(commit_request("ok", "t", {0: 2}), COMMIT_CONTEXT),
            )
            assert big.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            assert small.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert shard.status is ShardStatus.ACTIVE and shard.generation == generation  # no reload
            assert shard.live.offsets.get(huge, "t", 0) is None
            assert committed_offset(service, "ok", "t", 0) == 2
            assert shard.caught_up and shard.replay_matches()

    asyncio.run(main())


def test_a_record_the_writer_refuses_never_hangs_and_reloads_consistently(bootstrap: str, unique_name: str) -> None:
    """Issue 14, the fallback: when the writer itself refuses a record (MSG_SIZE_TOO_LARGE from
    producer.produce, here by disabling the shard's own size check), the request is answered,
    the shard reloads from the log and the refused write is nowhere."""

    async def main() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            await service.commit_offsets(commit_request("before", "t", {0: 7}), COMMIT_CONTEXT)
            service.runtime.max_record_bytes = 100_000_000
            shard = service.shard_for("before")
            huge = "g" * 1_200_000  # above the producer's message.max.bytes (1,000,000)
            response = await asyncio.wait_for(
                service.commit_offsets(commit_request(huge, "t", {0: 1}), COMMIT_CONTEXT), 10
            )
            assert response.topics[0].partitions[0].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await asyncio.wait_for(shard.wait_loaded(), 30)
            assert shard.status is ShardStatus.ACTIVE
            assert shard.live.offsets.get(huge, "t", 0) is None
            assert committed_offset(service, "before", "t", 0) == 7
            after = await service.commit_offsets(commit_request("before", "t", {0: 8}), COMMIT_CONTEXT)
            assert after.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert shard.caught_up and shard.replay_matches()

    asyncio.run(main())


def test_the_log_topic_is_created_compacted_with_a_compaction_lag(bootstrap: str, unique_name: str) -> None:
    """Compaction must not act on a cut batch or a zombie's records before the next owner's load
    re-states the valid values: the log topic is created with min.compaction.lag.ms."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    from groupcoord.coordinator.runtime.log import LogTopicSpec, ensure_log_topic

    assert ensure_log_topic({"bootstrap.servers": bootstrap}, LogTopicSpec(unique_name, 2, 1)) == 2
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_configs([ConfigResource("topic", unique_name)]).values()
    configs = future.result(10)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["min.compaction.lag.ms"].value == "3600000"


def test_a_commit_to_a_shard_paused_as_idle_is_answered(
    bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader pauses an idle shard's partition; the shard's own append resumes it (peeks
    are put off here, so nothing else would read the record back)."""
    monkeypatch.setattr(log_module, "TAILER_PEEK_EVERY_S", 3600.0)

    async def main() -> None:
        async with running_service(bootstrap, unique_name, partitions=1) as service:
            tailer = service.runtime.tailer
            deadline = asyncio.get_running_loop().time() + 10
            while tailer.paused != {0}:
                assert asyncio.get_running_loop().time() < deadline, "the idle partition was never paused"
                await asyncio.sleep(0.05)
            response = await asyncio.wait_for(
                service.commit_offsets(commit_request("idle", "t", {0: 9}), COMMIT_CONTEXT), 10
            )
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert committed_offset(service, "idle", "t", 0) == 9

    asyncio.run(main())


def test_a_shard_count_unlike_the_existing_log_topic_is_said_and_the_topic_wins(
    bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The log topic's partition count is fixed at its creation; a different setting later is
    not applied, and a process started with one says so (found by an operator probe)."""

    async def main() -> None:
        async with running_service(bootstrap, unique_name, partitions=2):
            pass
        with caplog.at_level("WARNING", logger="groupcoord.coordinator.runtime.runtime"):
            async with running_service(bootstrap, unique_name, partitions=3) as service:
                assert service.runtime.partitions == 2
        said = [r.getMessage() for r in caplog.records if "applies only when the topic is created" in r.getMessage()]
        assert said == [
            f"log topic {unique_name} has 2 partitions: the setting partitions=3 applies only when the topic is "
            "created; serving 2 shards"
        ]

    asyncio.run(main())
