"""A group's committed offsets read over the wire (OffsetFetch), for every command that shows or
moves them: ``groups describe --offsets``, ``offsets show|delete|reset`` and ``migrate``.

Not through confluent-kafka's ``AdminClient.list_consumer_group_offsets``: librdkafka 2.16.0
crashes the whole process (SIGSEGV, librdkafka issue 5040) when that request is answered
NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE at the group level, which a sidecar answers while a
group's shard moves between its processes or fails to load, and a Kafka cluster while the group's
coordinator moves (a broker restarted). ``groupcoord.coordinator.runtime.group_offsets`` tells how
``serve`` avoids it for itself. Asking DescribeGroups first did not help: the shard could move in
between, and the CLI exited 139.

Here, as Kafka's admin client does, with the gateway's own codec (``groupcoord.cli.wire``, TLS
and SASL from the same properties as the other clients): FindCoordinator (GROUP) at a bootstrap
broker, then OffsetFetch at that coordinator, each at the highest version both sides know
(ApiVersions of each node): OffsetFetch v2 to v9 (all topics from v2, ``require_stable`` from v7,
the groups array from v8; v10 names topics by id only), FindCoordinator v1 to v6. An answer
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (of either request),
or a connection lost or refused, is tried again after a backoff, the coordinator looked up again,
until ``--timeout`` is spent; then the command fails in one line with the last reason. Any other
group-level error fails at once; partition-level errors are the caller's (``CommittedOffset.error``).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_exponential

from groupcoord.cli.common import Conn, describe_error, fail
from groupcoord.cli.wire import CLIENT_ID, CLIENT_SOFTWARE_VERSION, CLOSED, WireClient, closed_words, connect_failure
from groupcoord.cli.wire_security import AuthenticationError
from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.cluster_login import LOGIN_MECHANISMS

# The answers of a coordinator that is moving or loading: asked again, the coordinator looked up again.
COORDINATOR_MOVING = frozenset(
    {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
)
# (lowest, highest) version used. OffsetFetch: a null topic list (all topics) from v2; v10 names
# topics by id only. FindCoordinator: v0 is gone from Kafka 4; batched keys from v4.
OFFSET_FETCH_VERSIONS = (2, 9)
FIND_COORDINATOR_VERSIONS = (1, 6)
_REQUIRE_STABLE, _GROUPS_ARRAY, _BATCHED_KEYS = 7, 8, 4
# Backoff between tries (seconds): exponential from 50 ms, at most 1 s, never past the deadline.
BACKOFF_FIRST, BACKOFF_MAX = 0.05, 1.0
_WAIT = wait_exponential(multiplier=BACKOFF_FIRST, max=BACKOFF_MAX)
_LEAST_TRY = 0.05  # a try is not started with less time than this left


@dataclass(frozen=True)
class CommittedOffset:
    """One partition of a group's OffsetFetch answer, shaped as confluent-kafka's TopicPartition
    (``offset``, ``metadata``, ``leader_epoch``, ``error``) for the commands that used those."""

    topic: str
    partition: int
    offset: int  # -1: no committed offset
    metadata: str | None = None
    leader_epoch: int | None = None
    error_code: int = 0

    @property
    def error(self) -> KafkaError | None:
        return KafkaError(self.error_code) if self.error_code else None


def _c_string(metadata: str | None) -> str | None:
    """Commit metadata as librdkafka hands it over, up to its first NUL: confluent-kafka commits
    its metadata with the C string's terminator ("meta\\0" on the wire), and reads it back without."""
    return None if metadata is None else metadata.split("\0", 1)[0]


class _Again(Exception):
    """A failure that may pass (a coordinator moving, a connection lost): tried again until the
    deadline. Its message is the reason in words."""


@dataclass
class _Node:
    client: WireClient
    offered: dict[int, tuple[int, int]] = field(default_factory=dict)  # api key -> (min, max), from ApiVersions
    answered: bool = False  # ApiVersions was: the node speaks Kafka to us

    def version(self, key: ApiKey, lowest: int, highest: int) -> int | None:
        low, high = self.offered.get(key, (1, 0))
        best = min(high, highest)
        return best if best >= max(low, lowest) else None


