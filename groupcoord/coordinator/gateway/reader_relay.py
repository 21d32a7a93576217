"""A loopback relay between the sidecar's own Kafka consumers and the cluster, capping Fetch at v12.

Why it exists: librdkafka (2.16.0, unchanged on its master) takes the whole process down with
SIGSEGV when a Fetch answer of v16 or later carries a current-leader hint (KIP-951) for a topic
whose id is zero: ``rd_kafka_metadata_update_op`` then looks the topic up in its metadata cache
by a NULL name (``strcmp``). Tansu answers a Fetch for a deleted topic that way, so deleting the
log topic (or the directory topic, or a topic the lag reader follows) directly on the cluster
killed ``groupcoord serve`` within a fraction of a second, long before anything could notice the
topic was gone. No librdkafka setting caps one API's version (``broker.version.fallback`` only
knows brokers older than 0.10), so the cap is put on the wire: this relay answers each of its
client's ApiVersions with the cluster's own list, Fetch capped at v12. librdkafka acts on a hint
only when the answer also carries the brokers' endpoints, which come with v16; v12 is also the
version librdkafka itself falls back to when topic ids are not usable, so the path is one it
knows (topics by name, an unknown topic answered UNKNOWN_TOPIC_OR_PARTITION).

A consumer learns where the brokers are from Metadata (and its group's coordinator from
FindCoordinator), and then connects to them directly; so those answers are rewritten too: every
broker is advertised at a loopback listener of this relay that forwards to it (one per broker
address, made when first seen), and Metadata and FindCoordinator are capped at the versions the
gateway's codec reads. Every other answer is streamed through as it arrives, unread.

The relay runs its own event loop on its own thread: the shard loads it carries never wait for
the gateway's loop, nor the gateway for them. Only the sidecar's consumers use it (the log reader,
placement's two consumers, the lag reader); producers and admin clients, which never fetch, talk to
the cluster directly. The read-back of every acknowledged write does pass through it, which is why
it forwards as it does (see ``_Pipe``; ``bench/relay_bench.py`` measures acknowledged commits with
and without it in the same run). It speaks plaintext on both sides: with
TLS towards the cluster, or Kerberos (which names the broker's host in its ticket), the consumers
connect directly as before (see ``relayable``).

The log reader's fetches wait here, not at the broker (``tail_bootstrap``). A Kafka broker
answers a waiting Fetch as soon as records arrive; a broker that answers only when the wait ends
(Tansu does) adds half the reader's fetch wait, on average, to every acknowledged write: 2 ms of
a 4 ms commit. The relay knows when the sidecar's own writes land (``kick``, from the log
writer's delivery reports), so a fetch of the reader that asks again for the partitions of an
answer without much in it (the reader has caught up) is held here until a write lands or its own
wait ends, and then sent with a wait of 1 ms: the broker answers at once, with the records just
written. (Not 0: Tansu answers a Fetch that may not wait with no partitions at all.) The one
exception is a reader that is behind (``behind``, told by the log reader when a poll found
nothing although the broker's last answer told of records past it): its next fetch goes on with
a wait of at least 100 ms. The records are there, so a broker answers it once it has found them,
and a broker may spend the wait finding them: Tansu's memory store lists every record batch of the
partition on each fetch and stops listing when the fetch's wait is over, so once a partition holds
a few thousand batches a 1 ms fetch comes back empty however many records lie past the reader
(with only 1 ms fetches a 5,000-member join stalled on its read-back for a minute), and 10 ms
do not list ~20,000 (docs/benchmarks.md, "A read-back starved by a short broker wait"). A fetch
after an answer with more in it, or for other partitions (a shard to load), goes through at once
as it came, and any other request of the connection lets a held fetch go first, so requests
still reach the broker in order. Records other processes write are read within the reader's
wait, or, on such a broker, once the reader sees it is behind them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
from functools import partial
from typing import Any

from groupcoord.coordinator.gateway.apis import APIS, ApiKey
from groupcoord.coordinator.gateway.codec import CodecError, read_tag_count, read_uvarint
from groupcoord.coordinator.gateway.fetch_wait import max_wait_ms, max_wait_offset, with_max_wait
from groupcoord.coordinator.gateway.framing import FrameError, check_frame_size, peek_request
from groupcoord.coordinator.gateway.protocol import decode_response, encode_response
from groupcoord.coordinator.gateway.rewrite import rewrite_find_coordinator, route_brokers
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorResponse
from groupcoord.coordinator.messages.metadata import MetadataResponse

log = logging.getLogger(__name__)

# The highest Fetch version the sidecar's consumers may use (see the module docstring).
FETCH_MAX_VERSION = 12

_LEN = struct.Struct(">i")
_HEAD = struct.Struct(">ii")  # an answer's length and correlation id
_PEEK = struct.Struct(">hhi")  # a request's api key, api version and correlation id
_I16 = struct.Struct(">h")
_ENTRY = struct.Struct(">hhh")
# Requests of the sidecar's consumers are small; the limit only rejects a corrupt length prefix.
_MAX_REQUEST_BYTES = 100 * 1024 * 1024
_MAX_ANSWER_BYTES = 2**31 - 1
_CONNECT_TIMEOUT_S = 10.0
# Answers read and rewritten here; the rest are streamed through.
_REWRITTEN = frozenset({ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.FIND_COORDINATOR})
# A log reader's Fetch answer at least this big had records to spare (a load reading the log):
# its next fetch is sent on at once, not held. A caught-up reader's answers are a few hundred
# bytes a partition, or the few records just written (a 100-partition commit is ~15 KiB).
_HOLD_AFTER_BYTES_BELOW = 64 * 1024
# The wait a held fetch is sent with: not 0, which Tansu answers with no partitions at all.
_BROKER_WAIT_MS = 1
# The least wait of a fetch of a reader that is behind (module docstring): a Tansu memory store
# lists ~20,000 batches of a partition in 10-30 ms here.
_BEHIND_WAIT_MS = 100


def relayable(client_config: dict[str, Any]) -> bool:
    """Whether the consumers of this client config can go through the relay: plaintext towards
    the cluster, and no Kerberos (its service ticket names the broker's host)."""
    protocol = str(client_config.get("security.protocol", "plaintext")).lower()
    if protocol == "plaintext":
        return True
    if protocol != "sasl_plaintext":
        return False
    mechanism = client_config.get("sasl.mechanism", client_config.get("sasl.mechanisms", "GSSAPI"))
    return str(mechanism).upper() != "GSSAPI"


def cap_api_versions(payload: bytearray, api_version: int) -> None:
    """Lower, in place, the maximum versions of a successful ApiVersions answer (the payload after
    the length prefix): Fetch to ``FETCH_MAX_VERSION``, Metadata and FindCoordinator to what the
    codec reads. An answer with an error is left alone (it lists the versions of ApiVersions
    itself, and the client asks again)."""
    pos = 4  # the correlation id: ApiVersions answers keep response header v0
    (error,) = _I16.unpack_from(payload, pos)
    if error != 0:
        return
    pos += 2
    flexible = api_version >= 3
    if flexible:
        count, pos = read_uvarint(payload, pos)
        count -= 1
    else:
        (count,) = _LEN.unpack_from(payload, pos)
        pos += 4
    for _ in range(max(count, 0)):
        if pos + _ENTRY.size > len(payload):
            raise CodecError("truncated ApiVersions entry")
        key, low, high = _ENTRY.unpack_from(payload, pos)
        cap = _version_cap(key)
        if cap is not None and high > cap:
            _ENTRY.pack_into(payload, pos, key, low, max(low, cap))
        pos += _ENTRY.size
        if flexible:
            tags, pos = read_tag_count(payload, pos)
            for _ in range(tags):
                _, pos = read_uvarint(payload, pos)
                size, pos = read_uvarint(payload, pos)
                pos += size


def _version_cap(key: int) -> int | None:
    if key == ApiKey.FETCH:
        return FETCH_MAX_VERSION
    if key in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR):
        return APIS[key].max_version
    return None


