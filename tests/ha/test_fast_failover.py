"""Shards move before the placement session timeout when a process stops or dies (issue #26, item 5),
and never away from a process that is only paused.

The session timeout here is long (20 s), and every wait for the move is bounded below it: a move
that waited for the session timeout fails the test. (On the local broker a rebalance itself takes
half the rebalance timeout, which librdkafka keeps at least the session timeout: ~10 s here.)
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from groupcoord.coordinator.config import PLACEMENT_GROUP_PREFIX
from groupcoord.coordinator.runtime.placement import NODE_ID_BASE
from groupcoord.coordinator.service.partitioning import partition_for
from tests.ha.sidecars import Background, Committer, Sidecar, stop_all, wait_for
from tests.topics import ensure_topic

pytestmark = pytest.mark.integration

PARTITIONS = 4
SESSION_TIMEOUT_MS = 20_000
# Below the session timeout: only a move that did not wait for it gets here in time.
MOVE_BOUND_S = 0.9 * SESSION_TIMEOUT_MS / 1000
# Below the placement rebalance after a LeaveGroup (~10 s on the local broker with these
# settings): only shards handed over ahead of it get a commit acknowledged in time.
HANDOVER_BOUND_S = 0.3 * SESSION_TIMEOUT_MS / 1000


@pytest.fixture
def pair(bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[list[Sidecar]]:
    ensure_topic(bootstrap, "t")
    env = {"GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS)}
    made = [Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", PARTITIONS, env=env) for i in range(2)]
    try:
        for s in made:
            s.spawn()
        for s in made:
            s.wait_listening()
        # Both own shards (the second one's join is a rebalance of its own), each shard once.
        wait_for(lambda: all(s.owned() for s in made) and shards_owned(made) == list(range(PARTITIONS)), 90, "2 owners")
        yield made
    finally:
        stop_all(made)


def shards_owned(sidecars: list[Sidecar]) -> list[int]:
    return sorted(p for s in sidecars if s.alive for p in s.owned())


def group_owned_by(sidecars: list[Sidecar], victim: Sidecar) -> str:
    """A group whose shard the victim owns."""
    return next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, PARTITIONS) in victim.owned())


def test_sigterm_hands_the_shards_over_without_waiting_for_the_session_timeout(pair: list[Sidecar]) -> None:
    leaving, staying = pair
    group = group_owned_by(pair, leaving)
    committer = Committer(f"{leaving.address},{staying.address}", group)
    try:
        committer.commit_until_acked(60)
        assert leaving.stop() == 0
        assert any("placement left" in line for line in leaving.lines())
        wait_for(lambda: staying.owned() == set(range(PARTITIONS)), MOVE_BOUND_S, "the shards handed over")
        acked = committer.commit_until_acked(60)
        assert committer.committed() == acked
    finally:
        committer.close()


def test_sigterm_hands_the_shards_to_a_survivor_ahead_of_the_rebalance_and_loses_no_commit(
    pair: list[Sidecar],
) -> None:
    """Commits keep coming while the owner stops: the survivor serves the group before the
    placement rebalance ends, and the committed offset is never below one acknowledged."""
    leaving, staying = pair
    group = group_owned_by(pair, leaving)
    committer = Committer(f"{leaving.address},{staying.address}", group)
    try:
        committer.commit_until_acked(60)
        with Background(committer):
            assert leaving.stop() == 0
            before = committer.acked[-1]
            wait_for(lambda: committer.acked[-1] > before, HANDOVER_BOUND_S, "a commit acknowledged by the survivor")
        assert any("taking over shards" in str(r["msg"]) for r in staying.records())
        assert any("handed over ahead of the rebalance" in line for line in leaving.lines())
        # The survivor's state holds every acknowledged commit (a later one, sent but never
        # answered, may have been applied too).
        committed = committer.committed()
        assert committed >= max(committer.acked) and committed in committer.sent
        acked = committer.commit_until_acked(60)
        assert committer.committed() == acked
        wait_for(lambda: staying.owned() == set(range(PARTITIONS)), 60, "the rebalance confirmed the move")
    finally:
        committer.close()


def test_kill_9_is_noticed_by_the_peer_before_the_session_timeout(pair: list[Sidecar]) -> None:
    victim, survivor = pair
    group = group_owned_by(pair, victim)
    committer = Committer(f"{victim.address},{survivor.address}", group)
    try:
        committer.commit_until_acked(60)
        victim.kill9()
        wait_for(lambda: survivor.owned() == set(range(PARTITIONS)), MOVE_BOUND_S, "the dead peer's shards moved")
        assert any("placement evicted" in str(r["msg"]) for r in survivor.records())
        acked = committer.commit_until_acked(60)
        assert committer.committed() == acked
    finally:
        committer.close()


def test_a_paused_process_is_not_taken_for_dead(pair: list[Sidecar]) -> None:
    paused, other = pair
    group = group_owned_by(pair, paused)
    committer = Committer(paused.address, group)
    try:
        committer.commit_until_acked(60)
        owned = paused.owned()
        paused.signal(signal.SIGSTOP)
        try:
            # Many probe rounds (0.5 s each, two refusals in a row would do), well within the session timeout.
            time.sleep(5)
            assert not any("evicted" in str(r["msg"]) for r in other.records())
            assert not other.owned() & owned
        finally:
            paused.signal(signal.SIGCONT)
        # Still its shards' owner: commits through it are acknowledged, and they are what is committed.
        acked = committer.commit_until_acked(30)
        assert paused.owned() == owned
        assert committer.committed() == acked
    finally:
        committer.close()


def test_sigterm_of_a_static_member_hands_its_shards_over(bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    """With static membership (chosen where the cluster's group coordinator is modern; here a
    groupcoord in front of the local broker stands in for one) librdkafka sends no LeaveGroup at
    close: the process removes its own member, or its shards would wait for the session timeout."""
    ensure_topic(bootstrap, "t")
    env = {"GROUPCOORD_PLACEMENT__SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS)}
    front = Sidecar(bootstrap, f"{unique_name}-front", tmp_path / "front.log").start()
    made = [Sidecar(front.address, unique_name, tmp_path / f"b{i}.log", PARTITIONS, env=env) for i in range(2)]
    try:
        for s in made:
            s.start()
        assert any("static membership" in line for line in made[0].lines())
        wait_for(lambda: all(s.owned() for s in made) and shards_owned(made) == list(range(PARTITIONS)), 90, "2 owners")
        leaving, staying = made
        assert leaving.stop() == 0
        wait_for(lambda: staying.owned() == set(range(PARTITIONS)), MOVE_BOUND_S, "the shards handed over")
    finally:
        stop_all([*made, front])


def _member_in_directory(directory: Consumer, port: int) -> bool:
    """Whether the directory has an entry of the process listening on ``port`` that names its member."""
    for msg in directory.consume(num_messages=100, timeout=0.5):
        if msg.error() is None and msg.value():
            entry = json.loads(msg.value() or b"{}")
            if entry.get("port") == port and entry.get("member"):
                return True
    return False


def test_a_process_killed_after_joining_and_before_announcing_any_shard_is_removed(
    bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A process is in the placement group from its first JoinGroup: the rebalance its join starts
    assigns it shards, and killed before it announces them (a process restarted a moment ago, say)
    it would hold them until its session timed out. It names its member in the directory at its
    first JoinGroup, and peers watch it from then on."""
    ensure_topic(bootstrap, "t")
    made = [Sidecar(bootstrap, unique_name, tmp_path / f"serve{i}.log", PARTITIONS) for i in range(2)]
    joiner = Sidecar(bootstrap, unique_name, tmp_path / "joiner.log", PARTITIONS)
    directory = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{unique_name}-test"})
    directory.assign([TopicPartition(f"{unique_name}-directory", 0, OFFSET_BEGINNING)])
    try:
        for s in made:
            s.spawn()
        for s in made:
            s.wait_listening()
        wait_for(lambda: all(s.owned() for s in made) and shards_owned(made) == list(range(PARTITIONS)), 90, "2 owners")
        joiner.spawn()
        # The broker holds a JoinGroup for half the session timeout (3 s here) before the rebalance
        # assigns anything: the joiner dies in the group, holding no shard yet.
        wait_for(lambda: _member_in_directory(directory, joiner.port), 60, "the joiner's member in the directory")
        joiner.kill9()
        assert not joiner.owned()

        def evicted() -> bool:
            return any(
                "placement evicted" in str(r["msg"]) and f":{joiner.port} " in str(r["msg"])
                for s in made
                for r in s.records()
            )

        wait_for(evicted, 30, "a peer removed the dead joiner")
        wait_for(lambda: shards_owned(made) == list(range(PARTITIONS)), 30, "every shard owned by the two again")
    finally:
        directory.close()
        stop_all([joiner, *made])


