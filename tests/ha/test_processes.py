"""Several ``groupcoord serve`` processes on one log, with real clients and the real local broker."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.coordinator.service.partitioning import partition_for
from tests.gateway.wire_client import WireClient
from tests.ha.sidecars import Background, Committer, Sidecar, stop_all, wait_for
from tests.inprocess_cli import cli
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

PARTITIONS = 6
NOT_COORDINATOR = 16


@pytest.fixture
def sidecars(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[list[Sidecar]]:
    ensure_topic(bootstrap, "t")
    made: list[Sidecar] = [
        Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", partitions=PARTITIONS) for i in range(3)
    ]
    try:
        yield made
    finally:
        stop_all(made)


def log_end_offsets(bootstrap: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)]
    finally:
        c.close()


def owner_of(sidecars: list[Sidecar], group: str) -> Sidecar:
    shard = partition_for(group, PARTITIONS)
    owners = [s for s in sidecars if s.alive and shard in s.owned()]
    assert len(owners) == 1, f"shard {shard} owned by {[s.address for s in owners]}"
    return owners[0]


def listed_groups(sidecar: Sidecar) -> list[str]:
    listed = cli("groups", "list", "-b", sidecar.address, "--json")
    if listed.returncode != 0:
        return []  # a shard is moving: try again
    names = sorted(g["group"] for g in json.loads(listed.stdout)["items"])
    assert len(names) == len(set(names)), f"a group listed twice: {names}"
    return names


def every_shard_owned_once(sidecars: list[Sidecar]) -> bool:
    owned = [p for s in sidecars if s.alive for p in s.owned()]
    return sorted(owned) == list(range(PARTITIONS))


def test_second_serve_on_a_taken_port_disturbs_nothing(
    bootstrap: str, sidecars: list[Sidecar], unique_name: str
) -> None:
    first = sidecars[0].start()
    committer = Committer(first.address, "clash")
    try:
        committer.commit_until_acked(60)
        before = log_end_offsets(bootstrap, unique_name)
        clash = Sidecar(bootstrap, unique_name, first.log.with_name("clash.log"), PARTITIONS, port=first.port)
        clash.spawn()
        assert clash.proc is not None
        assert clash.proc.wait(60) != 0
        errors = [r["msg"] for r in clash.records() if r["level"] == "ERROR"]
        assert len(errors) == 1 and errors[0].startswith("cannot listen on"), errors
        assert not [line for line in clash.lines() if "shard" in line]
        # Nothing was claimed: no shard epoch (or anything else) reached the log.
        assert log_end_offsets(bootstrap, unique_name) == before
        listed = cli("groups", "list", "-b", first.address, "--json")
        assert listed.returncode == 0, listed.stderr
        assert "clash" in {g["group"] for g in json.loads(listed.stdout)["items"]}
        acked = committer.commit_until_acked(30)
        assert committer.committed() == acked
    finally:
        committer.close()


def test_kill_9_of_the_owner_keeps_acknowledged_commits(sidecars: list[Sidecar]) -> None:
    for s in sidecars:
        s.spawn()
    for s in sidecars:
        s.wait_listening()
    wait_for(lambda: every_shard_owned_once(sidecars), 60, "every shard owned once")
    everyone = ",".join(s.address for s in sidecars)
    committer = Committer(everyone, "kill9")
    try:
        committer.commit_until_acked(60)
        victim = owner_of(sidecars, "kill9")
        with Background(committer):
            time.sleep(1)
            acked_before = len(committer.acked)
            victim.kill9()
            # Served again, by another process, with every acknowledged commit kept.
            wait_for(lambda: len(committer.acked) > acked_before + 3, 90, "commits acknowledged after the kill")
        survivors = [s for s in sidecars if s is not victim]
        assert owner_of(survivors, "kill9") in survivors
        committed = committer.committed()
        assert committed >= committer.acked[-1]
        assert committed in committer.sent
    finally:
        committer.close()


async def wire_commit(client: WireClient, group: str, offset: int) -> int:
    request = OffsetCommitRequest(
        group_id=group,
        topics=[
            OffsetCommitRequestTopic(
                name="t", partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)]
            )
        ],
    )
    cid = client.send(ApiKey.OFFSET_COMMIT, 8, request)
    got, response = await client.read(ApiKey.OFFSET_COMMIT, 8, timeout=60)
    assert got == cid and isinstance(response, OffsetCommitResponse)
    return int(response.topics[0].partitions[0].error_code)


def test_paused_owner_neither_applies_nor_acknowledges_after_resuming(sidecars: list[Sidecar]) -> None:
    pair = sidecars[:2]
    for s in pair:
        s.spawn()
    for s in pair:
        s.wait_listening()
    wait_for(lambda: every_shard_owned_once(pair), 60, "every shard owned once")
    zombie = owner_of(pair, "zombie")
    other = next(s for s in pair if s is not zombie)

    async def scenario() -> int:
        client = await WireClient.connect("127.0.0.1", zombie.port)
        try:
            assert await wire_commit(client, "zombie", 5) == 0
            zombie.signal(signal.SIGSTOP)
            committer = Committer(other.address, "zombie")
            try:
                # The other process takes the shard over once the paused one's session expires.
                await asyncio.to_thread(committer.commit_until_acked, 90)
                acked = committer.acked[-1]
                # Sent while paused; read by the zombie only once it resumes.
                cid = client.send(
                    ApiKey.OFFSET_COMMIT,
                    8,
                    OffsetCommitRequest(
                        group_id="zombie",
                        topics=[
                            OffsetCommitRequestTopic(
                                name="t",
                                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=999)],
                            )
                        ],
                    ),
                )
                await client.writer.drain()
                zombie.signal(signal.SIGCONT)
                got, response = await client.read(ApiKey.OFFSET_COMMIT, 8, timeout=60)
                assert got == cid and isinstance(response, OffsetCommitResponse)
                assert response.topics[0].partitions[0].error_code != 0
                # It notices it was replaced and rejoins placement.
                await asyncio.to_thread(
                    wait_for, lambda: any("lost" in line for line in zombie.lines()), 60, "the zombie noticing"
                )
                await asyncio.to_thread(
                    wait_for,
                    lambda: every_shard_owned_once(pair) and bool(zombie.owned()),
                    90,
                    "the zombie rejoining placement",
                )
                assert committer.committed() == acked
                again = await asyncio.to_thread(committer.commit_until_acked, 60)
                assert committer.committed() == again
                return acked
            finally:
                committer.close()
        finally:
            await client.close()

    asyncio.run(scenario())


def test_scale_1_to_3_to_1_under_load(sidecars: list[Sidecar]) -> None:
    everyone = ",".join(s.address for s in sidecars)
    sidecars[0].start()
    groups = [f"scale-{i}" for i in range(6)]
    committers = [Committer(everyone, g) for g in groups]
    try:
        for c in committers:
            c.commit_until_acked(60)
        with Background(committers[0]), Background(committers[1]):
            for s in sidecars[1:]:
                s.spawn()
            for s in sidecars[1:]:
                s.wait_listening()
            wait_for(lambda: every_shard_owned_once(sidecars) and all(s.owned() for s in sidecars), 90, "3 owners")
            # Every process lists every group exactly once, and describes groups it does not own.
            for s in sidecars:

                def lists_every_group(s: Sidecar = s) -> bool:
                    return listed_groups(s) == groups

                wait_for(lists_every_group, 60, f"every group listed through {s.address}")
            far = next(s for s in sidecars if s is not owner_of(sidecars, "scale-2"))
            described = cli("groups", "describe", "scale-2", "-b", far.address)
            assert described.returncode == 0, described.stderr
            for s in sidecars[1:]:
                assert s.stop() == 0
            wait_for(lambda: sidecars[0].owned() == set(range(PARTITIONS)), 90, "one owner again")
        for c in committers:
            acked = c.acked[-1]
            committed = c.committed()
            assert committed >= acked and committed in c.sent
            assert c.commit_until_acked(60) == c.committed()
    finally:
        for c in committers:
            c.close()


def test_rolling_restart_under_load(sidecars: list[Sidecar]) -> None:
    for s in sidecars:
        s.spawn()
    for s in sidecars:
        s.wait_listening()
    wait_for(lambda: every_shard_owned_once(sidecars), 60, "every shard owned once")
    everyone = ",".join(s.address for s in sidecars)
    committers = [Committer(everyone, f"rolling-{i}") for i in range(3)]
    try:
        for c in committers:
            c.commit_until_acked(60)
        with Background(committers[0]), Background(committers[1]), Background(committers[2]):
            for s in sidecars:
                before = [len(c.acked) for c in committers]
                assert s.stop() == 0
                s.start()

                # Every group is served again before the next process goes.
                def every_group_served(before: list[int] = before) -> bool:
                    return all(len(c.acked) > n for c, n in zip(committers, before, strict=True))

                wait_for(every_group_served, 90, f"commits acknowledged after restarting {s.address}")
        for c in committers:
            committed = c.committed()
            assert committed >= c.acked[-1] and committed in c.sent
        # A process restarted after a clean stop joins at once: its predecessor withdrew
        # (runtime/peers.py), so it neither removes it nor waits for the others to announce its shards.
        waited = [str(r["msg"]) for s in sidecars for r in s.records() if "placement: joining" in str(r["msg"])]
        assert waited == []
    finally:
        for c in committers:
            c.close()


@pytest.mark.slow
def test_a_graceful_stop_relays_the_moved_groups_requests_to_the_successor(sidecars: list[Sidecar]) -> None:
    """A client that keeps committing on its connection to a stopping owner is answered by the
    successor through it (``service/handover_relay.py``) rather than told NOT_COORDINATOR, and
    every commit acknowledged that way is kept."""
    pair = sidecars[:2]
    for s in pair:
        s.spawn()
    for s in pair:
        s.wait_listening()
    wait_for(lambda: sorted(p for s in pair if s.alive for p in s.owned()) == list(range(PARTITIONS)), 60, "shards")
    stopping, successor = pair
    group = next(g for g in (f"relay-{i}" for i in range(100)) if partition_for(g, PARTITIONS) in stopping.owned())

    async def commit_through_the_stop() -> int:
        client = await WireClient.connect("127.0.0.1", stopping.port)
        try:
            assert await wire_commit(client, group, 1) == 0
            stopping.signal(signal.SIGTERM)
            acked, offset = 1, 2
            while True:
                try:
                    code = await wire_commit(client, group, offset)
                except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
                    return acked  # the stopping process closed its listener
                if code == 0:
                    acked = offset
                offset += 1
                await asyncio.sleep(0.02)
        finally:
            await client.close()

    acked = asyncio.run(commit_through_the_stop())
    assert stopping.proc is not None and stopping.proc.wait(30) == 0
    relayed = [line for line in stopping.lines() if line.startswith("handover: ")]
    assert relayed and not relayed[-1].startswith("handover: 0 "), stopping.lines()[-10:]
    committer = Committer(successor.address, group)
    try:
        assert committer.committed() >= acked
    finally:
        committer.close()


@pytest.mark.slow
def test_a_stop_during_a_placement_rebalance_waits_for_it_and_hands_everything_over(sidecars: list[Sidecar]) -> None:
    """SIGTERM while a joining process's rebalance is under way: the stopping process leaves only
    once it ended (a LeaveGroup in the middle of one stalled the local broker's group for
    minutes), then hands over what that rebalance gave it, and every shard is served again."""
    first, stopping, joining = sidecars
    for s in (first, stopping):
        s.spawn()
    for s in (first, stopping):
        s.wait_listening()
    wait_for(lambda: sorted(p for s in (first, stopping) for p in s.owned()) == list(range(PARTITIONS)), 60, "shards")

    def rebalances() -> int:  # placement's own line (runtime/placement.py)
        return sum(1 for r in first.records() if str(r.get("msg", "")).startswith("placement rebalance"))

    seen = rebalances()
    joining.spawn()
    wait_for(lambda: rebalances() > seen, 60, "the rebalance")
    stopping.signal(signal.SIGTERM)
    assert stopping.proc is not None and stopping.proc.wait(60) == 0
    assert any(line.startswith("placement: stopping once the rebalance under way ended") for line in stopping.lines())
    joining.wait_listening()
    wait_for(lambda: every_shard_owned_once([first, joining]), 60, "every shard owned once by the other two")