class ReaderRelay:
    """Loopback listeners, one per broker address, each forwarding to its broker."""

    def __init__(self, bootstrap_servers: str, host: str = "127.0.0.1") -> None:
        self.host = host
        self._upstreams = [_split_address(entry) for entry in bootstrap_servers.split(",") if entry.strip()]
        if not self._upstreams:
            raise ValueError("no bootstrap servers to relay")
        self._loop = asyncio.new_event_loop()
        # (upstream (host, port), for the log reader) -> local port; written on the relay's
        # thread (and in __init__). The log reader's connections have listeners of their own:
        # their fetches may be held (see the module docstring).
        self._ports: dict[tuple[tuple[str, int], bool], int] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._pipes: set[_Pipe] = set()
        # Writes of the sidecar's log seen landed (``kick``): written by the log writer's thread,
        # read by the relay's; the pipes holding a fetch, on the relay's thread.
        self._kicks = 0
        self._holding: set[_Pipe] = set()
        # Set by the log reader's thread (``behind``), cleared by the relay's once a fetch goes on
        # with its own wait.
        self._behind = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader-relay", daemon=True)
        # Bound before the thread runs, so the bootstrap addresses are known at once.
        self._pending_sockets = [
            (upstream, tails, self._bind(upstream, tails)) for upstream in self._upstreams for tails in (False, True)
        ]

    @property
    def bootstrap(self) -> str:
        """The bootstrap servers the sidecar's consumers are given."""
        return ",".join(f"{self.host}:{self._ports[upstream, False]}" for upstream in self._upstreams)

    @property
    def tail_bootstrap(self) -> str:
        """The bootstrap servers of the log reader, whose fetches wait for ``kick``."""
        return ",".join(f"{self.host}:{self._ports[upstream, True]}" for upstream in self._upstreams)

    def reader_config(self, client_config: dict[str, Any], tails: bool = False) -> dict[str, Any]:
        return {**client_config, "bootstrap.servers": self.tail_bootstrap if tails else self.bootstrap}

    def kick(self) -> None:
        """Records of the sidecar's log were written (any thread): the log reader's fetch held
        here goes to the broker now."""
        self._kicks += 1
        if self._holding:
            # A relay closing meanwhile has no fetch left to let go.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._release_all)

    def behind(self) -> None:
        """The log reader found nothing to read though the broker's last answer told of records
        past it (any thread): its next fetch, or the one held here, goes to the broker with time
        to find them, ``_BEHIND_WAIT_MS`` at least (module docstring)."""
        self._behind = True
        if self._holding:
            with contextlib.suppress(RuntimeError):  # a relay closing meanwhile
                self._loop.call_soon_threadsafe(self._release_behind)

    def _release_all(self) -> None:
        for pipe in list(self._holding):
            pipe.release()

    def _release_behind(self) -> None:
        if self._behind and self._holding:
            self._behind = False
            for pipe in list(self._holding):
                pipe.release(behind=True)

    @property
    def native_id(self) -> int:
        """The relay thread's id in the operating system (its CPU time is measured by it)."""
        return self._thread.native_id or 0

    def start(self) -> ReaderRelay:
        self._thread.start()
        self._ready.wait(10)
        return self

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # --- the relay's thread ------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        for upstream, tails, sock in self._pending_sockets:
            self._loop.run_until_complete(self._serve(upstream, sock, tails))
        self._pending_sockets = []
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            for server in self._servers:
                server.close()
            connecting = [pipe.connecting for pipe in self._pipes if pipe.connecting is not None]
            for pipe in list(self._pipes):
                pipe.close()
            with contextlib.suppress(Exception):
                # Cancelled connects end, and the transports' closing callbacks run.
                self._loop.run_until_complete(asyncio.gather(*connecting, asyncio.sleep(0), return_exceptions=True))
            self._loop.close()

    def _bind(self, upstream: tuple[str, int], tails: bool) -> socket.socket:
        sock = socket.create_server((self.host, 0))
        sock.setblocking(False)
        self._ports[upstream, tails] = sock.getsockname()[1]
        return sock

    async def _serve(self, upstream: tuple[str, int], sock: socket.socket, tails: bool) -> None:
        server = await self._loop.create_server(lambda: _ClientSide(_Pipe(self, upstream, tails)), sock=sock)
        self._servers.append(server)

    def _route(self, tails: bool, node_id: int, host: str, port: int) -> tuple[str, int]:
        """The loopback address advertised for a broker to a consumer of the ``tails`` kind (a
        listener is made when first seen)."""
        upstream = (host, port)
        if (upstream, tails) not in self._ports:
            sock = self._bind(upstream, tails)
            # The socket listens already: connections wait in its backlog until the server runs.
            self._loop.create_task(self._serve(upstream, sock, tails))
        return self.host, self._ports[upstream, tails]

    def _rewrite(self, key: int, version: int, payload: bytearray, tails: bool) -> bytes | bytearray:
        if key == ApiKey.API_VERSIONS:
            cap_api_versions(payload, version)
            return payload
        correlation_id, body = decode_response(key, version, memoryview(payload))
        route = partial(self._route, tails)
        if isinstance(body, MetadataResponse):
            route_brokers(body, route)
        elif isinstance(body, FindCoordinatorResponse):
            rewrite_find_coordinator(body, route, version)
        return encode_response(key, version, correlation_id, body)[4:]


