"""``groupcoord serve``: assemble the runtime, the service and the gateway, and run until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from rich.console import Console
from rich.markup import escape

from groupcoord.coordinator import logs
from groupcoord.coordinator.config import PLACEMENT_GROUP_PREFIX, PlacementSettings, Settings
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.cluster import ClusterUnavailable
from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.context import GroupLookupCheck
from groupcoord.coordinator.gateway.event_loop import loop_factory
from groupcoord.coordinator.gateway.handler import CoordinatorAddress
from groupcoord.coordinator.gateway.member_removal import (
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    Member,
    MemberRemover,
    RemovalFailed,
)
from groupcoord.coordinator.gateway.reader_relay import ReaderRelay, relayable
from groupcoord.coordinator.gateway.relay import relay_link
from groupcoord.coordinator.gateway.server import GatewayServer
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.kafka_words import describe_error
from groupcoord.coordinator.observability.gateway import GatewayMetrics, MeteredHandler
from groupcoord.coordinator.observability.http import HealthServer, Readiness, shard_states
from groupcoord.coordinator.observability.placement_health import PlacementHealth, settle_bound_s
from groupcoord.coordinator.observability.registry import REGISTRY
from groupcoord.coordinator.observability.serve import ServeMetrics
from groupcoord.coordinator.runtime.cluster_watch import ClusterWatch
from groupcoord.coordinator.runtime.log import LogTopicSpec, ensure_log_topic
from groupcoord.coordinator.runtime.peers import PeerWatch, await_takeover
from groupcoord.coordinator.runtime.placement import (
    Incarnation,
    Node,
    Placement,
    PlacementConfig,
    derived_instance_id,
    derived_node_id,
)
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.runtime.shard import Shard, ShardStatus
from groupcoord.coordinator.security.authorizer import AclAuthorizer, AclError, ClusterAclSource, FileAclSource
from groupcoord.coordinator.security.cluster_login import ClusterLogin, UnsupportedLogin
from groupcoord.coordinator.service.gateway_handler import CoordinatorApiHandler
from groupcoord.coordinator.service.handover_relay import HandoverRelay
from groupcoord.coordinator.service.metadata_cache import MetadataCache, TopicInfo, TopicNames
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.coordinator.service.secured_handler import SecuredHandler
from groupcoord.coordinator.service.service import GroupCoordinatorService
from groupcoord.coordinator.service.share_data import ShareDataPath
from groupcoord.coordinator.service.share_fetcher import ShareRecordFetcher
from groupcoord.coordinator.txn.bridge import TxnBridge
from groupcoord.coordinator.txn.topic import transaction_topic, transaction_topic_spec
from groupcoord.local_broker import parse_hostport

log = logging.getLogger(__name__)
T = TypeVar("T")


class Say:
    """What serve tells its operator. With ``log_format = "json"`` (the default) only log records,
    so that every line on stderr is a JSON object: progress (shard moves) at INFO, moves this
    process did not ask for (lost, failed, taken over, reloading) at WARNING, the reason it stops
    at ERROR. With ``"text"``, a message below the log level is still a console line, for a person
    at a terminal, and the reason it stops is an ``error:`` line."""

    def __init__(self, console: Console, text: bool) -> None:
        self.console = console
        self.text = text

    def _say(self, level: int, message: str) -> None:
        log.log(level, message)
        if self.text and not log.isEnabledFor(level):
            self.console.print(message, highlight=False, markup=False, soft_wrap=True)

    def info(self, message: str) -> None:
        self._say(logging.INFO, message)

    def warning(self, message: str) -> None:
        self._say(logging.WARNING, message)

    def error(self, message: str) -> None:
        if self.text:
            self.console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
        else:
            log.error(message)


def group_handler(
    relay: HandoverRelay,
    topics: TopicNames,
    authorizer: AclAuthorizer | None,
    own_topics: frozenset[str],
    own_groups: frozenset[str],
) -> MeteredHandler:
    """The gateway's group handler in ``serve``: metered, then ACL-checked, then relayed at a
    stop. Each layer passes ``answer_now`` on to the next (a layer without it turns the gateway's
    at-once path off: tests/ha/test_handover_relay.py)."""
    return MeteredHandler(SecuredHandler(relay, topics, authorizer, own_topics, own_groups))


def group_lookup_check(handler: MeteredHandler) -> GroupLookupCheck:
    """FindCoordinator's ACL check, by the ACL-checking layer of ``group_handler``'s chain."""
    secured = handler.inner
    assert isinstance(secured, SecuredHandler)
    return secured.may_find_group


def run(settings: Settings, console: Console) -> int:
    """Run until SIGINT/SIGTERM; returns the process exit code."""
    say = Say(console, settings.log_format == "text")
    try:
        factory = loop_factory(settings.event_loop, tls_listener=settings.gateway.listener_tls is not None)
    except ImportError:
        say.error("event_loop = uvloop, but uvloop is not installed")
        return 1
    except ValueError as exc:
        say.error(str(exc))
        return 1
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(_serve(settings, say))


# How long Metadata still lists a process after it stopped owning shards (Kafka drops a broker
# from Metadata when it is fenced, which is when its leaderships move). librdkafka decommissions a
# broker that a Metadata answer leaves out, and a decommissioned broker stays in its coordinator
# cache: a coordinator request (send_offsets_to_transaction's TxnOffsetCommit) that finds it there
# waits for a state change that never comes, past its own timeout (librdkafka #5511, #5456). A
# request that waits for a coordinator that is down asks FindCoordinator again on the broker's next
# state change, at most once a second (``rd_kafka_coord_req_fsm``); the decommission is one such
# change, so listing the process for longer than that second after FindCoordinator named its
# successor lets that last query find the successor. Not 1 s flat: answers and loops lag on a busy host.
DEPARTED_LISTED_S = 3.0


class PlacementLocator:
    """FindCoordinator from any process: the owner of the group's shard, as placement last saw it."""

    def __init__(
        self,
        runtime: CoordinatorRuntime[GroupCoordinatorState],
        placement: Placement | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.runtime = runtime
        self.placement = placement
        self._clock = clock
        # The processes the last Metadata answer listed as owners, and those that stopped owning
        # shards since (node id -> (node, when first seen without shards)): listed a while longer.
        self._owners: dict[int, Node] = {}
        self._departed: dict[int, tuple[Node, float]] = {}

    def locate(self, group_id: str) -> CoordinatorAddress:
        placement = self.placement
        if placement is None or not self.runtime.partitions:
            return _NOT_AVAILABLE
        partition = partition_for(group_id, self.runtime.partitions)
        if partition in self.runtime.shards:
            # Ours, loading or active: the request itself gets COORDINATOR_LOAD_IN_PROGRESS if need be.
            me = placement.me
            return CoordinatorAddress(me.node_id, me.host, me.port)
        owner = placement.owner(partition)
        if owner is None:
            placement.refresh_soon()
            return _NOT_AVAILABLE
        return CoordinatorAddress(owner.node_id, owner.host, owner.port)

    def listing_gap(self) -> ErrorCode:
        """COORDINATOR_NOT_AVAILABLE while some shard's groups are listed by no process: before
        placement started, out of contact with the placement group (this process has stopped
        its shards, and knows nothing current of the others'), or while a shard has no known
        owner. Kafka's admin clients ask ListGroups of every node and retry this error; an empty
        or partial list without an error would have a monitoring tool forget those groups."""
        placement = self.placement
        if placement is None or not self.runtime.partitions:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not placement.in_contact() or placement.unowned(self.runtime.partitions):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def peers(self) -> list[CoordinatorAddress]:
        """Every process that owns a shard, even one found dead (killed: its listener refuses), as
        Kafka lists a dead broker until its leaderships move, and for ``DEPARTED_LISTED_S`` those
        that stopped owning shards (see there): a client waiting on one as its coordinator keeps
        its broker, whose failed connects make it ask FindCoordinator again. A process that
        withdrew (a graceful stop: it handed its shards over and told its clients to move on) is
        left out at once, as Kafka drops a broker after its controlled shutdown: an admin client
        that asks every node listed (ListGroups) would wait its whole timeout on it."""
        if self.placement is None:
            return []
        now = self._clock()
        withdrawn = {i for i, inc in self.placement.incarnations.items() if inc.withdrawn}
        owners = {n.node_id: n for n in self.placement.live_nodes() if n.node_id not in withdrawn}
        for node_id, node in self._owners.items():
            if node_id not in owners and node_id not in self._departed and node_id not in withdrawn:
                self._departed[node_id] = (node, now)
        self._departed = {
            node_id: (node, since)
            for node_id, (node, since) in self._departed.items()
            if node_id not in owners and node_id not in withdrawn and now - since < DEPARTED_LISTED_S
        }
        self._owners = owners
        listed = [*owners.values(), *(node for node, _ in self._departed.values())]
        return [CoordinatorAddress(n.node_id, n.host, n.port) for n in listed]


_NOT_AVAILABLE = CoordinatorAddress(-1, "", -1, int(ErrorCode.COORDINATOR_NOT_AVAILABLE), "shard owner not known yet")


class ShardMoves:
    """Loads assigned shards, drops revoked ones, and says so once per move (with the time taken)."""

    def __init__(self, runtime: CoordinatorRuntime[GroupCoordinatorState], say: Say) -> None:
        self.runtime = runtime
        self._say = say
        self.loop = asyncio.get_running_loop()
        self.tasks: set[asyncio.Task[None]] = set()

    def say(self, text: str, warn: bool = False) -> None:
        # A move this process did not ask for (lost, failed, taken over) is a warning.
        (self._say.warning if warn else self._say.info)(text)

    # Called on the placement thread.
    def assigned(self, partitions: list[int]) -> None:
        asyncio.run_coroutine_threadsafe(self._assign(partitions), self.loop).result(30)

    def revoked(self, partitions: list[int], lost: bool) -> None:
        # Waits: the shards must stop serving before the rebalance can hand them to someone else.
        asyncio.run_coroutine_threadsafe(self._revoke(partitions, lost), self.loop).result(30)

    async def _assign(self, partitions: list[int]) -> None:
        for p in partitions:
            shard = self.runtime.shards.get(p)
            if shard is not None and shard.status in (ShardStatus.ACTIVE, ShardStatus.LOADING):
                continue
            started = time.perf_counter()
            shard = self.runtime.load_shard(p)
            task = asyncio.create_task(self._report(p, shard, started))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        self.say(f"owns shards {sorted(self.runtime.shards)} (assigned {partitions})")

    async def _report(self, partition: int, shard: Shard[GroupCoordinatorState], started: float) -> None:
        generation = shard.generation
        await shard.wait_loaded()
        if shard.generation != generation and shard.status is not ShardStatus.ACTIVE:
            return
        elapsed = time.perf_counter() - started
        if shard.status is ShardStatus.ACTIVE and shard.load_report is not None:
            r = shard.load_report
            # The steps count from the shard's load start, which is ``started`` give or take a call.
            self.say(f"shard {partition} loaded in {elapsed:.3f}s ({r.records} records, epoch {r.epoch}; {r.steps()})")
        else:
            self.say(f"shard {partition} did not load: {shard.status.value} {shard.error or ''}".rstrip(), warn=True)

    async def _revoke(self, partitions: list[int], lost: bool) -> None:
        for p in partitions:
            self.runtime.unload_shard(p)
        # "lost" comes from librdkafka's on_lost or from placement's own session clock; either way
        # this process was out of contact past the session, so another may already hold them.
        how = "lost (out of contact with the placement group past its session)" if lost else "revoked"
        self.say(f"shards {partitions} {how}; owns shards {sorted(self.runtime.shards)}", warn=lost)

    def reload_guard(self, placement: Placement) -> Callable[[int, str], bool]:
        """A shard whose append failed or landed elsewhere stops; it reloads (claiming a new
        epoch) only once the cluster confirms this process still owns it. A process that was
        paused while its shards moved learns here, not by fencing the new owner."""

        def guard(partition: int, reason: str) -> bool:
            task = asyncio.create_task(self._verified_reload(placement, partition, reason))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            return False

        return guard

    async def _verified_reload(self, placement: Placement, partition: int, reason: str) -> None:
        if await asyncio.to_thread(placement.confirm_owner, partition):
            shard = self.runtime.shards.get(partition)
            if shard is not None and shard.status is ShardStatus.FENCED:
                if shard.reload_logged:  # the same reason again is logged only now and then (``Shard.reload``)
                    self.say(f"shard {partition} reloading ({reason})", warn=True)
                started = time.perf_counter()
                self.runtime.load_shard(partition)
                await self._report(partition, shard, started)
        else:
            self.say(f"shard {partition} stopped: another process owns it now ({reason})", warn=True)

    def all_active(self) -> bool:
        shards = self.runtime.shards.values()
        return bool(shards) and all(s.status is not ShardStatus.LOADING for s in shards)


@dataclass(frozen=True)
class PlacementMode:
    assignment_strategy: str
    static_membership: bool

    def describe(self) -> str:
        static = "static membership" if self.static_membership else "dynamic membership"
        return f"{self.assignment_strategy}, {static}"


def placement_mode(settings: PlacementSettings, cluster_api_keys: Iterable[int]) -> PlacementMode:
    """The settings' choice, with ``auto`` resolved against what the cluster advertises.

    A cluster that advertises ConsumerGroupHeartbeat runs a modern group coordinator, whose classic
    protocol completes cooperative rebalances and expires static members: there adding a process
    moves only the shards it takes, and a quick restart gets its shards back with no rebalance.
    Elsewhere the eager assignor with dynamic members is the one that always converges.
    """
    modern = ApiKey.CONSUMER_GROUP_HEARTBEAT in set(cluster_api_keys)
    strategy = settings.assignment_strategy
    if strategy == "auto":
        strategy = "cooperative-sticky" if modern else "roundrobin"
    static = settings.static_membership if settings.static_membership is not None else modern
    return PlacementMode(strategy, static)


def placement_config(settings: Settings, host: str, port: int, mode: PlacementMode, bound: str = "") -> PlacementConfig:
    p = settings.placement
    instance_id = p.instance_id or derived_instance_id(host, port) if mode.static_membership else None
    return PlacementConfig(
        log_topic=settings.log_topic,
        group_id=p.group_id or f"{PLACEMENT_GROUP_PREFIX}{settings.log_topic}",
        directory_topic=p.directory_topic or f"{settings.log_topic}-directory",
        instance_id=instance_id,
        session_timeout_ms=p.session_timeout_ms,
        heartbeat_interval_ms=p.heartbeat_interval_ms,
        assignment_strategy=mode.assignment_strategy,
        refresh_interval_ms=p.refresh_interval_ms,
        replication_factor=settings.log_replication_factor,
        derived_node_ids=p.node_id is None,
        bound=bound,
    )


def member_remover(settings: Settings, gateway: GatewayServer) -> MemberRemover | None:
    """What removes a dead peer's member from the placement group (``PeerWatch``), and this
    process's own static member at a graceful stop; None where the cluster authenticates with SASL
    (the removal's own connection does not log in), and then the session timeout decides."""
    protocol = str(settings.client.get("security.protocol", "plaintext")).lower()
    if protocol not in ("plaintext", "ssl"):
        log.info("fast failover off: placement cannot remove members over %s; the session timeout decides", protocol)
        return None
    return MemberRemover(gateway.cluster.bootstrap, gateway.upstream_tls)


def removal(
    remover: MemberRemover, group_id: str, loop: asyncio.AbstractEventLoop
) -> Callable[[Incarnation, str], int | None]:
    """``PeerWatch``'s way to remove a member: on the loop, waited for on the watch's thread."""

    def remove(incarnation: Incarnation, why: str) -> int | None:
        assert incarnation.member_id is not None
        member = Member(group_id, incarnation.member_id, incarnation.instance_id)
        try:
            code = asyncio.run_coroutine_threadsafe(remover.remove(member, why[:200]), loop).result(30)
        except (RemovalFailed, TimeoutError, OSError) as exc:
            log.warning("placement could not remove member %s: %s", incarnation.member_id, exc)
            return None
        # While the group rebalances, not now: the rebalance removes a member that does not rejoin.
        return None if code == REBALANCE_IN_PROGRESS else code

    return remove


def removal_of_many(
    remover: MemberRemover, group_id: str, loop: asyncio.AbstractEventLoop
) -> Callable[[list[Incarnation], str], dict[str, int] | None]:
    """``await_takeover``'s way to remove several dead members in one LeaveGroup (None: not now)."""

    def remove(incarnations: list[Incarnation], why: str) -> dict[str, int] | None:
        members = [Member(group_id, i.member_id, i.instance_id) for i in incarnations if i.member_id is not None]
        try:
            codes = asyncio.run_coroutine_threadsafe(remover.remove_many(members, why[:200]), loop).result(30)
        except (RemovalFailed, TimeoutError, OSError) as exc:
            log.warning("placement could not remove members %s: %s", [m.member_id for m in members], exc)
            return None
        return None if REBALANCE_IN_PROGRESS in codes.values() else codes

    return remove


def _authorization(
    settings: Settings, client_config: dict[str, Any]
) -> tuple[AclAuthorizer | None, ClusterAclSource | FileAclSource | None]:
    """The ACL authorizer (only when authentication is required) and, for cluster ACLs, its
    refresher. Built before the listener opens, so no request is ever served without it: until
    the cluster's ACLs are read it holds none, and Kafka's rule (no matching ACL denies) applies."""
    if settings.gateway.authentication != "required":
        return None, None
    config = settings.gateway.authorization
    authorizer = AclAuthorizer(super_users=config.super_users)
    if config.acls == "file":
        if config.acl_file is None:
            raise AclError("gateway.authorization.acls = 'file' needs gateway.authorization.acl_file")
        source = FileAclSource(config.acl_file, authorizer, config.refresh_interval_ms / 1000)
        source.load()  # reloaded on change while serving (an invalid edit keeps the old ACLs)
        return authorizer, source
    return authorizer, ClusterAclSource(client_config, authorizer, config.refresh_interval_ms / 1000)


class _NoWaitExecutor(ThreadPoolExecutor):
    """The loop's default executor, which the process does not wait for on the way out: a stop
    signal during startup leaves a blocking call to an unreachable cluster (up to cluster_wait_ms of retries)
    in one of its threads, and a pod being deleted must not wait that out."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


class _Stopped(Exception):
    pass


async def _unless_stopped(stop: asyncio.Event, step: Awaitable[T]) -> T:
    """``step``'s result, or ``_Stopped`` as soon as a stop signal comes first."""
    task = asyncio.ensure_future(step)
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not task.done():
        task.cancel()
        raise _Stopped
    return task.result()


async def _serve(settings: Settings, say: Say) -> int:
    loop = asyncio.get_running_loop()
    loop.set_default_executor(_NoWaitExecutor())
    stop = asyncio.Event()

    def stopping() -> None:
        if not stop.is_set():
            stop.set()
            _exit_after(settings.stop_grace_ms / 1000, say)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping)
    try:
        return await _serving(settings, say, stop)
    except _Stopped:
        say.info("stopped while starting")
        return 0


