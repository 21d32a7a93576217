"""The gateway's listeners: one bootstrap/coordinator port plus one port per backing broker.

Every listener answers the group APIs itself and forwards the rest; the bootstrap listener
forwards to any bootstrap broker, a broker listener to its own broker. Per-broker ports (rather
than routing each Produce/Fetch by partition leader behind one port) keep forwarding a plain byte
copy: the client already picks the right broker from Metadata, exactly as it would without us.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from types import TracebackType

from groupcoord.coordinator.gateway.client_stream import ClientStream
from groupcoord.coordinator.gateway.cluster import ClusterView
from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.connection import ClientConnection
from groupcoord.coordinator.gateway.context import GroupLookupCheck, ListenerView, MetadataSeen
from groupcoord.coordinator.gateway.file_limit import admissible_connections
from groupcoord.coordinator.gateway.handler import CoordinatorAddress, CoordinatorLocator, GroupApiHandler
from groupcoord.coordinator.gateway.limits import ByteBudget, ConnectionBudget
from groupcoord.coordinator.gateway.observer import NO_OBSERVER, GatewayObserver
from groupcoord.coordinator.gateway.protect import ProtectedTopics
from groupcoord.coordinator.gateway.rewrite import alias_nodes, coordinator_alias
from groupcoord.coordinator.gateway.upstream import UpstreamConnection
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterBroker
from groupcoord.coordinator.messages.metadata import MetadataResponseBroker

log = logging.getLogger(__name__)

# Kafka's socket.listen.backlog.size. asyncio accepts up to this many connections in one turn of
# the loop, each a descriptor, before any is refused: a burst of connections beyond the open-file
# ceiling needs that many at once, so it has to fit in file_limit.HEADROOM (asyncio's default,
# 100, left a few descriptors for everything else).
LISTEN_BACKLOG = 50


def accept_queue_length(max_connections: int) -> int:
    """How many connections the kernel may hold for a listener until the loop accepts them.

    Kafka's 50 is drained by an acceptor thread that does nothing else; here the event loop
    accepts between its other work, and a turn that handles a burst of joins takes a second or
    more. A queue of 50 then overflows, and Linux drops the SYNs and ignores the last ACK of
    handshakes that do not fit: the client believes it is connected, and its first request waits
    for the SYN-ACK to be sent again, 1, 2, 4, 8, 16 s later (large_group_bench, 5,000 members
    connecting together: ~1,350 overflows a run, a join answered after 52 s once). Queued
    connections hold no descriptor, so the queue holds as many as the gateway admits at once;
    the kernel caps it at ``net.core.somaxconn``."""
    return max(LISTEN_BACKLOG, max_connections)


def _deepen_accept_queue(server: asyncio.Server, length: int) -> None:
    # asyncio.Server listens with the backlog it accepts per turn; listen() again on a listening
    # socket only changes the queue's length (through a duplicate: the server's socket object
    # offers no listen()).
    for transport_socket in server.sockets:
        with socket.socket(fileno=os.dup(transport_socket.fileno())) as sock:
            sock.listen(length)


class Listener:
    """A sidecar port; ``node_id`` is None for the bootstrap/coordinator port."""

    def __init__(self, gateway: GatewayServer, node_id: int | None) -> None:
        self.gateway = gateway
        self.node_id = node_id
        self.port = 0
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        config = self.gateway.config
        loop = asyncio.get_running_loop()
        tls = self.gateway.listener_tls is not None
        # TLS is started per connection in _accept (not by the server), so a handshake in
        # progress already holds a connection slot and runs under its own deadline.
        self.server = await loop.create_server(
            lambda: ClientStream(loop, self._accept, tls),
            config.listen_host,
            port,
            backlog=LISTEN_BACKLOG,
        )
        _deepen_accept_queue(self.server, accept_queue_length(config.max_connections))
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def _accept(self, writer: ClientStream) -> None:
        gateway = self.gateway
        peer = writer.get_extra_info("peername") or ("?", 0)
        host = str(peer[0])
        refusal = gateway.admit(host)
        if refusal is not None:
            gateway.log_refusal(refusal)
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
            return
        task = asyncio.current_task()
        assert task is not None
        gateway.connections[task] = None
        gateway.per_ip[host] = gateway.per_ip.get(host, 0) + 1
        try:
            if gateway.listener_tls is not None:
                try:
                    await asyncio.wait_for(
                        writer.start_tls(gateway.listener_tls), gateway.config.tls_handshake_timeout_ms / 1000
                    )
                except (TimeoutError, OSError, ssl.SSLError) as exc:
                    log.debug("TLS handshake failed peer=%s:%s error=%s", host, peer[1], exc)
                    writer.close()
                    return
            connection = ClientConnection(gateway, self, writer)
            gateway.connections[task] = connection
            await connection.run()
        except asyncio.CancelledError:
            # Cancelled by stop(); ends here rather than as a cancelled task.
            pass
        finally:
            gateway.connections.pop(task, None)
            left = gateway.per_ip.get(host, 1) - 1
            if left > 0:
                gateway.per_ip[host] = left
            else:
                gateway.per_ip.pop(host, None)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


class _SelfLocator:
    def __init__(self, gateway: GatewayServer) -> None:
        self.gateway = gateway

    def locate(self, group_id: str) -> CoordinatorAddress:
        return self.gateway.coordinator_address()


def _no_peers() -> list[CoordinatorAddress]:
    return []


class GatewayServer:
    """Kafka-protocol front of the group coordinator.

    ``handler`` answers the group APIs; ``locator`` says which process coordinates a group
    (default: this one); ``observer`` hears of every request and forward (metrics). ``start()`` binds the bootstrap port; broker ports open as Metadata
    answers reveal brokers.
    """

    def __init__(
        self,
        config: GatewayConfig,
        handler: GroupApiHandler,
        locator: CoordinatorLocator | None = None,
        observer: GatewayObserver = NO_OBSERVER,
    ) -> None:
        self.config = config
        self.handler = handler
        self.observer = observer
        self.locator: CoordinatorLocator = locator or _SelfLocator(self)
        # The other coordinator processes sharing the shards: Metadata lists them as nodes too, so
        # admin clients ask each for its groups and a client whose sidecar dies knows another.
        self.peers: Callable[[], list[CoordinatorAddress]] = _no_peers
        # Set where other processes front the same cluster (``serve``): coordinators the cluster
        # answers are presented under node ids of this process's own (``rewrite.coordinator_alias``).
        self.alias_coordinators = False
        # Told the id of each client connection that closed (Kafka's ConnectionDisconnectListener:
        # the share data path drops the sessions it opened and releases their records).
        self.disconnect_listeners: list[Callable[[str], None]] = []
        # Told the topics (names, ids) a DeleteTopics relayed here deleted, before its answer is
        # released: the coordinator drops them at once, as Kafka's learns of a deletion from its
        # metadata image, rather than at its next metadata refreshes.
        self.deletion_listeners: list[Callable[[list[str], list[uuid.UUID]], Awaitable[None]]] = []
        # Told of the topics a CreateTopics relayed here created, as of the ones deleted above.
        self.creation_listeners: list[Callable[[list[str]], Awaitable[None]]] = []
        self.listener_tls = config.listener_tls.server_context() if config.listener_tls else None
        self.upstream_tls = config.upstream_tls.client_context() if config.upstream_tls else None
        self.cluster = ClusterView(
            config.bootstrap_addresses(),
            self.upstream_tls,
            config.upstream_connect_timeout_s,
            config.api_versions_ttl_s,
        )
        self.bootstrap_listener = Listener(self, None)
        self.broker_listeners: dict[int, Listener] = {}
        # With ``alias_coordinators``: per broker, a second listener, where the broker's alias is
        # advertised. A port of its own: with the alias at the broker's own address, consumers of
        # librdkafka 2.0 (Debian's kcat) stopped fetching (2.16 did not mind).
        self.alias_listeners: dict[int, Listener] = {}
        # None while the connection is still in its TLS handshake.
        self.connections: dict[asyncio.Task[None], ClientConnection | None] = {}
        self.per_ip: dict[str, int] = {}
        # max_connections, or fewer where the open-file limit cannot carry it (set by start()).
        self.max_connections = config.max_connections
        # An eighth is kept for requests of up to 1 MiB (group requests, most data requests).
        self.buffer_budget = ByteBudget(config.max_buffered_bytes, reserve=config.max_buffered_bytes // 8)
        self.protected = ProtectedTopics(config.protected_topics, config.protected_groups)
        # Set by ``serve`` (with the ACLs): FindCoordinator for a group the caller may not
        # DESCRIBE is refused, as Kafka refuses it.
        self.may_find_group: GroupLookupCheck | None = None
        # Set by ``serve``: the topic picture learns of re-created and deleted topics from the
        # cluster's Metadata answers to clients.
        self.metadata_seen: MetadataSeen | None = None
        self._last_refusal_log = float("-inf")
        self._refusals_unlogged = 0
        self._listener_lock = asyncio.Lock()
        self._collision_logged = False
        # Brokers whose pinned alias port could not be bound: they keep their own id (see
        # _start_alias_listener), and are not tried again at every Metadata answer.
        self._unbound_aliases: set[int] = set()

    def admit(self, host: str) -> str | None:
        """Why a new connection from ``host`` is refused, or None to accept it."""
        config = self.config
        if len(self.connections) >= self.max_connections:
            if self.max_connections < config.max_connections:
                return f"the open-file limit admits {self.max_connections} connections (max_connections={config.max_connections})"
            return f"max_connections={config.max_connections} reached"
        if self.per_ip.get(host, 0) >= config.max_connections_per_ip:
            return f"max_connections_per_ip={config.max_connections_per_ip} reached for {host}"
        return None

    def log_refusal(self, reason: str) -> None:
        # A flood of refused connections must not become a flood of log lines.
        now = time.monotonic()
        if now - self._last_refusal_log < 10.0:
            self._refusals_unlogged += 1
            return
        extra = f" ({self._refusals_unlogged} more refusals not logged)" if self._refusals_unlogged else ""
        log.warning("refusing connection: %s%s", reason, extra)
        self._last_refusal_log = now
        self._refusals_unlogged = 0

    def connection_closed(self, connection_id: str) -> None:
        for listener in self.disconnect_listeners:
            try:
                listener(connection_id)
            except Exception:
                log.exception("a disconnect listener failed")

    async def topics_deleted(self, names: list[str], topic_ids: list[uuid.UUID]) -> None:
        for listener in self.deletion_listeners:
            try:
                await listener(names, topic_ids)
            except Exception:
                log.exception("a topic deletion listener failed")

    async def topics_created(self, names: list[str]) -> None:
        for listener in self.creation_listeners:
            try:
                await listener(names)
            except Exception:
                log.exception("a topic creation listener failed")

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        # Provisional: the process's own cluster clients (placement, the metadata refresh, ACLs,
        # the transaction bridge: librdkafka's sockets and wake-up pipes, 40-60 descriptors) mostly
        # start after the listener; ``settle_file_limit`` counts again once they run.
        self.max_connections = admissible_connections(self.config.max_connections, warn=False)
        await self.bootstrap_listener.start(self.config.listen_port)
        log.info("gateway listening on %s:%s", self.config.listen_host, self.bootstrap_listener.port)

    def settle_file_limit(self) -> None:
        """Once the process runs everything it starts: the client connections the open-file limit
        carries beside what the process itself holds now (said once if below max_connections)."""
        self.max_connections = admissible_connections(self.config.max_connections, len(self.connections))

    async def stop(self) -> None:
        listeners = [self.bootstrap_listener, *self.broker_listeners.values(), *self.alias_listeners.values()]
        for listener in listeners:
            if listener.server is not None:
                listener.server.close()
        tasks = list(self.connections)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for listener in listeners:
            await listener.stop()

    async def __aenter__(self) -> GatewayServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    # --- addresses -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.bootstrap_listener.port

    @property
    def bootstrap(self) -> str:
        return f"{self.config.public_host}:{self.port}"

    @property
    def broker_ports(self) -> dict[int, int]:
        return {node: listener.port for node, listener in self.broker_listeners.items()}

    def coordinator_address(self) -> CoordinatorAddress:
        return CoordinatorAddress(self.config.coordinator_node_id, self.config.public_host, self.port)

    def coordinator_metadata_node(self) -> MetadataResponseBroker:
        return MetadataResponseBroker(
            node_id=self.config.coordinator_node_id, host=self.config.public_host, port=self.port
        )

    def peer_metadata_nodes(self) -> list[MetadataResponseBroker]:
        own = self.config.coordinator_node_id
        return [
            MetadataResponseBroker(node_id=p.node_id, host=p.host, port=p.port)
            for p in self.peers()
            if p.node_id != own
        ]

    def peer_cluster_nodes(self) -> list[DescribeClusterBroker]:
        own = self.config.coordinator_node_id
        return [
            DescribeClusterBroker(broker_id=p.node_id, host=p.host, port=p.port)
            for p in self.peers()
            if p.node_id != own
        ]

    def coordinator_alias(self, node_id: int) -> int:
        """The node id under which a cluster coordinator on broker ``node_id`` is presented."""
        if node_id not in self.alias_listeners:
            return node_id
        return coordinator_alias(self.config.coordinator_node_id, node_id)

    def coordinator_route(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        """Where a cluster coordinator on broker ``node_id`` is reached: its alias's listener."""
        listener = self.alias_listeners.get(node_id)
        if listener is None:
            return self.broker_route(node_id, host, port)
        return self.config.public_host, listener.port

    def alias_metadata_nodes(self, brokers: list[MetadataResponseBroker]) -> list[MetadataResponseBroker]:
        return alias_nodes(brokers, self.coordinator_alias, self.coordinator_route)

    def coordinator_cluster_node(self) -> DescribeClusterBroker:
        return DescribeClusterBroker(
            broker_id=self.config.coordinator_node_id, host=self.config.public_host, port=self.port
        )

    def broker_route(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        listener = self.broker_listeners.get(node_id)
        if listener is None:
            # ensure_broker_listeners runs first; reaching here means the broker is unknown, and
            # the bootstrap port still forwards to the cluster rather than leaking its address.
            return self.config.public_host, self.port
        return self.config.public_host, listener.port

    def _aliased(self, node_id: int) -> bool:
        config = self.config
        if not self.alias_coordinators or coordinator_alias(config.coordinator_node_id, node_id) == node_id:
            return False
        # Where broker ports are pinned (published one by one), an ephemeral one may be unreachable.
        if node_id in self._unbound_aliases:
            return False
        return not config.broker_listen_ports or node_id in config.coordinator_alias_ports

    async def ensure_broker_listeners(self, brokers: dict[int, tuple[str, int]]) -> None:
        for node_id, address in brokers.items():
            if node_id == self.config.coordinator_node_id:
                if not self._collision_logged:
                    self._collision_logged = True
                    log.warning("broker node id %s equals coordinator_node_id; that broker is unreachable", node_id)
                continue
            self.cluster.brokers[node_id] = address
            aliased = self._aliased(node_id)
            if node_id in self.broker_listeners and (node_id in self.alias_listeners or not aliased):
                continue
            async with self._listener_lock:
                if node_id not in self.broker_listeners:
                    listener = await self._start_broker_listener(node_id)
                    self.broker_listeners[node_id] = listener
                    log.info("broker listener node=%s port=%s forwards_to=%s:%s", node_id, listener.port, *address)
                if self._aliased(node_id) and node_id not in self.alias_listeners:
                    alias = await self._start_alias_listener(node_id)
                    if alias is None:
                        self._unbound_aliases.add(node_id)
                        continue
                    self.alias_listeners[node_id] = alias
                    log.info("coordinator alias listener node=%s port=%s of broker %s", node_id, alias.port, node_id)

    # A pinned port that cannot be bound (another process holds it, or another of these settings
    # names it too) fails here, at a client's first Metadata, long after start(): raising would
    # close that connection and every later one, while the process stays up. Instead each such port
    # is said once, as an ERROR, and the listener falls back to what an unpinned deployment does.
    # /readyz does not report it: readiness gates the whole process (its bootstrap port, its
    # groups), which still works, and the ERROR line names the port and the setting to fix.

    async def _start_broker_listener(self, node_id: int) -> Listener:
        pinned = self.config.broker_listen_ports.get(node_id, 0)
        listener = Listener(self, node_id)
        try:
            await listener.start(pinned)
        except OSError as exc:
            if not pinned:
                raise
            # The broker still needs a listener of its own: routed to the bootstrap port, its
            # partitions' requests would reach other brokers (NOT_LEADER_OR_FOLLOWER, over and
            # over). An ephemeral port serves it wherever clients can reach one (a host network);
            # where ports are published one by one they cannot, and the log says so.
            await listener.start(0)
            log.error(
                "cannot bind port %s of broker %s (gateway.broker_listen_ports): %s; the broker is advertised at "
                "ephemeral port %s instead, which clients reach only if that port is open to them; free the port "
                "and restart",
                pinned,
                node_id,
                exc,
                listener.port,
            )
        return listener

    async def _start_alias_listener(self, node_id: int) -> Listener | None:
        pinned = self.config.coordinator_alias_ports.get(node_id, 0)
        alias = Listener(self, node_id)
        try:
            await alias.start(pinned)
        except OSError as exc:
            if not pinned:
                raise
            # Without its alias the broker keeps its own id, as brokers with no pinned alias port
            # do (docs/design/multi-process-addresses.md): only a transactional producer's move to
            # another process after this one dies is lost.
            log.error(
                "cannot bind port %s of broker %s's coordinator alias (gateway.coordinator_alias_ports): %s; the "
                "broker keeps its own node id as coordinator until restart",
                pinned,
                node_id,
                exc,
            )
            return None
        return alias

    async def connect_upstream(
        self, listener: ListenerView, budget: ConnectionBudget | None = None
    ) -> UpstreamConnection:
        last: Exception | None = None
        for address in self.cluster.addresses(listener.node_id):
            try:
                return await UpstreamConnection.open(
                    address, self.upstream_tls, self.config.upstream_connect_timeout_s, budget
                )
            except (TimeoutError, OSError) as exc:
                last = exc
        raise ConnectionError(f"no backing broker reachable: {last}")