# How the relay forwards. It sits on the read-back path of every acknowledged write (the log
# reader's Fetch answers), so bytes move in asyncio protocol callbacks, with no task, future or
# stream buffer between a read and its write: each chunk read from one side is written to the other
# within the same callback, in one write (an answer's length and correlation id together with its
# first bytes). Both sockets get TCP_NODELAY: asyncio sets it only on sockets made with proto
# IPPROTO_TCP, which the connections ``socket.create_server``'s listener accepts are not (proto 0),
# and Nagle then held each answer's rest behind its first bytes until librdkafka's delayed ACK,
# 40 ms per Fetch answer. Each side stops reading while the other side's transport asks to pause,
# so a slow client holds at most a transport's high-water mark and one read of its answers.


class _Pipe:
    """One client connection and its connection to the broker."""

    def __init__(self, relay: ReaderRelay, upstream: tuple[str, int], tails: bool = False) -> None:
        self.relay = relay
        self.upstream = upstream
        self.client: asyncio.Transport | None = None
        self.broker: asyncio.Transport | None = None
        # correlation id -> (api key, api version) of the requests whose answers are rewritten
        self.owed: dict[int, tuple[int, int]] = {}
        self.connecting: asyncio.Task[None] | None = None
        self.closed = False
        # The log reader's connection: its fetches may wait here (``send``).
        self.tails = tails
        self.held: bytes | None = None  # a fetch waiting here for a write to land, as it came
        self.held_wait_at = 0  # where its MaxWaitMs is
        self.held_timer: asyncio.TimerHandle | None = None
        self.kicks_seen = 0  # the relay's kicks when this pipe last sent a fetch on
        self.fetch_id: int | None = None  # the correlation id of the last fetch sent on
        self.fetch_size = -1  # its size: the same partitions make a request of the same size
        self.hold_next = False  # whether that fetch's answer was small: nothing more to read

    def send(self, frame: bytes, key: int, correlation_id: int) -> None:
        """A whole request of the log reader, sent on to the broker, or held if it is a fetch
        that could only wait there (module docstring)."""
        assert self.broker is not None
        if self.held is not None:
            self.release()  # requests reach the broker in the order they came
        if key == ApiKey.FETCH:
            relay = self.relay
            # Held only when it asks again for the partitions whose last answer had little in
            # it: a partition added (a shard to load) or paused changes the request's size.
            same = len(frame) == self.fetch_size
            self.fetch_size = len(frame)
            offset = max_wait_offset(frame) if self.hold_next and same else None
            if relay._behind:
                # The reader is behind: this fetch goes on at once, with time to find the records.
                relay._behind = False
                offset = None
                frame = _with_wait_at_least(frame, _BEHIND_WAIT_MS)
            if offset is not None and (wait := max_wait_ms(frame, offset)) > _BROKER_WAIT_MS:
                # It waits here, if at all: the broker answers it at once.
                self.fetch_id = correlation_id
                if self.kicks_seen == relay._kicks:  # nothing written since its last answer
                    self.held, self.held_wait_at = frame, offset
                    relay._holding.add(self)
                    self.held_timer = relay._loop.call_later(wait / 1000, self.release)
                    if self.kicks_seen != relay._kicks:  # a write landed while this was held
                        self.release()
                    return
                frame = with_max_wait(frame, offset, _BROKER_WAIT_MS)
            self.fetch_id = correlation_id
            self.kicks_seen = relay._kicks
        self.broker.write(frame)

    def release(self, behind: bool = False) -> None:
        """The held fetch goes to the broker now, at 1 ms, or with time to find the records if
        the reader is ``behind`` (module docstring)."""
        held, self.held = self.held, None
        if held is not None:
            if behind:
                held = _with_wait_at_least(held, _BEHIND_WAIT_MS)
            else:
                held = with_max_wait(held, self.held_wait_at, _BROKER_WAIT_MS)
        self.relay._holding.discard(self)
        if self.held_timer is not None:
            self.held_timer.cancel()
            self.held_timer = None
        if held is not None and not self.closed and self.broker is not None:
            self.kicks_seen = self.relay._kicks
            self.broker.write(held)

    def answered(self, correlation_id: int, size: int) -> None:
        if correlation_id == self.fetch_id:
            self.hold_next = size < _HOLD_AFTER_BYTES_BELOW

    def open(self, client: asyncio.Transport, requests: _ClientSide) -> None:
        self.client = client
        self.requests = requests
        self.relay._pipes.add(self)
        _no_delay(client)
        client.pause_reading()  # until the broker's end is connected
        self.connecting = self.relay._loop.create_task(self._connect())

    async def _connect(self) -> None:
        loop = self.relay._loop
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(lambda: _BrokerSide(self), *self.upstream), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            log.debug("reader relay: cannot reach %s:%s: %s", *self.upstream, exc)
            self.connecting = None  # this task, ending
            self.close()
            return
        if self.closed:
            transport.close()
            return
        self.broker = transport
        _no_delay(transport)
        assert self.client is not None
        self.client.resume_reading()
        # Requests that came before the pause took effect (none, normally).
        if self.requests.buffer:
            self.requests.data_received(b"")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.release()
        self.relay._pipes.discard(self)
        for transport in (self.client, self.broker):
            if transport is not None:
                transport.close()
        if self.connecting is not None:
            self.connecting.cancel()  # a no-op once connected

    def failed(self, exc: Exception) -> None:
        # Not expected from a broker or librdkafka: worth a line, the client reconnects anyway.
        log.warning("reader relay: closing a connection on an unreadable frame: %s", exc)
        self.close()


