"""Which process owns which shard, decided by the backing cluster (DESIGN.md, "Many coordinator processes").

Every ``groupcoord serve`` process joins one consumer group of the backing cluster, subscribed to
the log topic. The group's membership and failure detection are the cluster's; this module only
relays them: partitions assigned to the process are shards it must load and serve, partitions
revoked (or lost) are shards it must drop. The consumer never reads data: every assigned partition
is paused at once.

Routing needs two more facts, both kept in the backing cluster as well:

- who owns a shard: right after an assignment the owner commits, for each of its partitions in the
  placement group, an offset equal to its node id (the broker keeps these and any process can read
  them with one OffsetFetch; a commit from a member that has been replaced is refused by the group);
- where a node id listens: each process appends ``node id -> advertised host:port`` to a small
  compacted directory topic, which every process reads from the start and tails.

(Offset metadata would be the natural place for the address, but the local broker drops it, and
its DescribeGroups lists no members; offsets and a directory topic work on every broker.)

Everything here runs on one background thread, which never waits long for the cluster: it polls
the consumer every 0.1 s, so that librdkafka can tell it the session was lost, commits
asynchronously and reads the owners without waiting for the answer. A second thread keeps this
process's own clock of the session (``_watch_session``): a process that has heard nothing from the
placement group's coordinator for longer than the session stops serving, whether or not
librdkafka says so (it says so only at a poll, and a poll stuck behind a call that never returns
never comes). The callbacks it calls are the caller's to make thread-safe.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.coordinator.logs import drain
from groupcoord.coordinator.runtime import handover
from groupcoord.coordinator.runtime.group_offsets import GroupOffsetsQuery
from groupcoord.coordinator.runtime.handover import Handover, Successor

log = logging.getLogger(__name__)

# Kafka's node ids for real brokers are small; coordinator processes take ids from this range
# (see GatewayConfig.coordinator_node_id for the limits the Java client imposes).
NODE_ID_BASE = 1_000_000
NODE_ID_SPAN = 1_000_000


def derived_node_id(host: str, port: int) -> int:
    """A node id that is the same each time a process is started with the same address."""
    return NODE_ID_BASE + zlib.crc32(f"{host}:{port}".encode()) % NODE_ID_SPAN


def derived_instance_id(host: str, port: int) -> str:
    """``group.instance.id`` allows only ASCII letters, digits, '.', '_' and '-'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"groupcoord-{host}-{port}")


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Incarnation:
    """One process behind a node id, as its directory entry says (``Placement._register``): its
    member of the placement group (None until its first assignment), and where it runs, so that a
    process restarted on the same address can tell its predecessor is gone (``PeerWatch``)."""

    incarnation: str
    member_id: str | None = None
    instance_id: str | None = None
    boot_id: str = ""  # the kernel's boot id and network namespace: same machine, same boot, same network
    bound: str = ""  # the address its listener is bound to, as host:port
    # When the entry was written (its record's timestamp, seconds since the epoch; 0: unknown).
    written_s: float = 0.0
    # Written by the process itself at the end of a graceful stop, once it served nothing and had
    # left the placement group (``Placement.withdraw``): nobody need wait for or remove it.
    withdrawn: bool = False