def _where_threads() -> str:
    """Each thread's innermost frame in this package, for a line about a stop that did not end."""
    names = {t.ident: t.name for t in threading.enumerate()}
    where = []
    for ident, frame in sys._current_frames().items():
        at: FrameType | None = frame
        while at is not None and "groupcoord" not in at.f_code.co_filename:
            at = at.f_back
        if at is not None and ident != threading.get_ident():
            where.append(f"{names.get(ident, ident)}: {at.f_code.co_name} ({at.f_code.co_filename}:{at.f_lineno})")
    return "; ".join(sorted(where))


def _exit_after(grace_s: float, say: Say) -> None:
    """Exit the process ``grace_s`` after a stop signal if the graceful stop has not ended by then
    (its steps are bounded, but a librdkafka call that never returns, against a cluster that went
    away, would otherwise keep it up past Kubernetes' grace period, serving nothing)."""

    def exit_now() -> None:
        say.error(f"the graceful stop did not end within {grace_s:g}s ({_where_threads()}); exiting now")
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        os._exit(1)

    timer = threading.Timer(grace_s, exit_now)
    timer.name = "stop-grace"
    timer.daemon = True
    timer.start()


async def _protect_ids(gateway: GatewayServer, metadata: MetadataCache, topics: frozenset[str]) -> None:
    """Requests naming the sidecar's own topics by id are refused too (they are never shown to
    clients, but an id is not a secret)."""
    for topic in topics:
        topic_id = await metadata.uuid_of(topic)
        if topic_id is not None:
            gateway.protected.add_id(topic_id)


