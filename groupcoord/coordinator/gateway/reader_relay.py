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
the cluster directly, so the commit path gains no hop. It speaks plaintext on both sides: with
TLS towards the cluster, or Kerberos (which names the broker's host in its ticket), the consumers
connect directly as before (see ``relayable``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Awaitable, Iterator
from typing import Any

from groupcoord.coordinator.gateway.apis import APIS, ApiKey
from groupcoord.coordinator.gateway.codec import CodecError, read_tag_count, read_uvarint
from groupcoord.coordinator.gateway.framing import FrameError, check_frame_size, peek_request
from groupcoord.coordinator.gateway.protocol import decode_response, encode_response
from groupcoord.coordinator.gateway.rewrite import rewrite_find_coordinator, route_brokers
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorResponse
from groupcoord.coordinator.messages.metadata import MetadataResponse

log = logging.getLogger(__name__)

# The highest Fetch version the sidecar's consumers may use (see the module docstring).
FETCH_MAX_VERSION = 12

_LEN = struct.Struct(">i")
_I16 = struct.Struct(">h")
_ENTRY = struct.Struct(">hhh")
# Requests of the sidecar's consumers are small; the limit only rejects a corrupt length prefix.
_MAX_REQUEST_BYTES = 100 * 1024 * 1024
_MAX_ANSWER_BYTES = 2**31 - 1
# Answers not rewritten are passed on in pieces of at most this size as they arrive.
_PIECE = 256 * 1024
_CONNECT_TIMEOUT_S = 10.0
# Answers read and rewritten here; the rest are streamed through.
_REWRITTEN = frozenset({ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.FIND_COORDINATOR})


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
        # upstream (host, port) -> local port; written on the relay's thread (and in __init__).
        self._ports: dict[tuple[str, int], int] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader-relay", daemon=True)
        # Bound before the thread runs, so the bootstrap addresses are known at once.
        self._pending_sockets = [(upstream, self._bind(upstream)) for upstream in self._upstreams]

    @property
    def bootstrap(self) -> str:
        """The bootstrap servers the sidecar's consumers are given."""
        return ",".join(f"{self.host}:{self._ports[upstream]}" for upstream in self._upstreams)

    def reader_config(self, client_config: dict[str, Any]) -> dict[str, Any]:
        return {**client_config, "bootstrap.servers": self.bootstrap}

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
        for upstream, sock in self._pending_sockets:
            self._loop.run_until_complete(self._serve(upstream, sock))
        self._pending_sockets = []
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            for server in self._servers:
                server.close()
            for task in self._connections:
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.gather(*self._connections, return_exceptions=True))
            self._loop.close()

    def _bind(self, upstream: tuple[str, int]) -> socket.socket:
        sock = socket.create_server((self.host, 0))
        sock.setblocking(False)
        self._ports[upstream] = sock.getsockname()[1]
        return sock

    async def _serve(self, upstream: tuple[str, int], sock: socket.socket) -> None:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
            task = asyncio.ensure_future(self._relay(reader, writer, upstream))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
            return task

        self._servers.append(await asyncio.start_server(accepted, sock=sock, limit=2**20))

    def _route(self, node_id: int, host: str, port: int) -> tuple[str, int]:
        """The loopback address advertised for a broker (a listener is made when first seen)."""
        upstream = (host, port)
        if upstream not in self._ports:
            sock = self._bind(upstream)
            # The socket listens already: connections wait in its backlog until the server runs.
            self._loop.create_task(self._serve(upstream, sock))
        return self.host, self._ports[upstream]

    async def _relay(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter, upstream: tuple[str, int]
    ) -> None:
        _no_delay(client_writer)
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*upstream, limit=2**20), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            log.debug("reader relay: cannot reach %s:%s: %s", *upstream, exc)
            client_writer.close()
            return
        _no_delay(up_writer)
        # correlation id -> (api key, api version) of the requests whose answers are rewritten
        owed: dict[int, tuple[int, int]] = {}
        requests = asyncio.ensure_future(self._requests(client_reader, up_writer, owed))
        answers = asyncio.ensure_future(self._answers(up_reader, client_writer, owed))
        try:
            await asyncio.wait([requests, answers], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (requests, answers):
                task.cancel()
            for writer in (client_writer, up_writer):
                writer.close()
            await asyncio.gather(requests, answers, return_exceptions=True)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, owed: dict[int, tuple[int, int]]
    ) -> None:
        with _ends_quietly():
            while True:
                prefix = await reader.readexactly(4)
                payload = await reader.readexactly(check_frame_size(prefix, _MAX_REQUEST_BYTES))
                key, version, correlation_id = peek_request(payload)
                if key in _REWRITTEN:
                    owed[correlation_id] = (key, version)
                writer.write(prefix + payload)
                await writer.drain()

    async def _answers(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, owed: dict[int, tuple[int, int]]
    ) -> None:
        with _ends_quietly():
            while True:
                head = await reader.readexactly(8)
                size = check_frame_size(head[:4], _MAX_ANSWER_BYTES)
                (correlation_id,) = _LEN.unpack_from(head, 4)
                request = owed.pop(correlation_id, None)
                if request is None:
                    await _stream(reader, writer, head, size - 4)
                    continue
                payload = bytearray(head[4:]) + await reader.readexactly(size - 4)
                answer = self._rewrite(request[0], request[1], payload)
                writer.write(_LEN.pack(len(answer)) + answer)
                await writer.drain()

    def _rewrite(self, key: int, version: int, payload: bytearray) -> bytes | bytearray:
        if key == ApiKey.API_VERSIONS:
            cap_api_versions(payload, version)
            return payload
        correlation_id, body = decode_response(key, version, memoryview(payload))
        if isinstance(body, MetadataResponse):
            route_brokers(body, self._route)
        elif isinstance(body, FindCoordinatorResponse):
            rewrite_find_coordinator(body, self._route, version)
        return encode_response(key, version, correlation_id, body)[4:]


async def _stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes, remaining: int) -> None:
    """Pass one answer on as it arrives, a piece at a time; its first bytes go out with the first
    piece (one segment, not a small one the next must wait behind)."""
    pending = head
    while remaining > 0:
        piece = await reader.read(min(remaining, _PIECE))
        if not piece:
            raise asyncio.IncompleteReadError(b"", remaining)
        remaining -= len(piece)
        writer.write(pending + piece if pending else piece)
        pending = b""
        await writer.drain()
    if pending:
        writer.write(pending)


def _no_delay(writer: asyncio.StreamWriter) -> None:
    """Every frame is sent as soon as it is written. asyncio sets TCP_NODELAY only on sockets made
    with proto IPPROTO_TCP, which ``socket.create_server``'s listener, and so every connection it
    accepts, is not (proto 0): Nagle then held an answer's rest behind its first bytes until the
    client's delayed ACK, 40 ms on Linux, on every Fetch answer (the read-back of every write)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@contextlib.contextmanager
def _ends_quietly() -> Iterator[None]:
    """A connection ends when either side closes it or sends what cannot be framed; the other
    side is then closed too, and the client reconnects as it would to a broker that went away."""
    try:
        yield
    except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
        log.debug("reader relay connection ended: %r", exc)
    except (FrameError, CodecError) as exc:
        # Not expected from a broker or librdkafka: worth a line, the client reconnects anyway.
        log.warning("reader relay: closing a connection on an unreadable frame: %s", exc)


def _split_address(entry: str) -> tuple[str, int]:
    host, sep, port = entry.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bootstrap server {entry!r} is not host:port")
    return host.strip("[]") or "127.0.0.1", int(port)