class OffsetReader:
    """Committed offsets of groups from their coordinators, within ``conn.timeout`` per group
    (``fetch``); the connections are kept until ``close``."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.props = {k: v for k, v in conn.config().items() if isinstance(v, str)}
        self.bootstrap = [a.strip() for a in conn.bootstrap.split(",") if a.strip()]
        self.nodes: dict[str, _Node] = {}
        self._deadline = 0.0
        self._librdkafka_only = librdkafka_only(self.props) is not None

    def fetch(self, group: str, require_stable: bool = False) -> list[CommittedOffset]:
        """Every partition the group has an answer for (an offset of -1 where none is committed).
        ``require_stable``: partitions with transactional offsets pending answer
        UNSTABLE_OFFSET_COMMIT (a node without OffsetFetch v7 cannot be asked: none do).
        Through librdkafka where only it can use the settings (``librdkafka_only``)."""
        if self._librdkafka_only:
            return _through_librdkafka(self.conn, group, require_stable)
        timeout = self.conn.timeout
        self._deadline = time.monotonic() + timeout
        retrying = Retrying(
            retry=retry_if_exception_type(_Again),
            wait=self._backoff,
            stop=lambda _: self._left() < _LEAST_TRY,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._try(group, require_stable)
        except _Again as exc:
            fail(f"cannot read the offsets of group {group!r}: {exc} (still so after {timeout:g}s)")
        raise AssertionError("unreachable: tenacity re-raises the last error")

    def close(self) -> None:
        for node in self.nodes.values():
            node.client.close()
        self.nodes.clear()

    def __enter__(self) -> OffsetReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- one try ----------------------------------------------------------------------------------

    def _left(self) -> float:
        return self._deadline - time.monotonic()

    def _backoff(self, state: RetryCallState) -> float:
        # Never so long that the next try would start with less than ``_LEAST_TRY`` left.
        return max(0.0, min(_WAIT(state), self._left() - _LEAST_TRY))

    def _try(self, group: str, require_stable: bool) -> list[CommittedOffset]:
        address = self._coordinator(group)
        node = self._node(address)
        version = node.version(ApiKey.OFFSET_FETCH, *OFFSET_FETCH_VERSIONS)
        if version is None:
            low, high = OFFSET_FETCH_VERSIONS
            fail(f"cannot read the offsets of group {group!r}: {address} does not offer OffsetFetch v{low} to v{high}")
        stable = require_stable and version >= _REQUIRE_STABLE
        if version >= _GROUPS_ARRAY:
            request = OffsetFetchRequest(
                groups=[OffsetFetchRequestGroup(group_id=group, topics=None)], require_stable=stable
            )
        else:
            request = OffsetFetchRequest(group_id=group, topics=None, require_stable=stable)
        response = self._call(address, node, ApiKey.OFFSET_FETCH, version, request)
        assert isinstance(response, OffsetFetchResponse)
        if version >= _GROUPS_ARRAY:
            answer = next((g for g in response.groups if g.group_id == group), None)
            if answer is None:
                fail(f"cannot read the offsets of group {group!r}: {address} left the group out of its answer")
            self._check(group, answer.error_code)
            topics: Sequence[OffsetFetchResponseTopic | OffsetFetchResponseTopics] = answer.topics
        else:
            self._check(group, response.error_code)
            topics = response.topics
        return [
            CommittedOffset(
                t.name,
                p.partition_index,
                p.committed_offset,
                _c_string(p.metadata),
                p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None,
                p.error_code,
            )
            for t in topics
            for p in t.partitions
        ]

    def _check(self, group: str, code: int) -> None:
        """A group-level error: tried again while the coordinator moves, else the command fails."""
        if code in COORDINATOR_MOVING:
            raise _Again(describe_error(KafkaError(code)))
        if code:
            fail(f"cannot read the offsets of group {group!r}: {describe_error(KafkaError(code))}")

    def _coordinator(self, group: str) -> str:
        """The group's coordinator, ``host:port``, as the first bootstrap broker that answers says."""
        reason = "no bootstrap address"
        for address in self.bootstrap:
            try:
                node = self._node(address)
            except _Again as exc:
                reason = str(exc)
                continue
            version = node.version(ApiKey.FIND_COORDINATOR, *FIND_COORDINATOR_VERSIONS)
            if version is None:
                low, high = FIND_COORDINATOR_VERSIONS
                fail(
                    f"cannot find the coordinator of group {group!r}: {address} does not offer FindCoordinator v{low} to v{high}"
                )
            if version >= _BATCHED_KEYS:
                request = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
            else:
                request = FindCoordinatorRequest(key=group, key_type=0)
            try:
                response = self._call(address, node, ApiKey.FIND_COORDINATOR, version, request)
            except _Again as exc:  # the next bootstrap address may answer
                reason = str(exc)
                continue
            assert isinstance(response, FindCoordinatorResponse)
            if version >= _BATCHED_KEYS:
                found = next((c for c in response.coordinators if c.key == group), None)
                if found is None:
                    fail(f"cannot find the coordinator of group {group!r}: {address} left it out of its answer")
                code, host, port = found.error_code, found.host, found.port
            else:
                code, host, port = response.error_code, response.host, response.port
            if code in COORDINATOR_MOVING:
                raise _Again(describe_error(KafkaError(code)))
            if code:
                fail(f"cannot find the coordinator of group {group!r}: {describe_error(KafkaError(code))}")
            return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise _Again(reason)

    def _node(self, address: str) -> _Node:
        """A connection to ``address`` and the versions it offers (kept for the next tries)."""
        node = self.nodes.get(address)
        if node is not None:
            return node
        try:
            client = WireClient(address, max(self._left(), _LEAST_TRY), self.props)
        except (AuthenticationError, ssl.SSLError, ValueError) as exc:  # settings that will not change
            fail(connect_failure(address, exc, self.conn.timeout))
        except OSError as exc:  # refused, closed, timed out, unresolvable: a broker restarting, perhaps
            raise _Again(connect_failure(address, exc, self.conn.timeout)) from exc
        node = _Node(client)
        self.nodes[address] = node
        request = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version=CLIENT_SOFTWARE_VERSION)
        versions = self._call(address, node, ApiKey.API_VERSIONS, 3, request)
        assert isinstance(versions, ApiVersionsResponse)
        if versions.error_code:
            self._drop(address)
            fail(f"cannot connect to {address}: ApiVersions answered {describe_error(KafkaError(versions.error_code))}")
        node.offered = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        node.answered = True
        return node

    def _call(self, address: str, node: _Node, key: ApiKey, version: int, request: Message) -> Message:
        node.client.sock.settimeout(max(self._left(), _LEAST_TRY))
        try:
            return node.client.call(key, version, request)
        except CLOSED as exc:  # a broker stopping; a sidecar that cannot reach its cluster (ApiVersions)
            self._drop(address)
            raise _Again(closed_words(address, answered=node.answered)) from exc
        except OSError as exc:  # a timeout: the deadline has passed
            self._drop(address)
            raise _Again(f"no answer from {address}") from exc
        except ValueError as exc:
            self._drop(address)
            fail(f"unreadable answer from {address}: {exc}")

    def _drop(self, address: str) -> None:
        node = self.nodes.pop(address, None)
        if node is not None:
            node.client.close()


