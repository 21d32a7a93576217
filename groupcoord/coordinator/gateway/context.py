"""What a client connection needs of the gateway around it, as interfaces.

``ClientConnection`` is handed a ``GatewayContext`` (``GatewayServer`` is the one in production)
and the ``ListenerView`` it was accepted on, rather than the server and listener classes: the
connection then imports nothing of ``gateway/server.py``, which creates connections, and a test
can serve a connection from a context of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Protocol

from groupcoord.coordinator.gateway.cluster import ClusterView
from groupcoord.coordinator.gateway.config import GatewayConfig
from groupcoord.coordinator.gateway.handler import CoordinatorLocator, GroupApiHandler
from groupcoord.coordinator.gateway.limits import ByteBudget, ConnectionBudget
from groupcoord.coordinator.gateway.observer import GatewayObserver
from groupcoord.coordinator.gateway.protect import ProtectedTopics
from groupcoord.coordinator.gateway.upstream import UpstreamConnection
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterBroker
from groupcoord.coordinator.messages.metadata import MetadataResponse, MetadataResponseBroker

# (principal or None, client host, group id) -> allowed
GroupLookupCheck = Callable[[str | None, str, str], bool]
# A Metadata answer of the cluster's on its way to a client -> what to wait for before sending it, if anything
MetadataSeen = Callable[[MetadataResponse], Awaitable[None] | None]


class ListenerView(Protocol):
    """The sidecar port a connection arrived on; ``node_id`` is None for the bootstrap port."""

    @property
    def node_id(self) -> int | None: ...

    @property
    def port(self) -> int: ...


class GatewayContext(Protocol):
    @property
    def config(self) -> GatewayConfig: ...

    @property
    def handler(self) -> GroupApiHandler:
        """Answers the group APIs."""
        ...

    @property
    def locator(self) -> CoordinatorLocator: ...

    @property
    def cluster(self) -> ClusterView:
        """The backing cluster's API versions and broker addresses."""
        ...

    @property
    def protected(self) -> ProtectedTopics:
        """The coordinator's own topics and groups, which clients may not reach."""
        ...

    @property
    def may_find_group(self) -> GroupLookupCheck | None:
        """Whether a principal at a host may look up a group's coordinator (Kafka: DESCRIBE on
        the group); None: anyone may."""
        ...

    @property
    def metadata_seen(self) -> MetadataSeen | None:
        """Told of every Metadata answer the cluster gives a client, before the client has it."""
        ...

    @property
    def buffer_budget(self) -> ByteBudget:
        """The bytes all connections together may hold."""
        ...

    @property
    def observer(self) -> GatewayObserver: ...

    def connection_closed(self, connection_id: str) -> None:
        """A client connection closed, after its last group request was answered."""
        ...

    async def topics_deleted(self, names: list[str], topic_ids: list[uuid.UUID]) -> None:
        """The cluster answered a DeleteTopics relayed here with these topics deleted; returns
        once the coordinator has taken it in (its answer waits for that)."""
        ...

    async def topics_created(self, names: list[str]) -> None:
        """The cluster answered a CreateTopics relayed here with these topics created; returns
        once the coordinator knows them."""
        ...

    async def connect_upstream(
        self, listener: ListenerView, budget: ConnectionBudget | None = None
    ) -> UpstreamConnection:
        """A connection to the broker behind ``listener``."""
        ...

    # --- the addresses clients see: brokers through the sidecar's own ports ---------------------

    async def ensure_broker_listeners(self, brokers: dict[int, tuple[str, int]]) -> None: ...

    def broker_route(self, node_id: int, host: str, port: int) -> tuple[str, int]: ...

    def coordinator_metadata_node(self) -> MetadataResponseBroker: ...

    def peer_metadata_nodes(self) -> list[MetadataResponseBroker]: ...

    def coordinator_alias(self, node_id: int) -> int: ...

    def coordinator_route(self, node_id: int, host: str, port: int) -> tuple[str, int]: ...

    def alias_metadata_nodes(self, brokers: list[MetadataResponseBroker]) -> list[MetadataResponseBroker]: ...

    def coordinator_cluster_node(self) -> DescribeClusterBroker: ...

    def peer_cluster_nodes(self) -> list[DescribeClusterBroker]: ...