def boot_id() -> str:
    """This boot of this machine, and the network namespace (containers on one host each have
    their own, where the same address can be bound twice); empty where neither can be read."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/net')}"
    except OSError:
        return ""


@dataclass(frozen=True)
class PlacementConfig:
    log_topic: str
    group_id: str
    directory_topic: str
    instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignment_strategy: str
    refresh_interval_ms: int
    replication_factor: int = 1
    # Node ids are derived from addresses (``derived_node_id``): a directory entry whose address
    # does not derive its node id is not that node's (see ``_vouched``).
    derived_node_ids: bool = False
    # The address this process's listener is bound to (host:port), for its directory entry.
    bound: str = ""


# Called on the placement thread with the partitions concerned.
AssignCallback = Callable[[list[int]], None]
RevokeCallback = Callable[[list[int], bool], None]  # (partitions, lost)


def ensure_directory_topic(client_config: dict[str, Any], topic: str, replication_factor: int) -> None:
    admin = AdminClient(dict(client_config))
    try:
        ensure_directory_topic_on(admin, topic, replication_factor)
    finally:
        drain(admin)  # its queued librdkafka log lines


def ensure_directory_topic_on(admin: AdminClient, topic: str, replication_factor: int) -> None:
    if topic in admin.list_topics(timeout=10).topics:
        return
    futures = admin.create_topics(
        [NewTopic(topic, 1, replication_factor, config={"cleanup.policy": "compact"})], request_timeout=30
    )
    try:
        futures[topic].result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class Placement:
    """Membership of this process in the placement group; see the module docstring."""

    def __init__(
        self,
        client_config: dict[str, Any],
        config: PlacementConfig,
        me: Node,
        on_assigned: AssignCallback,
        on_revoked: RevokeCallback,
        reader_config: dict[str, Any] | None = None,
    ) -> None:
        self.client_config = dict(client_config)
        # The consumers' config (see ``CoordinatorRuntime.reader_config``).
        self.reader_config = dict(reader_config if reader_config is not None else client_config)
        self.config = config
        self.me = me
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        # Written on the placement thread, read anywhere: each is replaced whole, never mutated.
        self.owners: dict[int, int] = {}  # partition -> node id (as last committed)
        self.nodes: dict[int, Node] = {me.node_id: me}
        self.assigned: frozenset[int] = frozenset()
        # node id -> the process behind it, from the directory (this process's own entry excluded)
        self.incarnations: dict[int, Incarnation] = {}
        # Earlier processes with this node id on this machine and address (restarted after a crash).
        self.predecessors: list[Incarnation] = []
        # node id -> the earlier processes behind another node id, oldest first (its entries before
        # its latest): a process restarted after a kill of every process tells from them that the
        # member a peer's predecessor left in the group is out (``await_takeover``).
        self.earlier: dict[int, list[Incarnation]] = {}
        self.me_now = Incarnation(uuid.uuid4().hex, None, config.instance_id, boot_id(), config.bound)
        # Shards handed over by a stopping process, to route meanwhile (``handover.py``), and the
        # ones this process took over that way, ahead of the placement rebalance.
        self.handovers: dict[int, Handover] = {}
        self.taken: dict[int, int] = {}  # partition -> the node id that handed it over
        self._handed_over: dict[str, Any] | None = None  # this process's own, as its entry says it
        self.rebalances = 0
        self._announce: set[int] = set()
        self._refresh_now = threading.Event()
        self._reannounce = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        # The shards held (assigned, taken) change, with the callbacks that load or drop them, under
        # this lock: on the placement thread, or on the watchdog's when that thread is stuck.
        self._moves = threading.RLock()
        # When the placement group's coordinator last answered (time.monotonic(); the send time of
        # the request it answered): this process's own clock of its session.
        self._contact = time.monotonic()
        # The longest round trip of the consumer's coordinator connection lately, with when it was
        # seen (librdkafka's monotonic seconds): ``_consumer_stats``.
        self._coordinator_rtts: list[tuple[float, float]] = []
        self._polled = time.monotonic()  # the placement thread's last poll of the consumer
        # Set once this process stopped serving on its own clock: the group must assign afresh.
        self._rejoin = threading.Event()
        self._committing: frozenset[int] | None = None  # an ownership commit in flight
        self._committed_at = 0.0
        # False once ``close`` gave up on librdkafka's close (a dynamic member may not have left).
        self.closed = True
        self._consumer: Consumer | None = None
        self._directory: Consumer | None = None
        self._owners_query: GroupOffsetsQuery | None = None
        self._producer: Producer | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self, before_join: Callable[[], None] | None = None) -> None:
        """Register the address, then join the group (the cluster must be reachable).
        ``before_join`` runs once the directory and the owners can be read, before the join."""
        ensure_directory_topic(self.client_config, self.config.directory_topic, self.config.replication_factor)
        # No metadata request of this producer may create the directory (see ``ClusterWatch``).
        self._producer = Producer(
            {**self.client_config, "acks": "all", "linger.ms": 0, "allow.auto.create.topics": False}
        )
        self._register()
        if self._producer.flush(30) > 0:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "directory registration not acknowledged"))
        self._directory = Consumer(
            {
                **self.reader_config,
                "group.id": f"{self.config.group_id}-directory",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
                # A directory created again (after the cluster lost it) starts below our position.
                "auto.offset.reset": "earliest",
            }
        )
        self._directory.assign([TopicPartition(self.config.directory_topic, 0, OFFSET_BEGINNING)])
        self._owners_query = self._new_owners_query()
        if before_join is not None:
            before_join()
        consumer_config: dict[str, Any] = {
            **self.reader_config,
            "group.id": self.config.group_id,
            "client.id": f"groupcoord-placement-{self.me.node_id}",
            "partition.assignment.strategy": self.config.assignment_strategy,
            "session.timeout.ms": self.config.session_timeout_ms,
            "heartbeat.interval.ms": self.config.heartbeat_interval_ms,
            # Also the rebalance timeout: how long a rebalance waits for members that do not
            # rejoin (a process killed with -9). The loop polls every 100 ms, so it is never hit
            # by a live process.
            "max.poll.interval.ms": self.config.session_timeout_ms,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "latest",
            # Ownership commits are asynchronous (the loop must keep polling); their outcome comes here.
            "on_commit": self._committed,
            # When the coordinator last answered the consumer itself (its heartbeats): ``_consumer_stats``.
            "statistics.interval.ms": min(1000, max(100, self.config.session_timeout_ms // 6)),
            "stats_cb": self._consumer_stats,
        }
        if self.config.instance_id:
            consumer_config["group.instance.id"] = self.config.instance_id
        self._consumer = Consumer(consumer_config)
        self._subscribe(self._consumer)
        self._contact = self._polled = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="placement", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch_session, name="placement-session", daemon=True)
        self._watchdog.start()

    def _new_owners_query(self) -> GroupOffsetsQuery:
        """A query unanswered for a whole session is stuck, not slow (a coordinator answers an
        OffsetFetch in milliseconds): it is asked again on a new client then, not after
        ``RENEW_AFTER_S``."""
        return GroupOffsetsQuery(
            self.client_config,
            self.config.group_id,
            self.config.log_topic,
            renew_after=self.config.session_timeout_ms / 1000,
        )

    def _subscribe(self, consumer: Consumer) -> None:
        consumer.subscribe([self.config.log_topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)

    def close(
        self, hand_over: list[int] | None = None, stop_serving: Callable[[], None] | None = None
    ) -> dict[int, Handover]:
        """Leave the group; at a graceful stop, first hand ``hand_over`` to successors
        (``hand_over``). ``stop_serving`` makes those shards stop serving here; it is called once,
        before the handover is announced (and before the group is left in any case). Returns what
        was handed over."""
        stopped: list[bool] = []

        def stop_once() -> None:
            if not stopped and stop_serving is not None:
                stopped.append(True)
                stop_serving()

        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            if self._thread.is_alive():
                log.warning("placement thread still busy after 10s (%s); stopping without it", self._where())
        if self._watchdog is not None:
            self._watchdog.join(1)
        handed: dict[int, Handover] = {}
        try:
            if hand_over and self._consumer is not None:  # (None: it never joined, so it owns nothing)
                handed = self.hand_over(hand_over, stop_serving=stop_once)
        except (KafkaException, BufferError) as exc:
            log.warning("placement handover failed (%s); the shards move at the rebalance", exc)
        finally:
            stop_once()
        # (Out of contact, a close waits on nothing that can come: librdkafka's, for a member of a
        # group whose coordinator does not answer, did not return at all.)
        clients = [c for c in (self._consumer, self._directory) if c is not None]
        self.closed = _close_bounded(clients, self._wait_s(CLOSE_TIMEOUT_S))
        if self._producer is not None:
            self._producer.flush(1)
        return handed

    def in_contact(self) -> bool:
        """Whether the placement group's coordinator answered within the last session."""
        return self.silent_s() <= self.config.session_timeout_ms / 1000

    def silent_s(self) -> float:
        """Seconds since the placement group's coordinator last answered."""
        return time.monotonic() - self._contact

    def unowned(self, partitions: int) -> list[int]:
        """The shards among the first ``partitions`` that no process is known to own now."""
        return [p for p in range(partitions) if self.owner(p) is None]

    def _wait_s(self, timeout_s: float) -> float:
        """How long a stop waits on the cluster: ``timeout_s``, or a second once out of contact."""
        return timeout_s if self.in_contact() else min(timeout_s, 1.0)

    def refresh_soon(self) -> None:
        self._refresh_now.set()

    def reannounce(self) -> None:
        """Register the address again (the cluster came back, maybe without the directory's
        records) and look for the log topic now rather than at the next metadata refresh."""
        self._reannounce.set()
        self._refresh_now.set()

    def hand_over(
        self, shards: list[int], timeout_s: float = 5.0, stop_serving: Callable[[], None] | None = None
    ) -> dict[int, Handover]:
        """A graceful stop: name a successor for each of ``shards`` in this process's directory
        entry (``handover.py``) and wait until the cluster has it. The successors are chosen while
        the shards still serve here; ``stop_serving`` ends that just before they are named (so the
        shards go unserved only from then until a successor has loaded). Returns what was handed
        over (empty when there is no other process to take them). Called by ``close`` once the
        placement thread has stopped."""
        assert self._producer is not None
        # Who else owns shards, as of now (a peer that joined a moment ago is not in the last refresh).
        self._refresh_owners(timeout=timeout_s)
        self._read_directory()
        candidates = []
        for node in self.live_nodes()[1:]:
            peer = self.incarnations.get(node.node_id)
            # (A process that stopped cleanly still owns shards until the rebalance says otherwise.)
            if peer is not None and not peer.withdrawn:
                candidates.append(Successor(node.node_id, peer.incarnation, peer.member_id))
        chosen = handover.choose_successors(shards, candidates)
        if stop_serving is not None:
            stop_serving()
        if not chosen:
            return {}
        mine = self.me_now.incarnation
        handed = {p: Handover(self.me.node_id, mine, s.node_id, s.incarnation) for p, s in chosen.items()}
        # Routed to the successors from now on, by this process too while its listener still answers.
        self.handovers = {**self.handovers, **handed}
        self._handed_over = handover.encode(chosen)
        self._register(self._handed_over)
        if self._producer.flush(timeout_s) > 0:
            log.warning("placement handover not acknowledged; the shards move at the rebalance")
        return handed

    def withdraw(self, timeout_s: float = 5.0) -> None:
        """The end of a graceful stop, once this process serves no shard and has left the placement
        group: its directory entry says so (its handover kept), so that a process restarted in its
        place, or started beside it, joins at once rather than waiting for the others' rebalance
        to stop naming it as an owner (``peers.await_takeover``). Only the process itself writes
        this: a paused or dead process never does, and so is never taken for withdrawn."""
        if self._producer is None:
            return
        try:
            self._register(self._handed_over, withdrawn=True)
            if self._producer.flush(self._wait_s(timeout_s)) > 0:
                log.warning("placement withdrawal not acknowledged; a restart waits for the rebalance")
        except (KafkaException, BufferError) as exc:
            log.warning("placement withdrawal failed (%s); a restart waits for the rebalance", exc)

    def _register(self, handed_over: dict[str, Any] | None = None, withdrawn: bool = False) -> None:
        assert self._producer is not None
        me = self.me_now
        entry: dict[str, Any] = {
            "host": self.me.host,
            "port": self.me.port,
            "incarnation": me.incarnation,
            "member": me.member_id,
            "instance": me.instance_id,
            "boot": me.boot_id,
            "bound": me.bound,
        }
        if handed_over:
            entry["handover"] = handed_over
        if withdrawn:
            entry["withdrawn"] = True
        self._producer.produce(
            self.config.directory_topic, key=str(self.me.node_id).encode(), value=json.dumps(entry).encode()
        )

    # --- lookups (any thread) ------------------------------------------------------------------

    def owner(self, partition: int) -> Node | None:
        moved = self.handovers.get(partition)
        if moved is not None and moved.leaver_incarnation == self.me_now.incarnation:
            return self.nodes.get(moved.successor)  # this process is stopping and handed it over
        if partition in self.assigned or partition in self.taken:
            return self.me
        node_id = self.owners.get(partition)
        if moved is not None and node_id == moved.leaver:
            # Handed over ahead of the placement rebalance, which has not announced it yet.
            return None if moved.successor == self.me.node_id else self.nodes.get(moved.successor)
        if node_id is None or node_id == self.me.node_id:
            # Our own old commit for a shard we no longer hold says nothing about its owner now.
            return None
        return self.nodes.get(node_id)

    def successor_address(self, partition: int) -> tuple[str, int] | None:
        """Where the process this one handed ``partition`` to at its stop listens (None: not handed over)."""
        moved = self.handovers.get(partition)
        if moved is None or moved.leaver_incarnation != self.me_now.incarnation:
            return None
        node = self.nodes.get(moved.successor)
        return None if node is None else (node.host, node.port)

    def confirm_owner(self, partition: int) -> bool:
        """Re-read the owners from the cluster: is this process still the one that announced
        ``partition`` last? (Blocking; not for the event loop.)"""
        self._refresh_owners()
        return partition in self.assigned and self.owners.get(partition, self.me.node_id) == self.me.node_id

    def live_nodes(self) -> list[Node]:
        """Processes that own at least one shard, this one first. A shard this process holds is
        its own, as in ``owner``, whoever the owners last read name: until its announcement is read
        back they name the previous owner, which a restart after a graceful stop would otherwise
        offer clients in Metadata (and an admin client that asks every node waits on the dead one)."""
        held = self.assigned.union(self.taken)
        ids = {n for p, n in self.owners.items() if n != self.me.node_id and p not in held}
        return [self.me, *(self.nodes[i] for i in sorted(ids) if i in self.nodes)]

    def members_to_watch(self, fresh_s: float) -> list[Node]:
        """The other processes that may hold shards: those that own one, and those that named a
        member of the placement group in a directory entry written in the last ``fresh_s`` seconds
        (a process that joined may be assigned shards and die before it announces them)."""
        now = time.time()
        ids = {n.node_id for n in self.live_nodes()[1:]}
        for node_id, incarnation in self.incarnations.items():
            if incarnation.member_id is not None and now - incarnation.written_s < fresh_s:
                ids.add(node_id)
        ids.discard(self.me.node_id)
        return [self.nodes[i] for i in sorted(ids) if i in self.nodes]

    # --- consumer callbacks (placement thread) -------------------------------------------------

    def _assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._moves:
            self._assign_held(consumer, partitions)

    def _assign_held(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.rebalances += 1
        # The group's coordinator just answered (SyncGroup).
        self._contact = max(self._contact, time.monotonic())
        mine = sorted(tp.partition for tp in partitions)
        # A rebalance completed: the owners it announces are the truth again (``handover.py``).
        self.handovers = {}
        if self.config.assignment_strategy != "cooperative-sticky":
            # Eager: the assignment is the whole set; anything not in it must go first (shards
            # taken over from a stopping process too).
            stale = sorted((self.assigned | set(self.taken)) - set(mine))
            self.taken = {}
            if stale:
                self.assigned = frozenset(self.assigned - set(stale))
                self._on_revoked(stale, False)
        else:
            # Cooperative: a shard taken over and now assigned stays; the others go once another
            # process announces them (``_release_taken``).
            self.taken = {p: n for p, n in self.taken.items() if p not in mine}
        if self.config.assignment_strategy == "cooperative-sticky":
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        self.assigned = frozenset(self.assigned | set(mine))
        self._announce |= set(mine)
        self._note_member_id(consumer)
        if mine:
            self._on_assigned(mine)
        self._refresh_now.set()

    def _note_member_id(self, consumer: Consumer) -> None:
        """Publish this process's member id once the group gave it one (its first JoinGroup), not
        only at its first assignment: peers need it to remove this process from the group should
        it die (``PeerWatch``), and a process killed between an assignment and its announcement
        holds shards nobody serves until it is removed."""
        member_id = consumer.memberid()
        if member_id and member_id != self.me_now.member_id:
            log.info("placement member %s", member_id)
            self.me_now = dataclasses.replace(self.me_now, member_id=member_id)
            self._reannounce.set()

    def _revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._drop(consumer, partitions, lost=False)

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._drop(consumer, partitions, lost=True)

    def _drop(self, consumer: Consumer, partitions: list[TopicPartition], lost: bool) -> None:
        with self._moves:
            self._drop_held(consumer, partitions, lost)

    def _drop_held(self, consumer: Consumer, partitions: list[TopicPartition], lost: bool) -> None:
        self.rebalances += 1
        gone = sorted(tp.partition for tp in partitions)
        # The moment this process learns of a rebalance (the drill's breakdown reads this line).
        log.info("placement rebalance: %s %s", "lost" if lost else "revoked", gone)
        # (Shards this process stopped serving on its own clock are not dropped twice.)
        gone = [p for p in gone if p in self.assigned or p in self.taken]
        eager = self.config.assignment_strategy != "cooperative-sticky"
        if eager and not lost and not self._stop.is_set():
            # An eager rebalance revokes everything, though most shards come straight back. They
            # keep serving until the new assignment says which go (``_assign`` drops those): a
            # new owner can only start once that assignment exists, and the shard epochs in the
            # log fence whatever this process writes after the new owner's epoch record.
            pass
        else:
            # Stop serving before the rebalance can hand the shards to another process.
            if lost and self.taken:
                gone = sorted(set(gone) | set(self.taken))
                self.taken = {}
            self.assigned = frozenset(self.assigned - set(gone))
            self._announce -= set(gone)
            if gone:
                self._on_revoked(gone, lost)
        try:
            if self.config.assignment_strategy == "cooperative-sticky":
                consumer.incremental_unassign(partitions)
            else:
                consumer.unassign()
        except KafkaException as exc:
            log.debug("placement unassign: %s", exc)
        self._refresh_now.set()

    # --- the loop ------------------------------------------------------------------------------

    def _loop(self) -> None:
        assert self._consumer is not None and self._directory is not None and self._owners_query is not None
        # Owners are re-read this often, and the coordinator asked at least four times a session
        # (the answers are this process's own clock of its session: ``_watch_session``).
        period = min(self.config.refresh_interval_ms, self.config.session_timeout_ms / 4) / 1000
        next_refresh = 0.0
        refresh_since: float | None = None  # an owners refresh is wanted from a request sent since then
        while not self._stop.is_set():
            try:
                msg = self._consumer.poll(0.1)
                self._polled = time.monotonic()
                if msg is not None and msg.error() is not None:
                    log.warning("placement consumer: %s", msg.error())
                self._note_member_id(self._consumer)
                if self._rejoin.is_set():
                    self._rejoin.clear()
                    self._subscribe_again(self._consumer)
                self._read_directory()
                if self._reannounce.is_set():
                    self._reannounce.clear()
                    self._register()
                    # A subscription learns of a topic created again only at its next metadata refresh.
                    self._consumer.list_topics(self.config.log_topic, timeout=5)
                if self._announce:
                    self._commit_ownership()
                now = time.monotonic()
                if self._refresh_now.is_set() or now >= next_refresh:
                    self._refresh_now.clear()
                    refresh_since = now
                    next_refresh = now + period
                    # The admin client and the producer are polled nowhere else: hand over their log lines.
                    self._owners_query.drain()
                    if self._producer is not None:
                        drain(self._producer)
                if refresh_since is not None and self._owners_answered(refresh_since):
                    refresh_since = None
            except Exception as exc:  # the thread must outlive any one failed call
                log.warning("placement loop: %r", exc)
                time.sleep(0.2)

    def _owners_answered(self, since: float) -> bool:
        """Take the owners from an answer that came (never waits); whether it answers a request
        sent at or after ``since`` (or failed: the next refresh asks again)."""
        assert self._owners_query is not None
        got = self._owners_query.answer(since)
        if got is None:
            return False
        sent_at, answer = got
        try:
            result = answer.result()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() > 0:
                # The cluster answered, if with an error: it can be reached (librdkafka's own
                # errors, below 0, say nothing of that).
                self._contact = max(self._contact, sent_at)
            log.info("placement owners refresh failed: %r", exc)
            return True
        self._contact = max(self._contact, sent_at)
        self._take_owners(result)
        self._release_taken()
        return sent_at >= since

    def _watch_session(self) -> None:
        """This process's own clock of its session (its own thread): once the placement group's
        coordinator has not answered for longer than the session, another process may own this
        one's shards by now (the cluster expired its member), so they stop serving here, whether or
        not librdkafka has said so (it says so only at a poll of the placement thread, which a call
        that never returns keeps from coming). The group then assigns afresh (``_subscribe_again``)."""
        session_s = self.config.session_timeout_ms / 1000
        while not self._stop.wait(min(0.25, session_s / 8)):
            self._check_session(time.monotonic())

    def _check_session(self, now: float) -> None:
        """One look of ``_watch_session`` at the clock (``now``: ``time.monotonic()``)."""
        session_s = self.config.session_timeout_ms / 1000
        silent = now - self._contact
        if silent <= session_s or not (self.assigned or self.taken):
            return
        with self._moves:
            held = sorted(self.assigned | set(self.taken))
            if not held or self._stop.is_set():
                return
            log.warning(
                "placement: no answer from the placement group's coordinator for %.1fs (neither to the "
                "consumer's heartbeats nor to the owners query), longer than the session (%.1fs); shards %s "
                "stop here, another process may own them by now (%s)",
                silent,
                session_s,
                held,
                self._where(),
            )
            self.assigned = frozenset()
            self.taken = {}
            self._announce -= set(held)
            self._rejoin.set()
            self._on_revoked(held, True)

    def _consumer_stats(self, raw: str, now: float | None = None) -> None:
        """librdkafka's statistics of the placement consumer (at a poll, on the placement thread):
        the consumer's own connection to the group's coordinator, which carries its heartbeats,
        received an answer ``rxidle`` before the statistics were taken (``ts``, librdkafka's clock,
        CLOCK_MONOTONIC as ``time.monotonic()``). The request it answered was sent no later than a
        round trip before that; taking the longest round trip of that connection's answers since
        then, the coordinator answered a request sent at or after that time, as the owners
        query's answers say (the contact clock holds send times). So a stuck owners query alone
        never stops a process whose heartbeats are answered, and a process the coordinator does not
        answer (partitioned, or paused: statistics taken before the pause carry their own old time)
        still stops in time. Answers on a connection that came up after its request was sent
        (the handshake of a reconnection) say nothing of the group, and are not counted."""
        now = time.monotonic() if now is None else now
        try:
            stats = json.loads(raw)
            taken_s = float(stats["ts"]) / 1e6
            coordinator = stats["brokers"].get("GroupCoordinator")
            if coordinator is None or stats.get("cgrp", {}).get("state") != "up":
                return
            rtt = coordinator.get("rtt", {})
            session_s = self.config.session_timeout_ms / 1000
            rtts = [(t, r) for t, r in self._coordinator_rtts if t > taken_s - session_s]
            if int(rtt.get("cnt", 0)) > 0:
                rtts.append((taken_s, float(rtt["max"]) / 1e6))
            self._coordinator_rtts = rtts
            idle = int(coordinator["rxidle"])
            if coordinator.get("state") != "UP" or idle < 0 or taken_s > now + 1:
                return  # (no answer yet; or a clock that is not ``time.monotonic()``'s)
            received = taken_s - idle / 1e6
            up_since = taken_s - int(coordinator["stateage"]) / 1e6
            # The round trips of the statistics taken since that answer came (each covers the
            # answers received since the one before), so that a JoinGroup the coordinator held for
            # seconds a while ago does not hold the heartbeats back; none there: all of them.
            since = [r for t, r in rtts if t >= received] or [r for _, r in rtts]
            sent = received - max(since, default=0.0)
            if sent < up_since:
                return
            self._contact = max(self._contact, min(sent, now))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.debug("placement consumer statistics: %r", exc)

    def _where(self) -> str:
        """Where the placement thread is, for a log line about it."""
        polled = time.monotonic() - self._polled
        thread = self._thread
        if thread is None or not thread.is_alive() or polled < 1:
            return "the placement thread polls"
        frame = sys._current_frames().get(thread.ident or 0)
        at = "" if frame is None else f" in {frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})"
        return f"the placement thread last polled {polled:.1f}s ago{at}"

    def _subscribe_again(self, consumer: Consumer) -> None:
        """After this process stopped serving on its own clock: if librdkafka still holds an
        assignment (it never said the session was lost; the cluster may not have expired it
        either), leave it and join again, so the group's next assignment decides who serves."""
        try:
            if not consumer.assignment():
                return  # librdkafka said so too, and joins again by itself
            log.info("placement: joining the group again")
            consumer.unsubscribe()
            self._subscribe(consumer)
        except KafkaException as exc:
            log.warning("placement could not join again (%s); retrying", exc)
            self._rejoin.set()

    def catch_up_directory(self, timeout_s: float) -> None:
        """Read the directory until it has nothing more (it holds this process's own entry at
        least), or for ``timeout_s``. (Placement thread, or before the join.)"""
        deadline = time.monotonic() + timeout_s
        read = 0
        while time.monotonic() < deadline:
            got = self._read_directory(0.5)
            if got == 0 and read > 0:
                return
            read += got

    def read_directory(self) -> None:
        """Take in the directory's records fetched meanwhile, without waiting. (Before the join.)"""
        self._read_directory(0)

    def refresh_owners(self) -> None:
        """Re-read the owners now. (Placement thread, or before the join.)"""
        self._refresh_owners()

    def _read_directory(self, timeout: float = 0) -> int:
        assert self._directory is not None
        messages = self._directory.consume(num_messages=500, timeout=timeout)
        if not messages:
            return 0
        nodes = dict(self.nodes)
        incarnations = dict(self.incarnations)
        earlier = dict(self.earlier)
        # node id -> the handover of its latest entry in this batch (None: a later entry has none)
        handed: dict[int, dict[int, Handover] | None] = {}
        for msg in messages:
            if msg.error() is not None or msg.key() is None:
                continue
            try:
                node_id = int(msg.key() or b"")
                value = msg.value()
                if value is None:
                    nodes.pop(node_id, None)
                    incarnations.pop(node_id, None)
                    handed[node_id] = None
                    continue
                entry = json.loads(value)
                node = Node(node_id, str(entry["host"]), int(entry["port"]))
                kind, stamp = msg.timestamp()
                incarnation = _incarnation(entry, stamp / 1000 if kind != TIMESTAMP_NOT_AVAILABLE else 0.0)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring a malformed directory record: %s", exc)
                continue
            if incarnation is None or incarnation.incarnation != self.me_now.incarnation:
                # (This process's own entry leaves what a predecessor of its node id handed over.)
                handed[node_id] = None
                if incarnation is not None and "handover" in entry and self._vouched(node):
                    handed[node_id] = handover.decode(node_id, incarnation.incarnation, entry["handover"])
            if node_id == self.me.node_id:
                # This process's own entry always comes from itself; an earlier process's entry
                # for the same node id may name a member it left in the group (``PeerWatch``).
                if incarnation is not None and incarnation.incarnation != self.me_now.incarnation:
                    self.predecessors = [*self.predecessors, incarnation][-8:]
                continue
            if self._vouched(node):
                nodes[node_id] = node
                if incarnation is not None:
                    before = incarnations.get(node_id)
                    if before is not None and before.incarnation != incarnation.incarnation:
                        earlier[node_id] = [*earlier.get(node_id, []), before][-8:]
                    incarnations[node_id] = incarnation
                else:
                    incarnations.pop(node_id, None)
            else:
                log.warning(
                    "ignoring a directory record for node %s at %s:%s: its address does not give that node id",
                    node.node_id,
                    node.host,
                    node.port,
                )
        nodes[self.me.node_id] = self.me
        self.nodes = nodes
        self.incarnations = incarnations
        self.earlier = earlier
        moved = {p: h for p, h in self.handovers.items() if h.leaver not in handed}
        for found in handed.values():
            if found:
                moved.update(found)
        if moved != self.handovers:
            self.handovers = moved
            self._take_over()
        return len(messages)

    def _take_over(self) -> None:
        """Load the shards a stopping process named this one to take (``handover.py``)."""
        mine = self.me_now.incarnation
        offered = {p: h for p, h in self.handovers.items() if h.successor_incarnation == mine}
        offered = {p: h for p, h in offered.items() if p not in self.assigned and p not in self.taken}
        if not offered or self._stop.is_set() or self._owners_query is None:
            return
        # Only while the owners still name the stopping process: once the rebalance has given a
        # shard to someone, that process announced it (read again now, not as last refreshed;
        # within half a session, so that the consumer is polled in time).
        self._refresh_owners(self._stop, timeout=self.config.session_timeout_ms / 2000)
        take = sorted(p for p, h in offered.items() if self.owners.get(p) == h.leaver)
        if not take:
            return
        log.info(
            "placement: taking over shards %s from node %d, which is stopping, ahead of the rebalance",
            take,
            offered[take[0]].leaver,
        )
        with self._moves:
            self.taken = {**self.taken, **{p: offered[p].leaver for p in take}}
            self._on_assigned(take)

    def _release_taken(self) -> None:
        """Drop shards taken over from a stopping process once another process announces them."""
        if not self.taken:
            return
        owners = self.owners
        with self._moves:
            gone = sorted(
                p for p, leaver in self.taken.items() if owners.get(p, leaver) not in (leaver, self.me.node_id)
            )
            if gone:
                self.taken = {p: n for p, n in self.taken.items() if p not in gone}
                self._on_revoked(gone, False)

    def _vouched(self, node: Node) -> bool:
        """Whether a directory entry may be used for routing.

        The directory only says where a node id listens; which node ids exist is placement's word
        (``owner`` and ``live_nodes`` route only to node ids that committed ownership in the
        placement group, so an entry for any other id is never used). With derived node ids the
        address must also give the node id: a record pointing a live process's id elsewhere is
        ignored. The directory's integrity beyond that rests on the cluster: only the sidecar's
        principal may write it (README).
        """
        return not self.config.derived_node_ids or derived_node_id(node.host, node.port) == node.node_id

    def _commit_ownership(self) -> None:
        """Commit this process's node id for the shards it announces, asynchronously: a synchronous
        commit waits on librdkafka for as long as the coordinator does not answer, and the loop
        must go on polling. One commit is in flight at a time; its outcome comes to ``_committed``."""
        assert self._consumer is not None
        if self._committing is not None:
            if time.monotonic() - self._committed_at < self.config.session_timeout_ms / 1000:
                return
            # Unanswered for a session: whatever becomes of it, the announcement is made again.
            self._committing = None
        wanted = sorted(self._announce & self.assigned)
        if not wanted:
            self._announce.clear()
            return
        offsets = [TopicPartition(self.config.log_topic, p, self.me.node_id) for p in wanted]
        try:
            self._consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            log.info("placement ownership commit refused (%s); retrying", exc)
            return
        self._committing = frozenset(wanted)
        self._committed_at = time.monotonic()

    def _committed(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The outcome of an ownership commit (at a poll of the consumer)."""
        self._committing = None
        if error is not None:
            # A rebalance in progress refuses commits; the next assignment announces again.
            log.info("placement ownership commit refused (%s); retrying", error)
            return
        done = {tp.partition for tp in partitions if tp.topic == self.config.log_topic and tp.error is None}
        self._announce -= done
        self._refresh_now.set()

    def _refresh_owners(self, stop: threading.Event | None = None, timeout: float = 10) -> None:
        """Re-read the shard owners, waiting up to ``timeout``. ``stop`` gives the wait up once
        set; a graceful stop's own re-read before a handover must not give up."""
        assert self._owners_query is not None
        try:
            result = self._owners_query.ask(timeout=timeout, stop=stop)
        except (KafkaException, TimeoutError) as exc:
            log.info("placement owners refresh failed: %r", exc)
            return
        self._take_owners(result)

    def _take_owners(self, result: ConsumerGroupTopicPartitions) -> None:
        owners: dict[int, int] = {}
        for tp in result.topic_partitions or []:
            if tp.topic == self.config.log_topic and tp.error is None and tp.offset >= NODE_ID_BASE:
                owners[tp.partition] = tp.offset
        self.owners = owners


# How long closing a placement client may take before the stop goes on without it.
CLOSE_TIMEOUT_S = 5.0


def _close_bounded(clients: list[Consumer], timeout_s: float) -> bool:
    """Close ``clients`` on threads of their own, waiting at most ``timeout_s`` in all: librdkafka's
    close waits on the cluster (a consumer leaving its group), and a stop must end in any case.
    Whether every close returned."""

    def close(client: Consumer) -> None:
        try:
            client.close()
        except (KafkaException, RuntimeError) as exc:
            log.warning("placement client close failed: %s", exc)

    closing = [threading.Thread(target=close, args=(c,), name="placement-close", daemon=True) for c in clients]
    for thread in closing:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in closing:
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(thread.is_alive() for thread in closing):
        log.warning("placement client close did not return within %.0fs; stopping without it", timeout_s)
        return False
    return True


def _incarnation(entry: dict[str, Any], written_s: float = 0.0) -> Incarnation | None:
    """The process behind a directory entry; None for an entry written before entries named it."""
    if "incarnation" not in entry:
        return None
    member, instance = entry.get("member"), entry.get("instance")
    return Incarnation(
        str(entry["incarnation"]),
        None if member is None else str(member),
        None if instance is None else str(instance),
        str(entry.get("boot", "")),
        str(entry.get("bound", "")),
        written_s,
        entry.get("withdrawn") is True,
    )
