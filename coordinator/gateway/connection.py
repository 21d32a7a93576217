"""One client connection: read frames in order, answer or forward each, write answers in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from coordinator.gateway import configs, topic_split
from coordinator.gateway.apis import APIS, GROUP_API_KEYS, ApiKey
from coordinator.gateway.client_stream import ClientStream
from coordinator.gateway.cluster import UNSUPPORTED_VERSION, ClusterUnavailable
from coordinator.gateway.codec import CodecError, decode_struct
from coordinator.gateway.context import GatewayContext, ListenerView
from coordinator.gateway.framing import (
    FrameError,
    RequestHeader,
    check_frame_size,
    decode_request_header,
    decode_response_header,
    peek_request,
    produce_acks,
)
from coordinator.gateway.handler import ConnectionContext
from coordinator.gateway.limits import ByteBudget, ConnectionBudget, count_elements, truncate_error_messages
from coordinator.gateway.protect import NotForwardable
from coordinator.gateway.protocol import Request, decode_request, decode_response, encode_request, encode_response
from coordinator.gateway.relay import RELAY_CLIENT_ID, relay
from coordinator.gateway.rewrite import (
    SERVED_LOCALLY,
    forwarded_range,
    merge_api_versions,
    rewrite_describe_cluster,
    rewrite_find_coordinator,
    rewrite_metadata,
)
from coordinator.gateway.upstream import Answer, UpstreamClosed, UpstreamConnection, write_framed
from coordinator.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from coordinator.messages.describe_cluster import DescribeClusterResponse
from coordinator.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from coordinator.messages.list_groups import ListGroupsResponse
from coordinator.messages.metadata import MetadataResponse
from coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from coordinator.messages.schema import Message
from coordinator.security.sasl import SaslRefused, SaslSession

log = logging.getLogger(__name__)

_LEN = struct.Struct(">i")
_GROUP_KEY_TYPE = 0
COORDINATOR_NOT_AVAILABLE = 15
TOPIC_AUTHORIZATION_FAILED = 29
# DescribeCluster can list controllers instead (KIP-919); clients reaching controllers directly do
# not go through the sidecar, so only broker lists are rewritten.
_BROKER_ENDPOINTS = 1


def _retrieve(task: asyncio.Future[bytes]) -> None:
    # Answers still queued when a connection closes are never awaited; reading their outcome
    # keeps asyncio from reporting them as lost exceptions.
    if not task.cancelled():
        task.exception()


def _certificate_principal(stream: ClientStream) -> str | None:
    """The common name of a verified client certificate (Kafka would map the full DN; see README)."""
    cert = stream.get_extra_info("peercert")
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for name, value in rdn:
            if name == "commonName" and value:
                return str(value)
    return None


def _spawn(coro: Coroutine[object, object, bytes]) -> asyncio.Task[bytes]:
    task = asyncio.create_task(coro)
    task.add_done_callback(_retrieve)
    return task


class CloseConnection(Exception):
    """Stop serving this client; the message says why (logged once)."""


class IdleConnection(CloseConnection):
    """Closed for idleness: routine, logged at debug level."""


# A queued answer: either a whole frame ready to write, or an upstream payload still needing its
# length prefix (kept apart so large Fetch responses are never copied).
Slot = tuple[bool, Awaitable[bytes]]


class ClientConnection:
    def __init__(
        self,
        gateway: GatewayContext,
        listener: ListenerView,
        stream: ClientStream,
    ) -> None:
        self.gateway = gateway
        self.listener = listener
        self.stream = stream
        peer = stream.get_extra_info("peername") or ("?", 0)
        self.peer: tuple[str, int] = (str(peer[0]), int(peer[1]))
        self.queue: asyncio.Queue[Slot | None] = asyncio.Queue(gateway.config.max_in_flight_per_connection)
        self.upstream: UpstreamConnection | None = None
        # Answers queued and not yet written; an idle timeout never fires while any are owed.
        self.outstanding = 0
        config = gateway.config
        self.budget = ConnectionBudget(ByteBudget(config.max_buffered_bytes_per_connection), gateway.buffer_budget)
        self._last_local: asyncio.Task[Any] | None = None
        self.session = SaslSession()
        subject = (
            _certificate_principal(stream) if config.listener_tls and config.listener_tls.require_client_cert else None
        )
        if subject is not None:
            self.session.authenticate_externally(subject)

    async def run(self) -> None:
        writer_task = asyncio.create_task(self._write_loop())
        reader_task = asyncio.create_task(self._read_loop())
        try:
            done, _ = await asyncio.wait({reader_task, writer_task}, return_when=asyncio.FIRST_EXCEPTION)
            if reader_task in done and reader_task.exception() is None:
                # Clean EOF: let the answers already owed reach the client before closing.
                await asyncio.wait({writer_task})
        finally:
            for task in (reader_task, writer_task):
                task.cancel()
            for task in (reader_task, writer_task):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for task in (reader_task, writer_task):
                if task.cancelled():
                    continue
                error = task.exception()
                if isinstance(error, IdleConnection):
                    log.debug("closing client connection peer=%s:%s reason=%s", *self.peer, error)
                elif isinstance(error, CloseConnection):
                    log.warning("closing client connection peer=%s:%s reason=%s", *self.peer, error)
                elif isinstance(error, ConnectionError | ssl.SSLError):
                    log.debug("client connection lost peer=%s:%s error=%s", *self.peer, error)
                elif error is not None:
                    log.error("client connection failed peer=%s:%s", *self.peer, exc_info=error)
            await self._close()

    async def _close(self) -> None:
        while not self.queue.empty():
            slot = self.queue.get_nowait()
            if slot is not None and isinstance(slot[1], asyncio.Future):
                slot[1].cancel()
        if self.upstream is not None:
            await self.upstream.close()
        self.budget.close()
        self.stream.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await self.stream.wait_closed()

    async def _read_loop(self) -> None:
        config = self.gateway.config
        max_bytes = config.max_frame_bytes
        read_s = config.request_read_timeout_ms / 1000
        budget = self.gateway.buffer_budget
        try:
            while True:
                if not await self._next_frame_start():
                    break
                prefix = await self._read_within(4, read_s)
                try:
                    size = check_frame_size(prefix, max_bytes)
                except FrameError as exc:
                    raise CloseConnection(str(exc)) from exc
                # Waiting for budget stops reading from this client (TCP pushes back); the read
                # deadline starts once the budget is granted.
                grant = await budget.acquire(size)
                try:
                    payload = await self._read_within(size, read_s)
                    slot = await self._dispatch(payload)
                    del payload
                finally:
                    budget.release(grant)
                if slot is not None:
                    self.outstanding += 1
                    await self.queue.put(slot)
        except (ConnectionError, ssl.SSLError) as exc:
            log.debug("client connection lost peer=%s:%s error=%s", *self.peer, exc)
        await self.queue.put(None)

    async def _read_within(self, n: int, seconds: float) -> bytes | bytearray:
        # Usually the bytes are already buffered (a frame arrives whole): then no deadline is
        # armed, which saves a timer per read on the forward path.
        try:
            return await self.stream.readexactly(n, self.stream.loop_time() + seconds)
        except asyncio.IncompleteReadError as exc:
            raise CloseConnection("connection closed mid-frame") from exc
        except TimeoutError as exc:
            raise CloseConnection(f"frame not complete within request_read_timeout_ms={seconds * 1000:.0f}") from exc

    async def _next_frame_start(self) -> bool:
        """Whether another frame starts (False at EOF); closes a connection idle for too long."""
        if self.stream.buffered:
            return True  # pipelined requests: no idle deadline to arm
        idle_s = self.gateway.config.connections_max_idle_ms / 1000
        while True:
            try:
                return await self.stream.read_start(self.stream.loop_time() + idle_s)
            except TimeoutError:
                if self.outstanding == 0:
                    raise IdleConnection(f"idle for connections_max_idle_ms={idle_s * 1000:.0f}") from None

    async def _write_loop(self) -> None:
        idle_s = self.gateway.config.connections_max_idle_ms / 1000
        while True:
            slot = await self.queue.get()
            if slot is None:
                return
            framed, pending = slot
            try:
                if isinstance(pending, Answer):
                    # Forwarded as it is: streamed to the client as it arrives. Nothing else is
                    # written to this client until its last byte is, which keeps answers in order.
                    size = await pending.stream_to(self.stream)
                else:
                    data = await pending
                    size = len(data)
                    if framed:
                        self.stream.write(data)
                    else:
                        write_framed(self.stream.transport, data)
            except (UpstreamClosed, ClusterUnavailable) as exc:
                raise CloseConnection(str(exc)) from exc
            if self.stream.transport.get_write_buffer_size() == 0:
                # All written at once (the usual case): drain cannot block, so no deadline.
                await self.stream.drain()
            else:
                try:
                    # A client that stops reading its answers is as idle as one that stops sending.
                    async with asyncio.timeout(idle_s):
                        await self.stream.drain()
                except TimeoutError:
                    raise CloseConnection(f"answers unread for connections_max_idle_ms={idle_s * 1000:.0f}") from None
            if not framed:
                self.budget.release_for(size)
            self.outstanding -= 1

    async def _dispatch(self, payload: bytes | bytearray) -> Slot | None:
        try:
            key, version, correlation_id = peek_request(payload)
        except FrameError as exc:
            raise CloseConnection(str(exc)) from exc
        self.gateway.observer.request(key)
        if key == ApiKey.API_VERSIONS:
            return True, self._ready(await self._api_versions(version, correlation_id))
        if key == ApiKey.SASL_HANDSHAKE:
            return False, await self._sasl_handshake(payload, version, correlation_id)
        if key == ApiKey.SASL_AUTHENTICATE:
            return False, await self._sasl_authenticate(payload, version, correlation_id)
        if self.gateway.config.authentication == "required" and not self.session.authenticated:
            # What a Kafka broker does with any other request before (or after an expired)
            # authentication: close the connection.
            raise CloseConnection(f"API {key} v{version} before authentication")
        spec = APIS.get(key)
        if key in GROUP_API_KEYS or key == ApiKey.FIND_COORDINATOR:
            assert spec is not None
            if key not in SERVED_LOCALLY and key != ApiKey.FIND_COORDINATOR:
                # Not offered in ApiVersions (TxnOffsetCommit until it is served): as a broker does
                # with an API it does not expose.
                raise CloseConnection(f"unsupported API {spec.name}")
            if not spec.supports(version):
                raise CloseConnection(f"unsupported version {spec.name} v{version}")
            limit_bytes = self.gateway.config.max_group_request_bytes
            if len(payload) > limit_bytes:
                raise CloseConnection(
                    f"{spec.name} of {len(payload)} bytes exceeds max_group_request_bytes={limit_bytes}"
                )
            try:
                request = decode_request(payload)
            except CodecError as exc:
                raise CloseConnection(f"malformed {spec.name} v{version}: {exc}") from exc
            limit = self.gateway.config.max_group_request_elements
            elements = count_elements(request.body, limit)
            if elements > limit:
                raise CloseConnection(
                    f"{spec.name} v{version} carries more than max_group_request_elements={limit} array elements"
                )
            if key == ApiKey.LIST_GROUPS and self.listener.node_id is not None:
                # A node lists only the groups it coordinates, and admin clients ask every node
                # and merge the answers; a broker port coordinates none, so each group is listed
                # once (by the coordinator port).
                return True, self._ready(encode_response(key, version, correlation_id, ListGroupsResponse()))
            if key == ApiKey.FIND_COORDINATOR:
                assert isinstance(request.body, FindCoordinatorRequest)
                if self._is_group_lookup(request.body, version):
                    return True, self._ready(self._find_group_coordinator(request.body, version, correlation_id))
                return True, await self._forward(payload, key, version, correlation_id, rewrite=True)
            return True, self._local(request.header, request.body)
        protected = self.gateway.protected
        if key in (ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER):
            assert spec is not None
            if not spec.supports(version):
                raise CloseConnection(f"{spec.name} v{version} is beyond what the gateway can rewrite")
            # A request that names the protected topic gets TOPIC_AUTHORIZATION_FAILED for it; in
            # any other answer (all topics) it is left out. Decoded as a broker reads it: clients
            # send bytes no schema declares after the message (librdkafka's Metadata v12 ends with
            # three), and brokers ignore them.
            try:
                named = key == ApiKey.METADATA and bool(protected) and protected.in_metadata(payload, version)
            except NotForwardable as exc:
                raise CloseConnection(str(exc)) from exc
            return True, await self._forward(payload, key, version, correlation_id, rewrite=True, named=named)
        if key in configs.CONFIG_API_KEYS:
            slot = await self._configs(payload, key, version)
            if slot is not None:
                return slot
        self._check_forwardable(key, version)
        expect_response = True
        if key == ApiKey.PRODUCE:
            try:
                expect_response = produce_acks(payload, version) != 0
                names_protected = bool(protected) and protected.in_produce(payload, version)
            except CodecError as exc:
                raise CloseConnection(f"malformed Produce v{version}: {exc}") from exc
            if names_protected and not expect_response:
                # What Kafka does with an acks=0 produce that fails: close, so the producer notices.
                raise CloseConnection("Produce with acks=0 to the coordinator's log topic")
        elif key == topic_split.DESCRIBE_TOPIC_PARTITIONS:
            # Answers list topics not named in the request: always filtered.
            names_protected = bool(protected)
        elif protected:
            try:
                names_protected = protected.in_request(payload, key, version)
            except NotForwardable as exc:
                raise CloseConnection(str(exc)) from exc
        else:
            names_protected = False
        if names_protected:
            # Rare (requests naming the log topic): a copy of a large frame costs nothing here.
            return await self._forward_split(bytes(payload), key, version, correlation_id)
        pending = await self._forward(payload, key, version, correlation_id, rewrite=False, expect=expect_response)
        return (False, pending) if expect_response else None

    async def _forward_split(self, payload: bytes, key: int, version: int, correlation_id: int) -> Slot:
        """A request naming the log topic: TOPIC_AUTHORIZATION_FAILED for its slots, the rest forwarded."""
        parts = topic_split.split(payload, self.gateway.protected.is_protected)
        if parts is None:
            raise CloseConnection(f"API {key} v{version} names the coordinator's log topic")
        upstream: Awaitable[bytes] | None = None
        if parts.rest is not None:
            try:
                rest = topic_split.encode_rest(parts)
            except CodecError as exc:
                raise CloseConnection(f"cannot re-encode API {key} v{version} without the log topic: {exc}") from exc
            upstream = await self._forward(rest, key, version, correlation_id, rewrite=False)
        return True, asyncio.shield(_spawn(self._merged_split(parts, upstream)))

    async def _merged_split(self, parts: topic_split.Split, upstream: Awaitable[bytes] | None) -> bytes:
        forwarded: bytes | None = None
        if upstream is not None:
            forwarded = await upstream
            # The answer is re-encoded below and written as a framed slot; its budget ends here.
            self.budget.release_for(len(forwarded))
        try:
            body = topic_split.merge(parts, forwarded)
        except (CodecError, ValueError, IndexError, struct.error) as exc:
            key, version = parts.header.api_key, parts.header.api_version
            raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
        return _LEN.pack(len(body)) + body

    @staticmethod
    def _ready(data: bytes) -> Awaitable[bytes]:
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        fut.set_result(data)
        return fut

    def _check_forwardable(self, key: int, version: int) -> None:
        """Only what ApiVersions offers is forwarded; anything else closes the connection, as a
        Kafka broker closes it for an API (or version) it does not expose."""
        known = self.gateway.cluster.cached_ranges(self.listener.node_id)
        offered = forwarded_range(key, known.get(key) if known is not None else (0, 0x7FFF))
        if offered is None:
            raise CloseConnection(f"unsupported API key {key}")
        if not offered[0] <= version <= offered[1]:
            raise CloseConnection(f"unsupported version: API {key} v{version}")

    # --- answered here -------------------------------------------------------------------------

    async def _api_versions(self, version: int, correlation_id: int) -> bytes:
        try:
            cluster = await self.gateway.cluster.api_versions(self.listener.node_id)
        except ClusterUnavailable as exc:
            raise CloseConnection(str(exc)) from exc
        merged = merge_api_versions(cluster)
        if APIS[ApiKey.API_VERSIONS].supports(version):
            return encode_response(ApiKey.API_VERSIONS, version, correlation_id, merged)
        # Per KIP-511: a version we do not know gets a v0 body with error 35 and our versions, so
        # the client can retry with one we do know.
        refusal = ApiVersionsResponse(
            error_code=UNSUPPORTED_VERSION,
            api_keys=[
                ApiVersionsResponseApiVersion(api_key=e.api_key, min_version=e.min_version, max_version=e.max_version)
                for e in merged.api_keys
            ],
        )
        return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, refusal)

    @staticmethod
    def _is_group_lookup(request: FindCoordinatorRequest, version: int) -> bool:
        return version == 0 or request.key_type == _GROUP_KEY_TYPE

    def _find_group_coordinator(self, request: FindCoordinatorRequest, version: int, correlation_id: int) -> bytes:
        locate = self.gateway.locator.locate
        response = FindCoordinatorResponse()
        if version >= 4:
            for key in request.coordinator_keys:
                where = locate(key)
                response.coordinators.append(
                    FindCoordinatorResponseCoordinator(
                        key=key,
                        node_id=where.node_id,
                        host=where.host,
                        port=where.port,
                        error_code=where.error_code,
                        error_message=where.error_message,
                    )
                )
        else:
            where = locate(request.key)
            response.node_id, response.host, response.port = where.node_id, where.host, where.port
            response.error_code, response.error_message = where.error_code, where.error_message
        return encode_response(ApiKey.FIND_COORDINATOR, version, correlation_id, response)

    def _local(self, header: RequestHeader, body: object) -> Awaitable[bytes]:
        previous = self._last_local
        principal = self.session.principal if self.session.authenticated else None
        context = ConnectionContext(header, self.peer[0], self.peer[1], self.listener.port, principal)
        task = _spawn(self._call_handler(previous, context, body))
        self._last_local = task
        # A broker finishes a request whose client has gone and drops the answer; shielding keeps
        # a disconnect from cancelling the handler halfway through (say, between its log append
        # and its reply).
        return asyncio.shield(task)

    async def _call_handler(
        self, previous: asyncio.Task[Any] | None, context: ConnectionContext, body: object
    ) -> bytes:
        spec = APIS[context.api_key]
        response = await self._handler_answer(previous, context, body)
        try:
            return encode_response(context.api_key, context.api_version, context.header.correlation_id, response)
        except CodecError as exc:
            raise CloseConnection(f"cannot encode the handler's {spec.name} answer: {exc}") from exc

    async def _handler_answer(
        self, previous: asyncio.Task[Any] | None, context: ConnectionContext, body: object
    ) -> Message:
        # One group request at a time per connection, as a broker processes them.
        if previous is not None:
            await asyncio.wait({previous})
        spec = APIS[context.api_key]
        assert isinstance(body, spec.request)
        try:
            response = await self.gateway.handler.handle(context, body)
        except Exception as exc:
            log.exception("group handler failed api=%s version=%s", spec.name, context.api_version)
            raise CloseConnection(f"group handler failed on {spec.name}: {exc!r}") from exc
        if not isinstance(response, spec.response):
            raise CloseConnection(f"group handler returned {type(response).__name__} for {spec.name}")
        truncate_error_messages(response)
        return response

    # --- configs: GROUP resources here, the rest forwarded ---------------------------------------

    async def _configs(self, payload: bytes | bytearray, key: int, version: int) -> Slot | None:
        """Answer the GROUP resources of a config request here; None: forward it as it is (it
        names no group, or is a version or shape the gateway does not decode)."""
        spec = APIS[key]
        if not spec.supports(version) or len(payload) > self.gateway.config.max_group_request_bytes:
            return None
        try:
            request = decode_request(payload)
        except CodecError:
            return None
        original = request.body
        refusals: list[Message] = []
        protected = self.gateway.protected
        resources = list(original.resources)  # type: ignore[attr-defined]
        denied = [
            r for r in resources if r.resource_type == configs.TOPIC_RESOURCE and r.resource_name in protected.names
        ]
        if denied:
            # The log topic's configs: TOPIC_AUTHORIZATION_FAILED for its resources, the rest served.
            refused = configs.with_resources(original, denied)
            refusals.append(configs.refuse_all(refused, TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."))
            kept = [r for r in resources if all(r is not d for d in denied)]
            if not kept:
                answer = configs.merge(original, refusals)
                return True, self._ready(encode_response(key, version, request.header.correlation_id, answer))
            request = Request(request.header, configs.with_resources(original, kept))
        if not configs.names_groups(request.body) and not denied:
            if self._cluster_supports(key, version):
                return None
            # Offered because of group configs (merge_api_versions): the cluster's own resources
            # get a per-resource refusal rather than a closed connection.
            refusal = configs.refuse_all(
                request.body, UNSUPPORTED_VERSION, f"the cluster does not support API {key} v{version}"
            )
            return True, self._ready(encode_response(key, version, request.header.correlation_id, refusal))
        limit = self.gateway.config.max_group_request_elements
        if count_elements(request.body, limit) > limit:
            raise CloseConnection(
                f"{spec.name} v{version} carries more than max_group_request_elements={limit} array elements"
            )
        groups, rest = configs.split(request.body)
        upstream: Awaitable[bytes] | None = None
        if rest is not None:
            rest_payload = encode_request(request.header, rest)[4:]  # without its length prefix
            if self._cluster_supports(key, version):
                upstream = await self._forward(rest_payload, key, version, request.header.correlation_id, rewrite=False)
        local, remote = self._by_owner(request.header, groups) if configs.names_groups(groups) else (None, [])
        relayed = [
            asyncio.ensure_future(self._relayed(request.header, host, port, part)) for (host, port), part in remote
        ]
        answered: asyncio.Task[Message] | None = None
        if local is not None:
            previous = self._last_local
            principal = self.session.principal if self.session.authenticated else None
            context = ConnectionContext(request.header, self.peer[0], self.peer[1], self.listener.port, principal)
            answered = asyncio.create_task(self._handler_answer(previous, context, local))
            self._last_local = answered
        merged = self._merged_configs(Request(request.header, original), answered, relayed, rest, upstream, refusals)
        return True, asyncio.shield(_spawn(merged))

    def _by_owner(
        self, header: RequestHeader, groups: Message
    ) -> tuple[Message | None, list[tuple[tuple[str, int], Message]]]:
        """The GROUP resources this process answers, and those relayed to the owner of their group.

        Only plain connections are relayed: with TLS listeners or required authentication the
        peer would refuse an anonymous relay, so the local answer (NOT_COORDINATOR) stands."""
        resources = groups.resources  # type: ignore[attr-defined]
        config = self.gateway.config
        if header.client_id == RELAY_CLIENT_ID or config.listener_tls is not None or config.authentication != "none":
            return groups, []
        own = config.coordinator_node_id
        local: list[Any] = []
        remote: dict[tuple[str, int], list[Any]] = {}
        for resource in resources:
            where = self.gateway.locator.locate(resource.resource_name) if resource.resource_name else None
            if where is None or where.error_code or where.node_id == own:
                local.append(resource)
            else:
                remote.setdefault((where.host, where.port), []).append(resource)
        parts = [(address, configs.with_resources(groups, items)) for address, items in remote.items()]
        return (configs.with_resources(groups, local) if local else None), parts

    async def _relayed(self, header: RequestHeader, host: str, port: int, part: Message) -> Message:
        try:
            return await relay(host, port, header, part, self.gateway.config.upstream_connect_timeout_s)
        except (OSError, TimeoutError, ValueError, CodecError) as exc:
            log.warning("relaying %s to the group coordinator %s:%s failed: %r", type(part).__name__, host, port, exc)
            return configs.refuse_all(
                part, COORDINATOR_NOT_AVAILABLE, f"the group's coordinator at {host}:{port} did not answer"
            )

    async def _merged_configs(
        self,
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
            self.budget.release_for(len(payload))
            try:
                _, rest_answer = decode_response(key, version, payload)
            except CodecError as exc:
                raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
            parts.append(rest_answer)
        answer = configs.merge(request.body, parts)
        return encode_response(key, version, request.header.correlation_id, answer)

    def _cluster_supports(self, key: int, version: int) -> bool:
        known = self.gateway.cluster.cached_ranges(self.listener.node_id)
        if known is None:
            return True
        supported = known.get(key)
        return supported is not None and supported[0] <= version <= supported[1]

    # --- forwarded -----------------------------------------------------------------------------

    async def _forward(
        self,
        payload: bytes | bytearray,
        key: int,
        version: int,
        correlation_id: int,
        rewrite: bool,
        expect: bool = True,
        named: bool = False,
    ) -> Awaitable[bytes]:
        self._check_may_forward(key)
        upstream = await self._upstream()
        try:
            fut = await upstream.send(payload, correlation_id, expect)
        except (UpstreamClosed, OSError) as exc:
            raise CloseConnection(f"upstream write failed: {exc}") from exc
        self.gateway.observer.forwarded(key, len(payload), fut)
        if not rewrite:
            return fut
        return _spawn(self._rewritten(fut, key, version, named))

    def _check_may_forward(self, key: int) -> None:
        config = self.gateway.config
        if key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return
        if config.shares_upstream_identity and not config.allow_shared_upstream_identity and not self.session.sasl_used:
            # The upstream connection would present the sidecar's own client certificate: the
            # request would reach the cluster under the sidecar's principal, not the client's.
            raise CloseConnection(
                f"API {key} would reach the cluster as the sidecar's principal (upstream_tls.certfile); "
                "authenticate with SASL, or set allow_shared_upstream_identity"
            )

    # --- SASL, relayed -------------------------------------------------------------------------

    async def _sasl_handshake(self, payload: bytes | bytearray, version: int, correlation_id: int) -> Awaitable[bytes]:
        if version < 1:
            # v0 is followed by raw SASL tokens without Kafka framing; the gateway advertises v1+.
            raise CloseConnection("SaslHandshake v0 is not supported through the gateway")
        request = self._decode_sasl(payload, SaslHandshakeRequest, ApiKey.SASL_HANDSHAKE, version)
        assert isinstance(request, SaslHandshakeRequest)
        mechanism = request.mechanism

        def seen(body: Message) -> None:
            assert isinstance(body, SaslHandshakeResponse)
            self.session.handshake(mechanism, body.error_code)

        fut = await self._forward(payload, ApiKey.SASL_HANDSHAKE, version, correlation_id, rewrite=False)
        return _spawn(self._observed(fut, ApiKey.SASL_HANDSHAKE, version, seen))

    async def _sasl_authenticate(
        self, payload: bytes | bytearray, version: int, correlation_id: int
    ) -> Awaitable[bytes]:
        request = self._decode_sasl(payload, SaslAuthenticateRequest, ApiKey.SASL_AUTHENTICATE, version)
        assert isinstance(request, SaslAuthenticateRequest)
        try:
            self.session.client_message(request.auth_bytes)
        except SaslRefused as exc:
            if self.gateway.config.authentication == "required":
                raise CloseConnection(str(exc)) from exc

        def seen(body: Message) -> None:
            assert isinstance(body, SaslAuthenticateResponse)
            self.session.server_message(body.error_code, body.auth_bytes, body.session_lifetime_ms)
            if self.session.authenticated:
                log.info(
                    "client authenticated peer=%s:%s principal=User:%s mechanism=%s",
                    *self.peer,
                    self.session.principal,
                    self.session.mechanism,
                )

        fut = await self._forward(payload, ApiKey.SASL_AUTHENTICATE, version, correlation_id, rewrite=False)
        return _spawn(self._observed(fut, ApiKey.SASL_AUTHENTICATE, version, seen))

    @staticmethod
    def _decode_sasl(payload: bytes | bytearray, cls: type[Message], key: int, version: int) -> Message:
        if version not in cls.VALID:
            raise CloseConnection(f"unsupported version {cls.__name__.removesuffix('Request')} v{version}")
        flexible = version in cls.FLEXIBLE
        try:
            _, pos = decode_request_header(payload, 2 if flexible else 1)
            return decode_struct(cls, memoryview(payload)[pos:], version, flexible)
        except CodecError as exc:
            raise CloseConnection(f"malformed API {key} v{version}: {exc}") from exc

    async def _observed(self, fut: Awaitable[bytes], key: int, version: int, seen: Callable[[Message], None]) -> bytes:
        payload = await fut
        cls = SaslHandshakeResponse if key == ApiKey.SASL_HANDSHAKE else SaslAuthenticateResponse
        flexible = version in cls.FLEXIBLE
        try:
            _, pos = decode_response_header(payload, 1 if flexible else 0)
            body = decode_struct(cls, memoryview(payload)[pos:], version, flexible)
        except CodecError as exc:
            raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
        try:
            seen(body)
        except SaslRefused as exc:
            if self.gateway.config.authentication == "required":
                raise CloseConnection(str(exc)) from exc
        return payload

    async def _upstream(self) -> UpstreamConnection:
        if self.upstream is None or self.upstream.closed:
            if self.upstream is not None:
                raise CloseConnection("upstream connection lost")
            try:
                self.upstream = await self.gateway.connect_upstream(self.listener, self.budget)
            except (TimeoutError, OSError, ssl.SSLError) as exc:
                raise CloseConnection(f"cannot reach the cluster: {exc}") from exc
        return self.upstream

    async def _rewritten(self, fut: Awaitable[bytes], key: int, version: int, named: bool = False) -> bytes:
        payload = await fut
        # The answer is re-encoded below and written as a framed slot; its budget ends here.
        self.budget.release_for(len(payload))
        try:
            correlation_id, body = decode_response(key, version, payload)
        except CodecError as exc:
            raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
        gateway = self.gateway
        if isinstance(body, MetadataResponse):
            if gateway.protected:
                gateway.protected.filter_metadata(named, body)
            await gateway.ensure_broker_listeners({b.node_id: (b.host, b.port) for b in body.brokers})
            rewrite_metadata(body, gateway.broker_route, gateway.coordinator_metadata_node())
            body.brokers.extend(gateway.peer_metadata_nodes())
        elif isinstance(body, DescribeClusterResponse) and body.endpoint_type == _BROKER_ENDPOINTS:
            await gateway.ensure_broker_listeners({b.broker_id: (b.host, b.port) for b in body.brokers})
            rewrite_describe_cluster(body, gateway.broker_route, gateway.coordinator_cluster_node())
            body.brokers.extend(gateway.peer_cluster_nodes())
        elif isinstance(body, FindCoordinatorResponse):
            nodes = {c.node_id: (c.host, c.port) for c in body.coordinators if c.node_id >= 0}
            if version < 4 and body.node_id >= 0:
                nodes[body.node_id] = (body.host, body.port)
            await gateway.ensure_broker_listeners(nodes)
            rewrite_find_coordinator(body, gateway.broker_route, version)
        return encode_response(key, version, correlation_id, body)