# Settings of ``--command-config`` that the wire client cannot follow (``wire_security``), but
# librdkafka can: GSSAPI logins, PKCS#12 keystores, PEM given inline.
_LIBRDKAFKA_ONLY_TLS = ("ssl.keystore.location", "ssl.ca.pem", "ssl.certificate.pem", "ssl.key.pem")


def librdkafka_only(props: dict[str, str]) -> str | None:
    """Why the wire client cannot use these settings (None: it can)."""
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL"):
        mechanism = props.get("sasl.mechanism", props.get("sasl.mechanisms", "GSSAPI")).upper()
        if mechanism not in LOGIN_MECHANISMS:
            return f"sasl.mechanism={mechanism}"
    if protocol.endswith("SSL"):
        named = [key for key in _LIBRDKAFKA_ONLY_TLS if props.get(key)]
        if named:
            return named[0]
    return None


def _c_metadata(tp: TopicPartition) -> str | None:
    """librdkafka's commit metadata: it reads it as a C string, so metadata another client
    committed without a trailing NUL (Java's) comes back with whatever memory follows, or fails to
    decode; left out then (the wire reads have it exactly)."""
    try:
        return tp.metadata  # type: ignore[no-any-return]
    except UnicodeDecodeError:
        return None


def _through_librdkafka(conn: Conn, group: str, require_stable: bool) -> list[CommittedOffset]:
    """The offsets through librdkafka's admin listing, for settings only librdkafka follows. It
    crashes the process on a coordinator that moves (librdkafka #5040), so the group is described
    first: a coordinator that errs there fails the command in words, which leaves only a move
    between the two requests to the crash (as every version before the wire reads)."""
    admin = conn.admin()
    conn.wait(
        admin.describe_consumer_groups([group], request_timeout=conn.timeout)[group], f"cannot describe group {group!r}"
    )
    future = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], require_stable=require_stable, request_timeout=conn.timeout
    )[group]
    result = conn.wait(future, f"cannot read the offsets of group {group!r}")
    return [
        CommittedOffset(
            tp.topic,
            tp.partition,
            tp.offset,
            _c_metadata(tp),
            tp.leader_epoch,
            tp.error.code() if tp.error is not None else 0,
        )
        for tp in result.topic_partitions
    ]


def fetch_committed(conn: Conn, group: str, require_stable: bool = False) -> list[CommittedOffset]:
    """``OffsetReader.fetch`` on connections of its own."""
    with OffsetReader(conn) as reader:
        return reader.fetch(group, require_stable)
