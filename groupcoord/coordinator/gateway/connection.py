"""One client connection: read frames in order, answer or forward each, write answers in order."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import ssl
import struct
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway import group_configs, routing, topic_split
from groupcoord.coordinator.gateway.answers import CloseConnection, IdleConnection, Slot, ready, spawn
from groupcoord.coordinator.gateway.apis import APIS, ApiKey
from groupcoord.coordinator.gateway.client_stream import ClientStream
from groupcoord.coordinator.gateway.cluster import UNSUPPORTED_VERSION, ClusterUnavailable
from groupcoord.coordinator.gateway.codec import CodecError, decode_struct
from groupcoord.coordinator.gateway.context import GatewayContext, ListenerView
from groupcoord.coordinator.gateway.framing import (
    FrameError,
    RequestHeader,
    check_frame_size,
    decode_request_header,
    decode_response_header,
    peek_request,
)
from groupcoord.coordinator.gateway.handler import AnswerNow, ConnectionContext, CoordinatorAddress, answer_now_of
from groupcoord.coordinator.gateway.limits import ByteBudget, ConnectionBudget, truncate_error_messages
from groupcoord.coordinator.gateway.protocol import (
    Request,
    RequestMemo,
    ResponseMemo,
    decode_request,
    decode_response,
    encode_response,
)
from groupcoord.coordinator.gateway.relay import answered_for
from groupcoord.coordinator.gateway.rewrite import (
    merge_api_versions,
    rewrite_describe_cluster,
    rewrite_find_coordinator,
    rewrite_metadata,
)
from groupcoord.coordinator.gateway.sliced_encoding import encode_arrays_ahead
from groupcoord.coordinator.gateway.upstream import Answer, UpstreamClosed, UpstreamConnection, write_framed
from groupcoord.coordinator.messages.api_versions import ApiVersionsResponse, ApiVersionsResponseApiVersion
from groupcoord.coordinator.messages.create_topics import CreateTopicsResponse
from groupcoord.coordinator.messages.delete_topics import DeleteTopicsResponse
from groupcoord.coordinator.messages.describe_cluster import DescribeClusterResponse
from groupcoord.coordinator.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from groupcoord.coordinator.messages.metadata import MetadataResponse
from groupcoord.coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupcoord.coordinator.messages.schema import ZERO_UUID, Message
from groupcoord.coordinator.security.sasl import SaslRefused, SaslSession

log = logging.getLogger(__name__)

_LEN = struct.Struct(">i")
# Bytes of a connection's answers built here (group, share and admin APIs) it may have unwritten
# before its next such request waits for them to be written: far above what a client that reads
# its answers has in flight (a pipelined commit's answer is some hundred bytes), so only a client
# that stops reading is held, at about this much plus one answer (ShareFetch: ~1 MB).
UNWRITTEN_ANSWER_BYTES = 1 << 20
# DescribeCluster can list controllers instead (KIP-919); clients reaching controllers directly do
# not go through the sidecar, so only broker lists are rewritten.
_BROKER_ENDPOINTS = 1
_Answer = TypeVar("_Answer", DeleteTopicsResponse, CreateTopicsResponse)
# The longest a Metadata answer waits for the coordinator to take in a topic it shows re-created
# or deleted (a description of those topics and, for a re-created one, its old offsets dropped).
METADATA_SEEN_WAIT_S = 5.0
# Kafka's answer to a group lookup the caller may not make: no node (Node.noNode), its error's message.
_GROUP_LOOKUP_DENIED = CoordinatorAddress(
    node_id=-1,
    host="",
    port=-1,
    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
    error_message="Group authorization failed.",
)


def _readable(kind: type[_Answer], payload: bytes, version: int) -> _Answer | None:
    """A forwarded answer of the cluster's, decoded to be looked at (None: a version or bytes the
    gateway cannot read; the client still gets them as they are)."""
    if version not in kind.VALID:
        return None
    flexible = version in kind.FLEXIBLE
    try:
        _, pos = decode_response_header(payload, 1 if flexible else 0)
        return decode_struct(kind, memoryview(payload)[pos:], version, flexible)
    except CodecError:
        return None


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


# The requests offered to the handler's ``answer_now`` as they arrive (``_answer_at_once``): the
# first two bytes of their frames (the API key). Others are not decoded there at all.
_AT_ONCE_KEYS = frozenset(key.to_bytes(2, "big") for key in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.HEARTBEAT))


def _handler_failed(context: ConnectionContext, exc: Exception) -> CloseConnection:
    name = APIS[context.api_key].name
    log.error("group handler failed api=%s version=%s", name, context.api_version, exc_info=exc)
    return CloseConnection(f"group handler failed on {name}: {exc!r}")


def _failed(exc: CloseConnection) -> asyncio.Future[Message]:
    failed: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
    failed.set_exception(exc)
    return failed


def _checked(context: ConnectionContext, response: Message) -> Message:
    """The handler's answer, if it is the request's response class, with its error messages cut
    to length."""
    spec = APIS[context.api_key]
    if not isinstance(response, spec.response):
        raise CloseConnection(f"group handler returned {type(response).__name__} for {spec.name}")
    truncate_error_messages(response)
    return response


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
        # Answers built here (``_local``) and not yet written, and their bytes: past
        # UNWRITTEN_ANSWER_BYTES the next group request waits for them (``_answers_written``).
        self._local_answers: set[Awaitable[bytes]] = set()
        self._unwritten_local = 0
        self._written: asyncio.Future[None] | None = None
        self._closing = False
        self.session = SaslSession()
        # Unguessable: a relayed request names its client's connection by it (gateway/relay.py).
        self.id = secrets.token_hex(12)
        subject = (
            _certificate_principal(stream) if config.listener_tls and config.listener_tls.require_client_cert else None
        )
        if subject is not None:
            self.session.authenticate_externally(subject)
        self._answer_now = answer_now_of(gateway.handler)
        # The last request decoded by ``_answer_at_once``: a steady heartbeat repeats it.
        self._at_once_memo = RequestMemo()
        # The last answer encoded there: a steady heartbeat's answer repeats it too.
        self._answer_memo = ResponseMemo()
        # An answer given there that a repeat of its request gets again while it stands
        # (``steady_answers``): with the frame written and the request's API key.
        self._steady: tuple[steady_answers.SteadyAnswer, bytes, int] | None = None

    async def run(self) -> None:
        if self._answer_now is not None:
            self.stream.answer_at_once(self._answer_at_once, self.gateway.config.connections_max_idle_ms / 1000)
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
            # Group requests run to their end after a disconnect (``_local``): the last one may
            # still open a share session, so the listeners hear of the close after it (without
            # holding this task: a handler call may take long, and stop() must not wait for it).
            last = self._last_local
            if last is not None and not last.done():
                last.add_done_callback(lambda _: self.gateway.connection_closed(self.id))
            else:
                self.gateway.connection_closed(self.id)

    async def _close(self) -> None:
        self._closing = True
        self._wake_written()  # a group request waiting for its predecessors' answers goes on
        self.stream.answer_at_once(None)
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
        """Whether another frame starts (False at EOF, or once the upstream connection is lost:
        ``_upstream_lost``); closes a connection idle for too long."""
        if self.stream.buffered:
            # Pipelined requests: no idle deadline to arm.
            return not self.stream.requests_ended
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
            if self.stream.transport.is_closing():
                # Lost (or closing) with answers still queued: asyncio drops what is written to
                # such a transport and logs a WARNING for each write past the fifth, dozens of
                # lines when a client leaves with its answers in flight (seen at shard moves).
                raise ConnectionResetError("connection lost with answers unwritten")
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
            elif pending in self._local_answers:
                self._local_answers.discard(pending)
                self._unwritten_local -= size
                if self._unwritten_local < UNWRITTEN_ANSWER_BYTES:
                    self._wake_written()
            self.outstanding -= 1

    async def _dispatch(self, payload: bytes | bytearray) -> Slot | None:
        try:
            key, version, correlation_id = peek_request(payload)
        except FrameError as exc:
            raise CloseConnection(str(exc)) from exc
        self.gateway.observer.request(key)
        decision = routing.route(key, version, payload, self._facts())
        if isinstance(decision, routing.Configs):
            slot = await group_configs.answer_configs(self, payload, key, version)
            if slot is not None:
                return slot
            decision = decision.fallback
        match decision:
            case routing.Forward(rewrite=rewrite, named=named, expect=expect):
                pending = await self._forward(
                    payload, key, version, correlation_id, rewrite=rewrite, expect=expect, named=named
                )
                if key == ApiKey.DELETE_TOPICS and expect:
                    pending = spawn(self._topics_deleted(pending, version))
                elif key == ApiKey.CREATE_TOPICS and expect:
                    pending = spawn(self._topics_created(pending, version))
                return (rewrite, pending) if expect else None
            case routing.ForwardSplit():
                # Rare (requests naming the log topic): a copy of a large frame costs nothing here.
                return await self._forward_split(bytes(payload), key, version, correlation_id)
            case routing.CallHandler(request=request):
                return True, self._local(request.header, request.body)
            case routing.Answer(body=body):
                return True, ready(encode_response(key, version, correlation_id, body))
            case routing.LocateGroups(request=lookup):
                return True, ready(self._find_group_coordinator(lookup, version, correlation_id))
            case routing.AnswerApiVersions(invalid=True):
                # As Kafka answers it: the error alone, no versions.
                refusal = ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=[])
                return True, ready(encode_response(key, version, correlation_id, refusal))
            case routing.AnswerApiVersions():
                return True, ready(await self._api_versions(version, correlation_id))
            case routing.Sasl(handshake=True):
                return False, await self._sasl_handshake(payload, version, correlation_id)
            case routing.Sasl(handshake=False):
                return False, await self._sasl_authenticate(payload, version, correlation_id)
            case routing.Close(reason=reason):
                raise CloseConnection(reason)
        raise AssertionError(f"no action for {decision!r}")

    def _facts(self, decode: Callable[[bytes | bytearray], Request] = decode_request) -> routing.Facts:
        gateway = self.gateway
        config = gateway.config
        return routing.Facts(
            authentication_required=config.authentication == "required",
            authenticated=self.session.authenticated,
            max_group_request_bytes=config.max_group_request_bytes,
            max_group_request_elements=config.max_group_request_elements,
            broker_port=self.listener.node_id is not None,
            protected=gateway.protected,
            cluster_ranges=gateway.cluster.cached_ranges(self.listener.node_id),
            share_groups=config.share_groups_enabled,
            transaction_v2=gateway.cluster.cached_transaction_v2(self.listener.node_id),
            decode=decode,
        )

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
        return True, asyncio.shield(spawn(self._merged_split(parts, upstream)))

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

    # --- answered here -------------------------------------------------------------------------

    async def _api_versions(self, version: int, correlation_id: int) -> bytes:
        try:
            cluster = await self.gateway.cluster.api_versions(self.listener.node_id)
        except ClusterUnavailable as exc:
            raise CloseConnection(str(exc)) from exc
        merged = merge_api_versions(cluster, self.gateway.config.share_groups_enabled)
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

    def _find_group_coordinator(self, request: FindCoordinatorRequest, version: int, correlation_id: int) -> bytes:
        where_is = self.gateway.locator.locate
        may_find = self.gateway.may_find_group
        principal = self.session.principal if self.session.authenticated else None
        host = self.peer[0]

        def locate(group: str) -> CoordinatorAddress:
            # Kafka (KafkaApis.handleFindCoordinatorRequest): a group key needs DESCRIBE on the group.
            if may_find is not None and not may_find(principal, host, group):
                return _GROUP_LOOKUP_DENIED
            return where_is(group)

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

    def _context(self, header: RequestHeader) -> ConnectionContext:
        own = self.session.principal if self.session.authenticated else None
        principal, host, connection = answered_for(
            own, self.peer[0], self.id, header.client_id, self.gateway.config.relay_principal
        )
        return ConnectionContext(header, host, self.peer[1], self.listener.port, principal, connection_id=connection)

    def _local(self, header: RequestHeader, body: object) -> Awaitable[bytes]:
        previous = self._last_local
        task = spawn(self._call_handler(previous, self._context(header), body))
        self._last_local = task
        # A broker finishes a request whose client has gone and drops the answer; shielding keeps
        # a disconnect from cancelling the handler halfway through (say, between its log append
        # and its reply).
        answer = asyncio.shield(task)
        self._local_answers.add(answer)
        return answer

    def _wake_written(self) -> None:
        waiter, self._written = self._written, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _answers_written(self) -> None:
        """Wait until this connection's answers built here and still unwritten hold fewer than
        UNWRITTEN_ANSWER_BYTES (or it closes). A Kafka broker mutes a connection until its answer
        is sent; here up to ``max_in_flight_per_connection`` requests are read ahead, which a
        client that pipelines ShareFetch or describes and never reads their answers turned into
        as many answers held at once (~1 MB each: 52-66 MB per connection, measured)."""
        while self._unwritten_local >= UNWRITTEN_ANSWER_BYTES and not self._closing:
            if self._written is None:
                self._written = asyncio.get_running_loop().create_future()
            await self._written

    def answer_here(self, header: RequestHeader, body: Message) -> asyncio.Task[Message]:
        """The handler's answer to a part of a request (the GROUP resources of a config request),
        after this connection's earlier group requests."""
        previous = self._last_local
        task = asyncio.create_task(self._handler_answer(previous, self._context(header), body))
        self._last_local = task
        return task

    async def forward(self, payload: bytes, key: int, version: int, correlation_id: int) -> Awaitable[bytes]:
        """A part of a request (without its length prefix) forwarded as it is."""
        return await self._forward(payload, key, version, correlation_id, rewrite=False)

    async def _call_handler(
        self, previous: asyncio.Task[Any] | None, context: ConnectionContext, body: object
    ) -> bytes:
        response = await self._handler_answer(previous, context, body)
        data = self._encoded(context, await self._arrays_ahead(context, response))
        self._unwritten_local += len(data)
        return data

    @staticmethod
    async def _arrays_ahead(context: ConnectionContext, response: Message) -> Message:
        """The answer with its long arrays encoded in slices (``sliced_encoding``)."""
        try:
            flexible = APIS[context.api_key].flexible(context.api_version)
            return await encode_arrays_ahead(response, context.api_version, flexible)
        except CodecError as exc:
            name = APIS[context.api_key].name
            raise CloseConnection(f"cannot encode the handler's {name} answer: {exc}") from exc

    async def _handler_answer(
        self, previous: asyncio.Task[Any] | None, context: ConnectionContext, body: object
    ) -> Message:
        # One group request at a time per connection, as a broker processes them. The previous
        # one is usually answered long since (a heartbeat 5 s ago): ``asyncio.wait`` on a done
        # task still builds its waiter, a tenth of a steady heartbeat's serve CPU (profiled).
        if previous is not None and not previous.done():
            await asyncio.wait({previous})
        if self._unwritten_local >= UNWRITTEN_ANSWER_BYTES:
            await self._answers_written()
            if self._closing:
                # Not begun: its client stopped reading, then left. A broker, which reads a
                # request only once it has answered the last, would never have read it.
                raise CloseConnection("closed with the request unread by a broker's rules")
        assert isinstance(body, APIS[context.api_key].request)
        try:
            response = await self.gateway.handler.handle(context, body)
        except Exception as exc:
            raise _handler_failed(context, exc) from exc
        return _checked(context, response)

    @staticmethod
    def _encoded(
        context: ConnectionContext,
        response: Message,
        encode: Callable[[int, int, int, Message], bytes] = encode_response,
    ) -> bytes:
        try:
            return encode(context.api_key, context.api_version, context.header.correlation_id, response)
        except CodecError as exc:
            name = APIS[context.api_key].name
            raise CloseConnection(f"cannot encode the handler's {name} answer: {exc}") from exc

    # --- answered at once --------------------------------------------------------------------

    def _answer_at_once(self, frame: bytes) -> bool:
        """A whole request frame received while the reader waits for the next one
        (``ClientStream.answer_at_once``): if it is a group request the handler answers without
        waiting (``answer_now``; a steady ConsumerGroupHeartbeat), its answer is written here and
        now, with no task, queue entry or loop turn; True. Only when no earlier answer is owed
        (answers stay in request order) and the transport takes writes. A request the handler
        takes but answers later (its records must be read back first) is queued as ``_local``
        queues one. Anything else is left to the reader (False), untouched: not decoded twice
        but for the rare group request that is decoded, then refused here. No buffer budget is
        taken: the frame is a small one already in the read-ahead buffer, held only meanwhile."""
        answer_now = self._answer_now
        if (
            answer_now is None
            or self.outstanding
            or self.stream.write_paused
            or frame[:2] not in _AT_ONCE_KEYS
            or len(frame) > self.gateway.config.max_frame_bytes
        ):
            return False
        previous = self._last_local
        if previous is not None and not previous.done():
            return False
        memo = self._at_once_memo
        may_repeat = self.gateway.config.authentication != "required" or self.session.authenticated
        steady = self._steady
        if steady is not None:
            # The frame of the answer's request again, and the answer still stands: given again
            # without the handlers (``steady_answers``), with this request's correlation id.
            if may_repeat and memo.repeats(frame) and steady[0].again():
                self.gateway.observer.request(steady[2])
                answer_frame = steady[1]
                self.stream.write(b"".join((answer_frame[:4], frame[4:8], answer_frame[8:])))
                return True
            self._steady = None
        # A steady heartbeat repeats the frame routing took last time on this connection: the
        # same decision, as long as the connection may still send it (its authentication; the
        # rest of what routing checks is the bytes and the gateway's configuration).
        request = memo.repeated(frame)
        if request is None or not may_repeat:
            try:
                key, version, _ = peek_request(frame)
            except FrameError:
                return False
            decision = routing.route(key, version, frame, self._facts(memo.decode))
            if not isinstance(decision, routing.CallHandler):
                return False
            request = decision.request
            memo.routed(request)
        key = request.header.api_key
        context = self._context(request.header)
        answer: AnswerNow | asyncio.Future[Message]
        steady_answers.refuse()
        try:
            answer = answer_now(context, request.body)
        except Exception as exc:
            answer = _failed(_handler_failed(context, exc))
        if answer is None:
            return False
        self.gateway.observer.request(key)
        if isinstance(answer, Message):
            try:
                encoded = self._encoded(context, _checked(context, answer), self._answer_memo.encode)
            except CloseConnection as exc:
                answer = _failed(exc)
            else:
                self.stream.write(encoded)
                offered = steady_answers.take(answer)
                if offered is not None:
                    self._steady = (offered, encoded, key)
                return True
        task = spawn(self._answered_later(context, answer))
        self._last_local = task
        self.outstanding += 1
        self.queue.put_nowait((True, asyncio.shield(task)))
        return True

    async def _answered_later(self, context: ConnectionContext, answer: Awaitable[Message]) -> bytes:
        try:
            response = await answer
        except CloseConnection:
            raise
        except Exception as exc:
            raise _handler_failed(context, exc) from exc
        return self._encoded(context, _checked(context, response))

    # --- forwarded -----------------------------------------------------------------------------

    async def _forward(
        self,
        payload: bytes | bytearray,
        key: int,
        version: int,
        correlation_id: int,
        rewrite: bool,
        expect: bool = True,
        named: frozenset[str | uuid.UUID] = frozenset(),
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
        return spawn(self._rewritten(fut, key, version, named))

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
        return spawn(self._observed(fut, ApiKey.SASL_HANDSHAKE, version, seen))

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
        return spawn(self._observed(fut, ApiKey.SASL_AUTHENTICATE, version, seen))

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

    async def _metadata_seen(self, body: MetadataResponse) -> None:
        """Tell the coordinator what the cluster answered; where that contradicts its topic
        picture (a topic re-created or deleted past the sidecar), the answer waits, for at most
        ``METADATA_SEEN_WAIT_S``, until the coordinator has taken it in: the client's next
        commits then name the topic as it now is."""
        seen = self.gateway.metadata_seen
        taken = seen(body) if seen is not None else None
        if taken is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(taken), METADATA_SEEN_WAIT_S)
        except TimeoutError:
            pass  # answered anyway; the picture catches up on its own
        except Exception:
            log.exception("taking in the topics of a Metadata answer failed")

    async def _topics_deleted(self, fut: Awaitable[bytes], version: int) -> bytes:
        """The cluster's DeleteTopics answer, released once the coordinator has dropped the topics
        it deleted (their offsets, share state, assignments), as Kafka's coordinator has once the
        deletion is in its metadata image; an answer it cannot read is released as it is."""
        payload = await fut
        body = _readable(DeleteTopicsResponse, payload, version)
        if body is None:
            return payload
        deleted = [r for r in body.responses if r.error_code == ErrorCode.NONE]
        names = [r.name for r in deleted if r.name]
        ids = [r.topic_id for r in deleted if r.topic_id != ZERO_UUID]
        if names or ids:
            await self.gateway.topics_deleted(names, ids)
        return payload

    async def _topics_created(self, fut: Awaitable[bytes], version: int) -> bytes:
        """The cluster's CreateTopics answer, released once the coordinator knows the topics it
        created (for at most ``METADATA_SEEN_WAIT_S``): a group subscribed to one, by name or
        regex, is assigned it without waiting for the next metadata refresh. An answer it cannot
        read is released as it is."""
        payload = await fut
        body = _readable(CreateTopicsResponse, payload, version)
        if body is None:
            return payload
        names = [t.name for t in body.topics if t.error_code == ErrorCode.NONE and t.name]
        if names:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.gateway.topics_created(names)), METADATA_SEEN_WAIT_S)
        return payload

    async def _upstream(self) -> UpstreamConnection:
        if self.upstream is None or self.upstream.closed:
            if self.upstream is not None:
                raise CloseConnection("upstream connection lost")
            try:
                self.upstream = await self.gateway.connect_upstream(self.listener, self.budget)
            except (TimeoutError, OSError, ssl.SSLError) as exc:
                raise CloseConnection(f"cannot reach the cluster: {exc}") from exc
            self.upstream.on_lost(self._upstream_lost)
        return self.upstream

    def _upstream_lost(self) -> None:
        """The broker closed this connection's upstream connection, or it failed. It was this
        client's own (its SASL login, the broker's per-connection state) and is never opened
        again, so the client is told as a broker's client would be: its connection closes. As at
        the client's own EOF, no further request is read and the answers already owed are written
        in order first (a forwarded one among them fails, and closes the connection there); a
        client with nothing owed (idle) is closed at once instead of at its next request."""
        if not self.stream.requests_ended:
            log.info("closing client connection peer=%s:%s reason=its broker connection ended", *self.peer)
        self.stream.end_requests()

    async def _rewritten(
        self, fut: Awaitable[bytes], key: int, version: int, named: frozenset[str | uuid.UUID] = frozenset()
    ) -> bytes:
        payload = await fut
        # The answer is re-encoded below and written as a framed slot; its budget ends here.
        self.budget.release_for(len(payload))
        try:
            correlation_id, body = decode_response(key, version, payload)
        except CodecError as exc:
            raise CloseConnection(f"cannot decode the cluster's API {key} v{version} answer: {exc}") from exc
        gateway = self.gateway
        if isinstance(body, MetadataResponse):
            await self._metadata_seen(body)
            if gateway.protected:
                gateway.protected.filter_metadata(named, body, version)
            await gateway.ensure_broker_listeners({b.node_id: (b.host, b.port) for b in body.brokers})
            rewrite_metadata(body, gateway.broker_route, gateway.coordinator_metadata_node())
            body.brokers.extend(gateway.alias_metadata_nodes(body.brokers))
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
            rewrite_find_coordinator(body, gateway.coordinator_route, version, gateway.coordinator_alias)
        return encode_response(key, version, correlation_id, body)