async def _serving(settings: Settings, say: Say, stop: asyncio.Event) -> int:
    # Every client of the cluster logs through the `librdkafka` logger (JSON, rate-limited).
    client_config = logs.client_config(settings.client_config())
    # Consumers (they fetch) go through the relay; producers and admin clients talk to the cluster directly.
    relay = (
        ReaderRelay(client_config["bootstrap.servers"]) if settings.reader_relay and relayable(client_config) else None
    )
    reader_config = relay.start().reader_config(client_config) if relay is not None else client_config
    try:
        return await _serving_with(settings, say, stop, client_config, reader_config, relay)
    finally:
        if relay is not None:
            relay.close()


async def _serving_with(
    settings: Settings,
    say: Say,
    stop: asyncio.Event,
    client_config: dict[str, Any],
    reader_config: dict[str, Any],
    relay: ReaderRelay | None = None,
) -> int:
    loop = asyncio.get_running_loop()
    placement_settings = settings.placement
    txn_topic = transaction_topic(settings.log_topic)
    own_topics = frozenset(
        {settings.log_topic, placement_settings.directory_topic or f"{settings.log_topic}-directory", txn_topic}
    )
    placement_group = placement_settings.group_id or f"groupcoord-placement-{settings.log_topic}"
    # The placement group and the directory reader's group (runtime/placement.py).
    own_groups = frozenset({placement_group, f"{placement_group}-directory"})
    metadata = MetadataCache(client_config, settings.metadata_refresh_interval_ms / 1000, hidden_topics=own_topics)
    handlers = GroupCoordinatorShard(
        offsets_config=settings.offsets,
        classic_config=settings.classic_group_config(),
        consumer_config=settings.consumer_group_config(),
        share_config=settings.share_group_config(),
        metadata=lambda: metadata.image,
    )
    runtime: CoordinatorRuntime[GroupCoordinatorState] = CoordinatorRuntime(
        client_config,
        LogTopicSpec(
            name=settings.log_topic,
            partitions=settings.log_partitions,
            replication_factor=settings.log_replication_factor,
        ),
        handlers,
        owner_id=settings.owner_id,
        # The log reader's fetches wait in the relay for the writes to land (reader_relay.py).
        reader_config=relay.reader_config(client_config, tails=True) if relay is not None else reader_config,
        on_written=relay.kick if relay is not None else None,
        on_behind=relay.behind if relay is not None else None,
    )
    runtime.stuck_warning_ms = settings.stuck_shard_warning_ms
    runtime.stuck_reload_ms = settings.stuck_shard_reload_ms
    runtime.cluster_wait_s = settings.cluster_wait_ms / 1000
    service = GroupCoordinatorService(runtime, handlers, settings.gateway.max_group_response_bytes)
    metrics = ServeMetrics(
        lambda: runtime.shards.values(),
        reader_config,
        settings.metrics_lag_interval_ms if settings.metrics_listen else 0,
        settings.metrics_lag_max_partitions,
    )
    runtime.observer = metrics.observer
    try:
        authorizer, acl_source = _authorization(settings, client_config)
    except (AclError, OSError) as exc:
        say.error(str(exc))
        return 1
    cluster_login: ClusterLogin | None = None
    bridged = True
    try:
        # The transaction bridge's own connections log in as the sidecar's librdkafka clients do.
        cluster_login = ClusterLogin.from_client_config(client_config)
    except UnsupportedLogin as exc:
        # Everything else works with such a cluster: only transactional offset commits cannot.
        say.warning(f"{exc}: TxnOffsetCommit will be answered COORDINATOR_NOT_AVAILABLE")
        bridged = False
    locator = PlacementLocator(runtime)
    service.listing_gap = locator.listing_gap
    api_handler = CoordinatorApiHandler(service, metadata)
    # At a graceful stop, requests for the shards handed over are relayed to their successors.
    handover_relay = HandoverRelay(api_handler, service.partition_for)
    host, port = parse_hostport(settings.listen, 9094)
    group_api = group_handler(handover_relay, metadata, authorizer, own_topics, own_groups)
    gateway = GatewayServer(
        GatewayConfig(
            bootstrap_servers=client_config["bootstrap.servers"],
            listen_host=host,
            listen_port=port,
            advertised_host=settings.advertised_host,
            protected_topics=sorted(own_topics),
            protected_groups=sorted(own_groups),
            share_groups_enabled=settings.share_groups_enabled,
            **settings.gateway.model_dump(exclude={"authorization", "max_group_response_bytes"}),
        ),
        group_api,
        locator,
        GatewayMetrics(),
    )
    gateway.peers = locator.peers
    gateway.may_find_group = group_lookup_check(group_api)
    gateway.deletion_listeners.append(metadata.deleted_by_request)
    gateway.creation_listeners.append(metadata.created_by_request)
    gateway.metadata_seen = lambda answer: metadata.seen((t.name, t.topic_id, t.error_code) for t in answer.topics)
    # Other processes may front the same cluster: a client must see a coordinator the cluster
    # answers change node when a survivor answers for it (gateway/rewrite.py, coordinator_alias).
    gateway.alias_coordinators = True
    # As group configs are relayed (gateway/group_configs.py): plain listeners only, since the
    # successor would refuse an anonymous relay on a TLS or authenticating listener.
    handover_relay.enabled = gateway.config.listener_tls is None and gateway.config.authentication == "none"
    handover_relay.timeout_s = gateway.config.upstream_connect_timeout_s
    share_fetcher: ShareRecordFetcher | None = None
    if settings.share_groups_enabled:
        # The share data path reads the records it hands out from the brokers, the way the
        # gateway's forwarding reaches them (same addresses and TLS), logged in as the
        # transaction bridge is (the ``client`` credentials) on a cluster that requires SASL.
        if not bridged:
            say.warning("share groups: ShareFetch cannot log in to the cluster with these client settings")
        share_fetcher = ShareRecordFetcher(
            gateway.config.bootstrap_addresses(),
            gateway.upstream_tls,
            gateway.config.upstream_connect_timeout_s,
            cluster_login,
        )
        share_data = api_handler.share_data = ShareDataPath(service, metadata, share_fetcher)
        share_data.relay_timeout_s = gateway.config.upstream_connect_timeout_s

        def share_owner(group_id: str) -> tuple[str, int] | None:
            where = locator.locate(group_id)
            if where.error_code or where.node_id == gateway.config.coordinator_node_id:
                return None
            return where.host, where.port

        # A client's sessions end with its connection: their records go back at once.
        gateway.disconnect_listeners.append(share_data.connection_closed)
        link = relay_link(gateway.config, cluster_login)
        if link is not None:
            share_data.owner_of = share_owner
            share_data.relay_link = link
            if cluster_login is not None:
                # Relays log in as the sidecar: the owner answers them for the caller they name.
                gateway.config = gateway.config.model_copy(update={"relay_principal": cluster_login.username})
        else:
            say.warning(
                "share groups: requests for groups another process owns are answered NOT_LEADER_OR_FOLLOWER "
                "(relaying them to a TLS or authenticating listener needs SASL credentials in the client settings)"
            )
    metrics.watch_connections(gateway.connections)
    readiness = Readiness()
    health: HealthServer | None = None
    try:
        health = HealthServer(settings.metrics_listen, readiness, REGISTRY) if settings.metrics_listen else None
    except OSError as exc:
        if "metrics_listen" in settings.model_fields_set:
            # Asked for by name: probes and scrapes would silently miss a process that went on.
            say.error(f"cannot listen on metrics_listen {settings.metrics_listen}: {exc.strerror}")
            return 1
        # The default address only: several processes on one host (drills, tests) share it, and
        # coordination must not depend on the health endpoint.
        log.warning("health endpoint off: cannot listen on %s: %s", settings.metrics_listen, exc.strerror)
    # Nothing is claimed before the process can serve: listen first, then reach the cluster,
    # and only then join placement (the only way this process ever writes to the log).
    try:
        await gateway.start()
    except OSError as exc:
        say.error(f"cannot listen on {settings.listen}: {exc.strerror}")
        if health is not None:
            health.close()
        return 1
    public_host = gateway.config.public_host
    node_id = settings.placement.node_id
    if node_id is None:
        node_id = derived_node_id(public_host, gateway.port)
    gateway.config = gateway.config.model_copy(update={"coordinator_node_id": node_id})
    placement: Placement | None = None
    peers: PeerWatch | None = None
    remover: MemberRemover | None = None
    watch: ClusterWatch | None = None
    bridge: TxnBridge | None = None
    runtime_started = False
    metrics.start()
    try:
        try:
            # Creating the log topic retries an unreachable cluster (cluster_wait_ms): a stop signal must not wait.
            await _unless_stopped(stop, runtime.start(partitions=()))
            runtime_started = True
            await _unless_stopped(
                stop,
                asyncio.to_thread(
                    ensure_log_topic,
                    client_config,
                    transaction_topic_spec(txn_topic, runtime.partitions, settings.log_replication_factor),
                    runtime.cluster_wait_s,
                ),
            )
            await metadata.refresh()
        except KafkaException as exc:
            # In the CLI's words: "cannot reach HOST:PORT ...: no connection (Connection refused)".
            why = f"{describe_error(exc.args[0] if exc.args else exc)}{logs.last_line.reason()}"
            say.error(f"cannot reach {settings.bootstrap_servers} or create the log topic {settings.log_topic}: {why}")
            return 1
        await _protect_ids(gateway, metadata, own_topics)
        if acl_source is not None:
            try:
                await acl_source.refresh()
            except Exception as exc:  # KafkaException, or a timeout: either way the sidecar cannot authorize
                say.error(
                    f"cannot read ACLs from the cluster (DescribeAcls): {exc}; a cluster without an "
                    "authorizer needs gateway.authorization.acls = 'file'"
                )
                return 1
            acl_source.start()
        service_ready(service, metadata)
        if bridged:
            bridge = TxnBridge(
                runtime, handlers, txn_topic, gateway.cluster.bootstrap, gateway.cluster.tls, login=cluster_login
            )
            service.txn = bridge
            bridge.start()
        metadata.start()
        moves = ShardMoves(runtime, say)
        try:
            versions = await gateway.cluster.api_versions(None)
        except ClusterUnavailable as exc:
            say.error(f"cannot reach the cluster: {exc}")
            return 1
        mode = placement_mode(settings.placement, (k.api_key for k in versions.api_keys))
        moves.say(f"placement: {mode.describe()}")
        placement = Placement(
            client_config,
            placement_config(settings, public_host, gateway.port, mode, bound=f"{host}:{gateway.port}"),
            Node(node_id, public_host, gateway.port),
            moves.assigned,
            moves.revoked,
            reader_config=reader_config,
        )
        # The listener answers clients from here on, and a process restarted after a kill waits
        # before it joins (``_takeover_first``: up to the session timeout) having read the owners
        # and the directory: its Metadata and FindCoordinator answers use them meanwhile. Until
        # the start returned they listed no other process, and a client bootstrapped here dropped
        # its live coordinator on a survivor (seen in the failover drill: a 10 s recovery).
        locator.placement = placement
        remover = member_remover(settings, gateway)
        fast = remover is not None and settings.placement.fast_failover
        before_join: Callable[[], None] | None = None
        if remover is not None and fast:
            before_join = _takeover_first(
                placement,
                removal(remover, placement.config.group_id, loop),
                settings.placement,
                say,
                removal_of_many(remover, placement.config.group_id, loop),
            )
        try:
            await asyncio.to_thread(placement.start, before_join)
        except KafkaException as exc:
            say.error(f"cannot join the placement group: {exc}")
            return 1
        handover_relay.successor_of = placement.successor_address
        # The directory topic may have just been created: its id is protected too.
        await metadata.refresh()
        await _protect_ids(gateway, metadata, own_topics)
        runtime.reload_guard = moves.reload_guard(placement)
        if remover is not None and fast:
            peers = PeerWatch(placement, removal(remover, placement.config.group_id, loop))
            peers.start()
        # Rides out outages: reports them (not ready) and creates the topics again if the cluster lost them.
        watch = ClusterWatch(
            client_config,
            runtime.topic_spec,
            placement.config.directory_topic,
            on_recreated=lambda topics: _recreated(runtime, placement, topics),
            on_back=placement.reannounce,
        )
        watch.start()
        gateway.settle_file_limit()
        # Report readiness once the first assignment is loaded (bounded: with more processes
        # than shards this one may own none and still route).
        session_s = settings.placement.session_timeout_ms / 1000
        deadline = loop.time() + settle_bound_s(session_s)
        settled = PlacementHealth(settle_bound_s(session_s), started=loop.time())
        said_unsettled = False
        while not moves.all_active() and loop.time() < deadline and not stop.is_set():
            await asyncio.sleep(0.05)
        # Ready from here on while every owned shard is active (the listener is bound by now);
        # set before the "listening" line so whoever waits for that line sees the answer.
        readiness.set_shards(shard_states(shard_statuses(runtime)))
        readiness.set_listening(True)
        print(f"listening on {host}:{gateway.port}", flush=True)
        while not stop.is_set():
            # The HTTP thread reads a copy, never the runtime's own dict.
            readiness.set_shards(shard_states(shard_statuses(runtime)))
            readiness.set_cluster_problem(watch.problem)
            problem = settled.look(placement.unowned(runtime.partitions), placement.silent_s(), session_s, loop.time())
            if settled.unsettled != said_unsettled:
                # Said once each way (an operator probe found placement stuck 9.5 min, said only by
                # /readyz). Being out of contact is not: the lost shards and the unreachable
                # cluster are said already.
                if settled.unsettled:
                    say.warning(f"not ready: {problem}")
                else:
                    say.info("placement settled: every shard has an owner")
                said_unsettled = settled.unsettled
            readiness.set_placement_problem(problem)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)
        say.info("stopping: handing the shards over")  # the start of a graceful stop, for its timeline
        return 0
    finally:
        readiness.set_listening(False)
        if peers is not None:
            await asyncio.to_thread(peers.close)
        if placement is not None:
            # (Out of contact with the cluster, there is no rebalance to wait for that could end.)
            if remover is not None and placement.in_contact():
                await _rebalance_ended(placement, remover, settings.placement.session_timeout_ms / 1000, say)
            # Hand the shards over first, while the listener still answers (FindCoordinator sends
            # clients on as soon as the next owners announce): shards stop serving, then the
            # process leaves the placement group, so the cluster rebalances now rather than at
            # the session timeout.
            await _leave_placement(runtime, placement, remover, say, handover_relay)
        if health is not None:
            health.close()
        await metrics.close()
        await gateway.stop()
        if share_fetcher is not None:
            await share_fetcher.close()
        if api_handler.share_data is not None and api_handler.share_data.relay_link is not None:
            api_handler.share_data.relay_link.close()
        if bridge is not None:
            await bridge.stop()
        if watch is not None:
            await asyncio.to_thread(watch.close)
        await metadata.stop()
        if acl_source is not None:
            await acl_source.stop()
        if runtime_started:
            await runtime.close()