class _ClientSide(asyncio.Protocol):
    """Requests of one consumer: forwarded whole, their keys noted when the answer is rewritten."""

    def __init__(self, pipe: _Pipe) -> None:
        self.pipe = pipe
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.pipe.open(transport, self)

    def data_received(self, data: bytes) -> None:
        pipe, buffer = self.pipe, self.buffer
        if not buffer and pipe.broker is not None and not pipe.closed and len(data) >= 12:
            # The common case, one whole request in one piece: passed on as it is.
            (size,) = _LEN.unpack_from(data)
            if size + 4 == len(data):
                key, version, correlation_id = _PEEK.unpack_from(data, 4)
                if key in _REWRITTEN:
                    pipe.owed[correlation_id] = (key, version)
                if pipe.tails:
                    pipe.send(data, key, correlation_id)
                else:
                    pipe.broker.write(data)
                return
        buffer += data
        if pipe.closed or pipe.broker is None:  # not read while connecting (paused), and not after
            return
        whole = 0  # bytes at the head of the buffer that are whole requests
        try:
            while len(buffer) - whole >= 4:
                size = check_frame_size(buffer[whole : whole + 4], _MAX_REQUEST_BYTES)
                if len(buffer) - whole - 4 < size:
                    break
                key, version, correlation_id = peek_request(memoryview(buffer)[whole + 4 : whole + 4 + size])
                if key in _REWRITTEN:
                    pipe.owed[correlation_id] = (key, version)
                if pipe.tails:
                    # One by one: a fetch among them may be held.
                    pipe.send(bytes(buffer[whole : whole + 4 + size]), key, correlation_id)
                    del buffer[whole : whole + 4 + size]
                    continue
                whole += 4 + size
        except (FrameError, CodecError) as exc:
            pipe.failed(exc)
            return
        if whole:
            # Immutable bytes: a transport may hold on to what it cannot send at once.
            pipe.broker.write(bytes(buffer[:whole]))
            del buffer[:whole]

    def pause_writing(self) -> None:  # the client reads slowly: stop reading its answers
        if self.pipe.broker is not None:
            self.pipe.broker.pause_reading()

    def resume_writing(self) -> None:
        if self.pipe.broker is not None and not self.pipe.closed:
            self.pipe.broker.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipe.close()


