"""A config request on a client connection: its GROUP resources answered here (by the group
handler, or relayed to the group's coordinator), the log topic's refused, the rest forwarded to
the cluster, and the answers merged back in the request's order.

``gateway/configs.py`` holds the pure splitting and merging; this module runs the parts, through
what it needs of its connection (``ConfigsConnection``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

from groupcoord.coordinator.gateway import configs
from groupcoord.coordinator.gateway.answers import CloseConnection, Slot, ready, spawn
from groupcoord.coordinator.gateway.apis import APIS
from groupcoord.coordinator.gateway.cluster import UNSUPPORTED_VERSION
from groupcoord.coordinator.gateway.codec import CodecError
from groupcoord.coordinator.gateway.context import GatewayContext, ListenerView
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.limits import ConnectionBudget, count_elements
from groupcoord.coordinator.gateway.protocol import (
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from groupcoord.coordinator.gateway.relay import is_relayed, relay
from groupcoord.coordinator.messages.schema import Message

log = logging.getLogger(__name__)

COORDINATOR_NOT_AVAILABLE = 15
# How long a group config request waits to learn the owner of a group's shard, and how often it looks.
OWNER_LOOKUP_S = 2.0
OWNER_RETRY_S = 0.05
TOPIC_AUTHORIZATION_FAILED = 29


class ConfigsConnection(Protocol):
    """What a config request needs of the connection it came on."""

    @property
    def gateway(self) -> GatewayContext: ...

    @property
    def listener(self) -> ListenerView: ...

    @property
    def budget(self) -> ConnectionBudget: ...

    async def forward(self, payload: bytes, key: int, version: int, correlation_id: int) -> Awaitable[bytes]:
        """Send ``payload`` (without its length prefix) to the cluster; its answer, as bytes."""
        ...

    def answer_here(self, header: RequestHeader, body: Message) -> asyncio.Task[Message]:
        """The group handler's answer to ``body``, after the connection's earlier group requests."""
        ...


def cluster_supports(connection: ConfigsConnection, key: int, version: int) -> bool:
    known = connection.gateway.cluster.cached_ranges(connection.listener.node_id)
    if known is None:
        return True
    supported = known.get(key)
    return supported is not None and supported[0] <= version <= supported[1]


async def answer_configs(
    connection: ConfigsConnection, payload: bytes | bytearray, key: int, version: int
) -> Slot | None:
    """Answer the GROUP resources of a config request here; None: forward it as it is (it
    names no group, or is a version or shape the gateway does not decode)."""
    gateway = connection.gateway
    spec = APIS[key]
    if not spec.supports(version) or len(payload) > gateway.config.max_group_request_bytes:
        return None
    try:
        request = decode_request(payload)
    except CodecError:
        return None
    original = request.body
    refusals: list[Message] = []
    protected = gateway.protected
    resources = list(original.resources)  # type: ignore[attr-defined]
    denied = [r for r in resources if r.resource_type == configs.TOPIC_RESOURCE and r.resource_name in protected.names]
    if denied:
        # The log topic's configs: TOPIC_AUTHORIZATION_FAILED for its resources, the rest served.
        refused = configs.with_resources(original, denied)
        refusals.append(configs.refuse_all(refused, TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."))
        kept = [r for r in resources if all(r is not d for d in denied)]
        if not kept:
            answer = configs.merge(original, refusals)
            return True, ready(encode_response(key, version, request.header.correlation_id, answer))
        request = Request(request.header, configs.with_resources(original, kept))
    if not configs.names_groups(request.body) and not denied:
        if cluster_supports(connection, key, version):
            return None
        # Offered because of group configs (merge_api_versions): the cluster's own resources
        # get a per-resource refusal rather than a closed connection.
        refusal = configs.refuse_all(
            request.body, UNSUPPORTED_VERSION, f"the cluster does not support API {key} v{version}"
        )
        return True, ready(encode_response(key, version, request.header.correlation_id, refusal))
    limit = gateway.config.max_group_request_elements
    if count_elements(request.body, limit) > limit:
        raise CloseConnection(
            f"{spec.name} v{version} carries more than max_group_request_elements={limit} array elements"
        )
    groups, rest = configs.split(request.body)
    upstream: Awaitable[bytes] | None = None
    if rest is not None:
        rest_payload = encode_request(request.header, rest)[4:]  # without its length prefix
        if cluster_supports(connection, key, version):
            upstream = await connection.forward(rest_payload, key, version, request.header.correlation_id)
    local, remote = await _by_owner(gateway, request.header, groups) if configs.names_groups(groups) else (None, [])
    relayed = [
        asyncio.ensure_future(_relayed(gateway, request.header, host, port, part)) for (host, port), part in remote
    ]
    answered = connection.answer_here(request.header, local) if local is not None else None
    merged = _merged(connection, Request(request.header, original), answered, relayed, rest, upstream, refusals)
    return True, asyncio.shield(spawn(merged))


async def _by_owner(
    gateway: GatewayContext, header: RequestHeader, groups: Message
) -> tuple[Message | None, list[tuple[tuple[str, int], Message]]]:
    """The GROUP resources this process answers, and those relayed to the owner of their group.

    Only plain connections are relayed: with TLS listeners or required authentication the
    peer would refuse an anonymous relay, so the local answer (NOT_COORDINATOR) stands. A group
    whose owner this process does not know yet (placement learns it from its directory a moment
    after a start or a move) is waited for, up to ``OWNER_LOOKUP_S``: Kafka answers group configs
    from any broker, and admin clients do not retry NOT_COORDINATOR for them."""
    resources = groups.resources  # type: ignore[attr-defined]
    config = gateway.config
    if is_relayed(header.client_id) or config.listener_tls is not None or config.authentication != "none":
        return groups, []
    own = config.coordinator_node_id
    local: list[Any] = []
    remote: dict[tuple[str, int], list[Any]] = {}
    locate = gateway.locator.locate
    deadline: float | None = None
    for resource in resources:
        where = locate(resource.resource_name) if resource.resource_name else None
        while where is not None and where.error_code == COORDINATOR_NOT_AVAILABLE:
            now = time.monotonic()
            deadline = now + OWNER_LOOKUP_S if deadline is None else deadline
            if now >= deadline:
                break
            await asyncio.sleep(OWNER_RETRY_S)
            where = locate(resource.resource_name)
        if where is None or where.error_code or where.node_id == own:
            local.append(resource)
        else:
            remote.setdefault((where.host, where.port), []).append(resource)
    parts = [(address, configs.with_resources(groups, items)) for address, items in remote.items()]
    return (configs.with_resources(groups, local) if local else None), parts


async def _relayed(gateway: GatewayContext, header: RequestHeader, host: str, port: int, part: Message) -> Message:
    try:
        return await relay(host, port, header, part, gateway.config.upstream_connect_timeout_s)
    except (OSError, TimeoutError, ValueError, CodecError) as exc:
        log.warning("relaying %s to the group coordinator %s:%s failed: %r", type(part).__name__, host, port, exc)
        return configs.refuse_all(
            part, COORDINATOR_NOT_AVAILABLE, f"the group's coordinator at {host}:{port} did not answer"
        )


async def _merged(
    connection: ConfigsConnection,
    request: Request,
    local: Awaitable[Message] | None,
    relayed: Sequence[Awaitable[Message]],
    rest: Message | None,
    upstream: Awaitable[bytes] | None,
    refusals: Sequence[Message] = (),
) -> bytes:
    key, version = request.header.api_key, request.header.api_version
    # Refusals first: the merged answer's top-level fields come from the last part.
    parts: list[Message] = list(refusals)
    if local is not None:
        parts.append(await local)
    parts += await asyncio.gather(*relayed)
    if rest is not None and upstream is None:
        parts.append(
            configs.refuse_all(rest, UNSUPPORTED_VERSION, f"the cluster does not support API {key} v{version}")
        )
    elif upstream is not None:
        payload = await upstream
        connection.budget.release_for(len(payload))
        try:
            _, rest_answer = decode_response(key, version, payload)
        except CodecError as exc:
            raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
        parts.append(rest_answer)
    answer = configs.merge(request.body, parts)
    return encode_response(key, version, request.header.correlation_id, answer)