def _announced_owners(bootstrap: str, topic: str) -> set[int]:
    """The node ids the placement group's committed offsets name as shard owners."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    asked = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(f"{PLACEMENT_GROUP_PREFIX}{topic}")])
    answer = next(iter(asked.values())).result(10)
    return {tp.offset for tp in answer.topic_partitions or [] if tp.topic == topic and tp.offset >= NODE_ID_BASE}


def test_no_process_joins_while_a_dead_process_still_announces_shards(
    bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A join starts a placement rebalance; on the local broker one started in the moment a peer
    removes a dead leader leaves the group with that leader for good (no rebalance completes
    again). A process starting while a dead one still announces shards joins once the others have
    taken them over. (The survivor leaves the dead process to the session timeout here, so that the
    dead process announces its shards for seconds.)"""
    ensure_topic(bootstrap, "t")
    survivor = Sidecar(
        bootstrap,
        unique_name,
        tmp_path / "survivor.log",
        PARTITIONS,
        env={"GROUPCOORD_PLACEMENT__FAST_FAILOVER": "false"},
    )
    victim = Sidecar(bootstrap, unique_name, tmp_path / "victim.log", PARTITIONS)
    joiner = Sidecar(bootstrap, unique_name, tmp_path / "joiner.log", PARTITIONS)
    made = [survivor, victim]
    try:
        for s in made:
            s.spawn()
        for s in made:
            s.wait_listening()
        wait_for(lambda: all(s.owned() for s in made) and shards_owned(made) == list(range(PARTITIONS)), 90, "2 owners")
        # What the joiner reads: both processes announce their shards (a process killed before its
        # announcement is read holds nothing as far as the others know, and nobody waits for it).
        wait_for(lambda: len(_announced_owners(bootstrap, unique_name)) == 2, 30, "both owners announced")
        victim.kill9()
        killed = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        joiner.spawn()

        def joined() -> str | None:
            return next((str(r["ts"]) for r in joiner.records() if str(r["msg"]).startswith("placement member ")), None)

        # Waiting to join, the joiner already answers clients: its Metadata lists the survivor,
        # which owns shards, or a client bootstrapped there drops a live coordinator (its answers
        # listed no other process until its wait ended; a 10 s recovery in the failover drill).
        wait_for(
            lambda: survivor.address in _metadata_nodes(joiner.address), 60, "the survivor in the joiner's Metadata"
        )
        listed = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]  # as serve's "ts", ms
        wait_for(lambda: joined() is not None, 60, "the joiner in the group")
        # The victim is out of the group once the broker ended its session: the survivor's first
        # rebalance after the kill. The joiner's JoinGroup comes after that, not while the dead
        # process still announced shards (it may land in that same rebalance: no peer removes the
        # victim any more, so there is no moment left to race with).
        out = [
            str(r["ts"])
            for r in survivor.records()
            if str(r["msg"]).startswith("placement rebalance: revoked") and str(r["ts"]) >= killed
        ]
        assert out and out[0] < str(joined()), (out, joined())
        assert any("refuses connections, is out of the group" in str(r["msg"]) for r in joiner.records())
        wait_ended = [str(r["ts"]) for r in joiner.records() if str(r["msg"]).startswith("placement: joining now")]
        assert wait_ended and listed < wait_ended[0], (listed, wait_ended)
    finally:
        stop_all([joiner, *made])


def _metadata_nodes(address: str) -> set[str]:
    """The nodes (HOST:PORT) a Metadata answer of the process at ``address`` lists; none while it
    does not answer."""
    admin = AdminClient({"bootstrap.servers": address, "socket.timeout.ms": 2000})
    try:
        return {f"{b.host}:{b.port}" for b in admin.list_topics(timeout=2).brokers.values()}
    except KafkaException:
        return set()