class _BrokerSide(asyncio.Protocol):
    """Answers of the broker: passed on as they arrive, unless the answer is one to rewrite."""

    def __init__(self, pipe: _Pipe) -> None:
        self.pipe = pipe
        self.head = bytearray()  # the next answer's length and correlation id, as they arrive
        self.remaining = 0  # bytes of the current answer still to pass on
        self.rewriting: tuple[int, int] | None = None  # the current answer's (key, version), if rewritten
        self.payload = bytearray()  # a rewritten answer's bytes, until it is whole

    def data_received(self, data: bytes) -> None:
        pipe = self.pipe
        if pipe.closed:
            return
        if not self.remaining and not self.head and self.rewriting is None and len(data) >= 8:
            # The common case, a Fetch answer read whole in one piece: passed on as it is.
            size, correlation_id = _HEAD.unpack_from(data)
            if size + 4 == len(data) and correlation_id not in pipe.owed and pipe.client is not None:
                if pipe.tails:
                    pipe.answered(correlation_id, size)
                pipe.client.write(data)
                return
        view = memoryview(data)
        out: list[bytes | bytearray | memoryview] = []
        try:
            while view:
                if self.remaining == 0 and self.rewriting is None:
                    taken = min(8 - len(self.head), len(view))
                    self.head += view[:taken]
                    view = view[taken:]
                    if len(self.head) < 8:
                        break
                    size = check_frame_size(self.head[:4], _MAX_ANSWER_BYTES)
                    if size < 4:
                        raise FrameError(f"answer of {size} bytes is shorter than its correlation id")
                    (correlation_id,) = _LEN.unpack_from(self.head, 4)
                    if pipe.tails:
                        pipe.answered(correlation_id, size)
                    self.rewriting = pipe.owed.pop(correlation_id, None)
                    self.remaining = size - 4
                    if self.rewriting is None:
                        out.append(bytes(self.head))
                    else:
                        self.payload = bytearray(self.head[4:])
                    self.head = bytearray()
                taken = min(self.remaining, len(view))
                if self.rewriting is None:
                    out.append(view[:taken])
                else:
                    self.payload += view[:taken]
                view = view[taken:]
                self.remaining -= taken
                if self.remaining == 0 and self.rewriting is not None:
                    answer = pipe.relay._rewrite(*self.rewriting, self.payload, pipe.tails)
                    out.append(_LEN.pack(len(answer)) + answer)
                    self.rewriting, self.payload = None, bytearray()
        except (FrameError, CodecError, struct.error) as exc:
            pipe.failed(exc)
            return
        if out and pipe.client is not None:
            pipe.client.write(out[0] if len(out) == 1 else b"".join(out))

    def pause_writing(self) -> None:  # the broker reads slowly: stop reading requests
        if self.pipe.client is not None:
            self.pipe.client.pause_reading()

    def resume_writing(self) -> None:
        if self.pipe.client is not None and not self.pipe.closed:
            self.pipe.client.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipe.close()


def _with_wait_at_least(frame: bytes, wait_ms: int) -> bytes:
    """``frame``, a Fetch request, asking the broker to wait at least ``wait_ms``."""
    offset = max_wait_offset(frame)
    if offset is None or max_wait_ms(frame, offset) >= wait_ms:
        return frame
    return with_max_wait(frame, offset, wait_ms)


def _no_delay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _split_address(entry: str) -> tuple[str, int]:
    host, sep, port = entry.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bootstrap server {entry!r} is not host:port")
    return host.strip("[]") or "127.0.0.1", int(port)