def _takeover_first(
    placement: Placement,
    remove: Callable[[Incarnation, str], int | None],
    settings: PlacementSettings,
    say: Say,
    remove_many: Callable[[list[Incarnation], str], dict[str, int] | None] | None = None,
) -> Callable[[], None]:
    """Run before the join (placement's thread): a process restarted on its predecessor's address
    lets the others take the predecessor's shards over first, and no process joins while a dead
    one's removal is due (``await_takeover``)."""

    def wait() -> None:
        if await_takeover(placement, remove, settings.session_timeout_ms / 1000, remove_many=remove_many):
            say.info("placement: joining now that the other processes took over the shards of the processes gone")

    return wait


async def _rebalance_ended(placement: Placement, remover: MemberRemover, cap_s: float, say: Say) -> None:
    """A stop that lands in a placement rebalance (the previous restart's join, say) waits for it
    to end, serving meanwhile, bounded by ``cap_s``. Leaving in the middle of one, the local broker
    (Tansu) went on assigning shards to the member that left and stalled the group for minutes
    (seen in the drill, as with a member removed mid-rebalance, ``peers.py``); and this process's
    part of the rebalance, once done, is handed over like the rest of its shards."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        try:
            state = await remover.group_state(placement.config.group_id)
        except RemovalFailed as exc:
            log.info("placement group state unknown (%s); leaving now", exc)
            return
        if state in _SETTLED:
            break
        if loop.time() - started >= cap_s:
            say.warning(f"placement group still {state} after {cap_s:.0f}s; leaving in the middle of its rebalance")
            return
        await asyncio.sleep(0.1)
    if loop.time() - started > 0.2:
        # The assignment that ended it reaches this process at its next poll (every 0.1 s).
        await asyncio.sleep(0.3)
        say.info(f"placement: stopping once the rebalance under way ended ({loop.time() - started:.1f}s)")


# Classic group states with no rebalance under way ("": the coordinator did not say).
_SETTLED = frozenset({"Stable", "Empty", "Dead", ""})


async def _leave_placement(
    runtime: CoordinatorRuntime[GroupCoordinatorState],
    placement: Placement,
    remover: MemberRemover | None,
    say: Say,
    handover_relay: HandoverRelay | None = None,
) -> None:
    owned = sorted(runtime.shards)
    loop = asyncio.get_running_loop()

    def unload() -> None:
        if handover_relay is not None:
            # From here their requests wait for the successors and are relayed to them.
            handover_relay.stopping(owned)
        for p in owned:
            runtime.unload_shard(p)

    def stop_serving() -> None:
        # Called on placement's thread once the successors are chosen, right before they are
        # named: the shards serve here until then, and never after.
        done = threading.Event()

        def run() -> None:
            try:
                unload()
            finally:
                done.set()

        loop.call_soon_threadsafe(run)
        done.wait()

    member_id = placement.me_now.member_id
    # Successors take the shards now (runtime/handover.py), then a dynamic member's LeaveGroup.
    handed = await asyncio.to_thread(placement.close, owned, stop_serving)
    if handed:
        to = ", ".join(f"{p} to node {h.successor}" for p, h in sorted(handed.items()))
        say.info(f"placement: shards handed over ahead of the rebalance: {to}")
    elif handover_relay is not None:
        handover_relay.give_up()
    instance_id = placement.config.instance_id
    # (Closing the consumer sent a dynamic member's LeaveGroup, unless the close never returned.)
    left = instance_id is None and placement.closed
    if instance_id is not None and member_id is not None and remover is not None:
        # librdkafka sends no LeaveGroup for a static member: without one its shards would wait
        # for the session timeout. (A restart then gets shards by a rebalance, not back as they were.)
        try:
            member = Member(placement.config.group_id, member_id, instance_id)
            code = await asyncio.wait_for(remover.remove(member, "graceful stop", only_if_stable=False), 30)
            left = code in (0, UNKNOWN_MEMBER_ID)
        except (RemovalFailed, TimeoutError, OSError) as exc:
            say.warning(f"could not leave the placement group ({exc}); shards move at the session timeout")
    if left:
        # Nobody (a restart in this process's place included) waits on it any more (runtime/peers.py).
        await asyncio.to_thread(placement.withdraw)
    say.info(f"placement left; shards {owned} handed over")
    if handover_relay is not None and handed:
        # The listener stays until the clients of the moved groups have gone to the successors
        # (service/handover_relay.py): closed under them, librdkafka may notice only a second later.
        await handover_relay.settled()
        say.info(f"handover: {handover_relay.relayed} requests relayed to the successors; closing the listener")


def shard_statuses(runtime: CoordinatorRuntime[GroupCoordinatorState]) -> dict[int, str]:
    """Each owned shard's status for readiness; an active shard whose writes are not read back is stuck."""
    return {p: "stuck" if s.stuck else s.status.value for p, s in runtime.shards.items()}


def _recreated(runtime: CoordinatorRuntime[GroupCoordinatorState], placement: Placement, topics: list[str]) -> None:
    """The cluster lost our topics and has them again, empty (called on the watch's thread)."""
    if runtime.topic in topics:
        runtime.loop.call_soon_threadsafe(runtime.log_recreated)
    placement.reannounce()


def service_ready(service: GroupCoordinatorService, metadata: MetadataCache) -> None:
    async def drop_offsets(deleted: list[TopicInfo]) -> None:
        await service.topics_deleted([(t.name, t.id_string) for t in deleted])

    metadata.on_topics_deleted(drop_offsets)
