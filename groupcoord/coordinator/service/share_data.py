"""The share data path: ShareFetch (78) and ShareAcknowledge (79), answered by the sidecar.

Kafka's SharePartitionManager, over this project's runtime. For one request:

1. The share session (``share/sessions.py``, per process) is opened, advanced or closed; its
   errors (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for
   acknowledgements in a new session) are answered before anything is written, and first, as
   Kafka's (a wrong member id has no session).
2. Unless it closes its session, the member must be a member of the share group
   (UNKNOWN_MEMBER_ID otherwise), read from the committed state of the group's shard.
3. For each share-partition of the session: made live (created at ``share.auto.offset.reset``,
   looked up with ListOffsets, or loaded from its records), then its records are fetched from the
   partition's leader (``share_fetcher.py``) from ``next_fetch_offset``, or taken from the last
   read of that partition when it holds that offset (``share_read_cache.py``: the group's
   consumers read one partition one after another, each a little further on). An acquisition
   that reaches the last batch of that read begins the next one (``_read_ahead``).
4. The request's acknowledgements are one write to the group's shard (one record per
   share-partition), applied at once to the live state (the room they free in the in-flight
   window goes to whichever fetch asks first: a waiting one is woken) and read back before the
   fetch acquires anything, so its member holds no record during the write. The acquisition
   writes nothing (as in Kafka) and is answered at once, even while other members' writes are
   still to be read back (``Shard.write_now``, transient: a reload voids every acquisition). A
   ShareFetch thus costs one round trip through the coordinator log when it acknowledges, none
   when it only acquires. The answer carries the fetched batches that hold acquired records, and
   the AcquiredRecords ranges (clients deliver only those).
5. Nothing acquired: the fetch waits, until ``MaxWaitMs`` has passed, for a share-partition to
   have records to acquire again (``share_waiters.py``: woken by the operation that released
   records, expired a lock, or acknowledged the window's oldest ones; no polling). New records
   in the log are waited for by the broker's own fetch, which a release interrupts.

Every write is answered only after the shard read its records back from the log. The state lives
in the shard of the GROUP (share-partitions keyed by group, topic, partition), wherever the
request arrived.

A share session belongs to the client connection that opened it (Kafka 4.1+). When that
connection closes (``connection_closed``, a gateway disconnect listener) its sessions are dropped
and the records acquired under them released at once, delivery counts as they are, rather than
left locked until the acquisition lock runs out. For requests relayed to the owning process the
connection is the client's at the relaying process: that process remembers which owners hold
sessions of its connections and tells them when one closes (a ShareAcknowledge relayed with
``RelayedFor.closed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.codec import CodecError
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import ConnectionContext
from groupcoord.coordinator.gateway.relay import RelayedFor, RelayLink, is_relayed, relay
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState
from groupcoord.coordinator.groups import group_config
from groupcoord.coordinator.messages import share_acknowledge as wire_ack
from groupcoord.coordinator.messages import share_fetch as wire_sf
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.observability.metrics import COUNTS
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.shard import Shard, ShardNotAvailable
from groupcoord.coordinator.service.metadata_cache import TopicNames
from groupcoord.coordinator.service.service import GroupCoordinatorService
from groupcoord.coordinator.service.share_fetcher import (
    MIN_FETCH_WAIT_MS,
    OFFSET_OUT_OF_RANGE,
    READ_ERRORS,
    Batch,
    Leader,
    PartitionFetch,
    ShareRecordFetcher,
)
from groupcoord.coordinator.service.share_read_cache import CacheKey, ShareReadCache, limited
from groupcoord.coordinator.service.share_waiters import ShareWaiters
from groupcoord.coordinator.share import shard_ops
from groupcoord.coordinator.share.auto_offset_reset import reset_timestamp
from groupcoord.coordinator.share.partition import acknowledgement_error
from groupcoord.coordinator.share.partition_types import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetRange,
    SharePartitionConfig,
    initial_start_offset,
)
from groupcoord.coordinator.share.sessions import ShareSession, ShareSessionCache
from groupcoord.coordinator.share.state import SharePartitionKey

log = logging.getLogger(__name__)

T = TypeVar("T")
_NO_PARTITION = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
R = TypeVar("R", bound=Message)
# Where another process owns a group's shard: that process's coordinator (host, port); None when
# this process owns it, or nobody is known to (the request is then answered here).
OwnerOf = Callable[[str], tuple[str, int] | None]

# When a ShareFetch v1 gives no MaxRecords (0), Kafka's default max.poll.records.
DEFAULT_MAX_RECORDS = 500
# ShareFetch v2's ShareAcquireMode (KIP-1206): batch-optimized (0, v1's only mode) and record-limit
# (1). Batch-optimized, as in Kafka, acquires a fetched batch it began to its end, past MaxRecords
# and the in-flight window: the answer carries whole batches, and a client given 500 records of a
# 3,000-record batch reads all 3,000 to deliver its 500 (librdkafka's share consumer parses every
# record of the answer, then drops those outside AcquiredRecords). Record-limit never exceeds
# MaxRecords.
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
ACQUIRE_MODES = frozenset({BATCH_OPTIMIZED, RECORD_LIMIT})
# The most a fetch from one partition's leader returns; the whole answer to one ShareFetch is
# bounded by the request's MaxBytes and this.
PARTITION_MAX_BYTES = 1 << 20
MAX_FETCH_BYTES = 8 << 20
# Longest a ShareFetch is held when nothing can be acquired (the client's MaxWaitMs, bounded).
MAX_WAIT_MS = 30_000
# How long a request for a group whose shard is elsewhere waits to learn the owner.
OWNER_LOOKUP_S = 2.0
# Longest wait before trying again when a fetch read records but could acquire none of them
# (another member took them first); a wake-up comes sooner when one is due.
RETRY_S = 0.05
# Sessions one client connection may hold at other processes that this one remembers (to tell
# their owners when it closes); more than any real client opens.
MAX_RELAYED_SESSIONS_PER_CONNECTION = 1000


@dataclass(frozen=True, slots=True)
class _Part:
    """One share-partition of a request: the wire topic id, the name, the partition index, and
    the error it gets before anything is done (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION for
    an index the topic does not have: never part of a session, so sessions stay bounded)."""

    topic_id: uuid.UUID
    topic: str
    partition: int
    error: int = ErrorCode.NONE


def partition_config(handlers: GroupCoordinatorShard, state: GroupCoordinatorState, group: str) -> SharePartitionConfig:
    """The group's share-partition limits: its ``share.*`` configs over the broker defaults."""
    return handlers.share_partition_config(state, group)


def _ack_batches(
    batches: Sequence[
        wire_sf.ShareFetchRequestAcknowledgementBatch | wire_ack.ShareAcknowledgeRequestAcknowledgementBatch
    ],
) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]


def renew_fetch_error(request: wire_sf.ShareFetchRequest) -> ErrorCode:
    """The top-level error of a ShareFetch v2 refused before anything is done (KafkaApis): an
    unknown ShareAcquireMode, or a renew-only fetch (IsRenewAck) asking for records, whose
    MaxWaitMs, MinBytes, MaxBytes and MaxRecords must all be 0."""
    if request.share_acquire_mode not in ACQUIRE_MODES:
        return ErrorCode.INVALID_REQUEST
    limits = (request.max_wait_ms, request.min_bytes, request.max_bytes, request.max_records)
    if request.is_renew_ack and any(limits):
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def _type_counts(batches: Sequence[AcknowledgementBatch]) -> list[tuple[int, int]]:
    """(type, records) of applied acknowledgements: one type for a whole batch, or one per offset."""
    out: list[tuple[int, int]] = []
    for b in batches:
        if len(b.types) == 1:
            out.append((b.types[0], b.last_offset - b.first_offset + 1))
        else:
            out += [(t, 1) for t in b.types]
    return out


def _overlapping(batches: list[Batch], acquired: tuple[AcquiredRecords, ...]) -> bytes:
    """The fetched batches holding an acquired record, as they came (clients deliver from them
    only the acquired offsets)."""
    out = bytearray()
    for b in batches:
        if any(a.first_offset <= b.last and b.first <= a.last_offset for a in acquired):
            out += b.data
    return bytes(out)


def log_read_wait_ms(at_ends: list[bool], all_at_end: bool, wait_ms: int) -> int:
    """The wait of one leader's Fetch of share-partitions read at ``at_ends`` (whether each is
    read at its end), ``wait_ms`` being what is left of the ShareFetch's own wait.

    It waits for new records only when ``all_at_end`` (every partition of the ShareFetch is read
    at its end, none answered from its last read). Where a partition is not at its end, records
    are there: the broker answers once it has found them, and the wait is its time to find them
    (Tansu's memory store lists a partition's batches within it, so a 10 ms fetch of a topic of
    ~20,000 batches came back empty: docs/benchmarks.md, "A read-back starved by a short broker
    wait"). Otherwise (at its end, while other partitions were answered) it does not wait.
    """
    if all_at_end or not all(at_ends):
        return max(MIN_FETCH_WAIT_MS, wait_ms)
    return MIN_FETCH_WAIT_MS


class ShareDataPath:
    def __init__(self, service: GroupCoordinatorService, topics: TopicNames, fetcher: ShareRecordFetcher) -> None:
        self.service = service
        self.topics = topics
        self.fetcher = fetcher
        self.sessions = ShareSessionCache()
        self.waiters = ShareWaiters()
        self.read_cache = ShareReadCache()
        # Set by ``groupcoord serve`` with several processes: requests for a group whose shard
        # another process owns are relayed there (its sessions and share-partitions live there),
        # over ``relay_link`` (TLS and the sidecar's own login when the listeners need them).
        self.owner_of: OwnerOf | None = None
        self.relay_timeout_s = 10.0
        self.relay_link: RelayLink | None = None
        # Per client connection of this process: the (owner, group, member) of the sessions its
        # relayed ShareFetches hold at other processes, and the caller they were relayed for.
        self._relayed_sessions: dict[str, dict[tuple[tuple[str, int], str, str], RelayedFor]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        # Reads of the cluster under way, per partition (``CacheKey``): the fetch offset each began
        # at and its future; other fetches from at or above that offset wait for it (``_follow``).
        self._reading: dict[CacheKey, tuple[int, asyncio.Future[Any]]] = {}
        # Reads begun ahead of the fetch that will need them (``_read_ahead``), held until done.
        self._reading_ahead: set[asyncio.Future[Any]] = set()

    # --- helpers -------------------------------------------------------------------------------

    async def _parts(self, topics: Sequence[tuple[uuid.UUID, Sequence[int]]]) -> list[_Part]:
        out = []
        for topic_id, partitions in topics:
            info = await self.topics.lookup("", topic_id)
            if info is None:
                out += [_Part(topic_id, "", p, ErrorCode.UNKNOWN_TOPIC_ID) for p in partitions]
                continue
            out += [
                _Part(topic_id, info.name, p, ErrorCode.NONE if 0 <= p < info.partitions else _NO_PARTITION)
                for p in partitions
            ]
        return out

    def _member_error(self, shard: Shard[GroupCoordinatorState], group: str, member: str) -> ErrorCode:
        def check(state: GroupCoordinatorState) -> ErrorCode:
            g = state.share.group(group)
            if g is None or member not in g.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            return ErrorCode.NONE

        return shard.read(check)

    def _shard(self, group: str) -> Shard[GroupCoordinatorState]:
        return self.service.shard_for(group)

    def _lock_ms(self, shard: Shard[GroupCoordinatorState], group: str) -> int:
        """The group's acquisition lock duration (AcquisitionLockTimeoutMs of the answers)."""
        handlers = self.service.handlers
        return shard.read(lambda s: partition_config(handlers, s, group).record_lock_duration_ms)

    # --- acknowledgements ----------------------------------------------------------------------

    def _checked_acks(
        self, acks: list[tuple[_Part, list[AcknowledgementBatch]]], renew: bool = False
    ) -> tuple[dict[tuple[uuid.UUID, int], int], list[tuple[_Part, list[AcknowledgementBatch]]]]:
        """The acknowledgements answered before anything is written, with their error per
        (topic id, partition), and the rest. In Kafka 4.2's order (KafkaApis: the topic id, then
        ``validateAcknowledgementBatches``, then the partition, then an empty list): an unknown
        topic id is UNKNOWN_TOPIC_ID, malformed acknowledgements INVALID_REQUEST (on a partition the
        topic does not have too), a partition the topic does not have UNKNOWN_TOPIC_OR_PARTITION,
        and no acknowledgement at all NONE."""
        COUNTS.share_acknowledgements += 1
        errors: dict[tuple[uuid.UUID, int], int] = {}
        valid: list[tuple[_Part, list[AcknowledgementBatch]]] = []
        for part, batches in acks:
            key = (part.topic_id, part.partition)
            if part.error == ErrorCode.UNKNOWN_TOPIC_ID:
                errors[key] = part.error
            elif malformed := acknowledgement_error(batches, renew):
                errors[key] = malformed
            elif part.error:
                errors[key] = part.error
            elif not batches:
                errors[key] = ErrorCode.NONE
            else:
                valid.append((part, batches))
        return errors, valid

    def _ack_items(
        self, state: GroupCoordinatorState, group: str, valid: list[tuple[_Part, list[AcknowledgementBatch]]]
    ) -> list[tuple[SharePartitionKey, SharePartitionConfig, list[AcknowledgementBatch]]]:
        config = partition_config(self.service.handlers, state, group)
        return [(SharePartitionKey(group, p.topic, p.partition), config, b) for p, b in valid]

    @staticmethod
    def _ack_outcome(
        group: str,
        valid: list[tuple[_Part, list[AcknowledgementBatch]]],
        done: dict[SharePartitionKey, ErrorCode],
        errors: dict[tuple[uuid.UUID, int], int],
    ) -> None:
        """Each written acknowledgement's error into ``errors``, and the applied ones counted."""
        for part, batches in valid:
            error = errors[(part.topic_id, part.partition)] = done[SharePartitionKey(group, part.topic, part.partition)]
            if error == ErrorCode.NONE:
                COUNTS.share_acknowledged(_type_counts(batches))

    async def _acknowledge(
        self,
        shard: Shard[GroupCoordinatorState],
        group: str,
        member: str,
        acks: list[tuple[_Part, list[AcknowledgementBatch]]],
        renew: bool = False,
    ) -> dict[tuple[uuid.UUID, int], int]:
        """Per (topic id, partition): the acknowledgement's error code. Malformed types and
        unknown topics are refused here; the rest is one write. A RENEW changes no record's state
        (only its lock, which is never written): alone it writes nothing, as in Kafka."""
        errors, valid = self._checked_acks(acks, renew)
        if not valid:
            return errors

        def op(state: GroupCoordinatorState, now: int) -> Result[dict[SharePartitionKey, ErrorCode]]:
            return shard_ops.acknowledge(state.share_data, member, self._ack_items(state, group, valid), now)

        self._ack_outcome(group, valid, await shard.write(op), errors)
        return errors

    async def _release(
        self, shard: Shard[GroupCoordinatorState], group: str, member: str, keys: list[SharePartitionKey]
    ) -> None:
        handlers = self.service.handlers
        await shard.write(
            lambda state, now: shard_ops.release_member(
                state.share_data, group, member, keys, partition_config(handlers, state, group)
            )
        )

    async def _relayed(
        self, context: ConnectionContext | None, group: str, request: Message, answer_type: type[R], wait_ms: int = 0
    ) -> R | None:
        """The owner's answer when another process owns the group's shard (a relayed request is
        never relayed again, so processes that disagree about an owner cannot loop); None: here."""
        if context is None or is_relayed(context.header.client_id) or self.owner_of is None or not group:
            return None
        try:
            if self.service.partition_for(group) in self.service.runtime.shards:
                return None  # ours (active or loading: answered here)
        except ShardNotAvailable:
            return None
        # Placement learns a new owner from its directory a moment after the move.
        deadline = time.monotonic() + OWNER_LOOKUP_S
        while (where := self.owner_of(group)) is None and time.monotonic() < deadline:
            await asyncio.sleep(RETRY_S)
        if where is None:
            return None
        caller = RelayedFor(context.connection_id, context.principal, context.client_host)
        answer = await self._relay(where, context.header, request, self.relay_timeout_s + wait_ms / 1000, caller)
        if isinstance(answer, wire_sf.ShareFetchResponse) and not answer.error_code and context.connection_id:
            assert isinstance(request, wire_sf.ShareFetchRequest)
            held = self._relayed_sessions.setdefault(context.connection_id, {})
            if len(held) < MAX_RELAYED_SESSIONS_PER_CONNECTION:
                held[(where, group, request.member_id or "")] = caller
        return answer if isinstance(answer, answer_type) else None

    async def _relay(
        self, where: tuple[str, int], header: RequestHeader, request: Message, timeout_s: float, caller: RelayedFor
    ) -> Message | None:
        try:
            return await relay(where[0], where[1], header, request, timeout_s, self.relay_link, caller)
        except (OSError, TimeoutError, ValueError, CodecError) as exc:
            log.warning("relaying %s to %s:%s failed: %r", type(request).__name__, where[0], where[1], exc)
            return None

    # --- closed connections --------------------------------------------------------------------

    def connection_closed(self, connection: str) -> None:
        """A client connection closed (a gateway disconnect listener): the sessions it opened here
        are dropped and their records released; owners of sessions it opened through relays are
        told. Runs in the background: the gateway does not wait for it."""
        sessions = self.sessions.drop_connection(connection)
        relayed = self._relayed_sessions.pop(connection, {})
        if not sessions and not relayed:
            return
        task = asyncio.ensure_future(self._closed(sessions, relayed))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _closed(
        self, sessions: list[ShareSession], relayed: dict[tuple[tuple[str, int], str, str], RelayedFor]
    ) -> None:
        for session in sessions:
            keys = [SharePartitionKey(session.group, t, p) for t, p in session.partitions]
            try:
                await self._release(self._shard(session.group), session.group, session.member, keys)
            except ShardNotAvailable as exc:  # the lock timeout releases them instead
                log.info("releasing the records of a closed share session failed: %r", exc)
        told: set[tuple[str, int]] = set()
        for (where, group, member), caller in relayed.items():
            if where in told:
                continue  # one notice drops every session of the connection there
            told.add(where)
            # For the same caller (the owner checks its READ on the group, as for any request).
            notice = wire_ack.ShareAcknowledgeRequest(group_id=group, member_id=member, share_session_epoch=-1)
            header = RequestHeader(wire_ack.ShareAcknowledgeRequest.API_KEY, 1, 0, None)
            await self._relay(where, header, notice, self.relay_timeout_s, dataclasses.replace(caller, closed=True))

    # --- ShareAcknowledge ----------------------------------------------------------------------

    async def share_acknowledge(
        self, request: wire_ack.ShareAcknowledgeRequest, context: ConnectionContext | None = None
    ) -> wire_ack.ShareAcknowledgeResponse:
        group, member = request.group_id or "", request.member_id or ""
        relayed = await self._relayed(context, group, request, wire_ack.ShareAcknowledgeResponse)
        if relayed is not None:
            return relayed
        if context is not None and context.connection_id:
            caller = RelayedFor.parse(context.header.client_id)
            if caller is not None and caller.closed:
                # Another process's client connection closed: the sessions it opened here go.
                self.connection_closed(context.connection_id)
                return wire_ack.ShareAcknowledgeResponse()
        if not group or not member:
            return wire_ack.ShareAcknowledgeResponse(error_code=ErrorCode.INVALID_REQUEST)
        parts = await self._parts([(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics])
        batches = [_ack_batches(p.acknowledgement_batches) for t in request.topics for p in t.partitions]
        try:
            shard = self._shard(group)
            # The session first, as Kafka keys it by member id (a wrong member id has none:
            # SHARE_SESSION_NOT_FOUND), then the membership the sidecar also asks for.
            error = self.sessions.check_acknowledge(group, member, request.share_session_epoch)
            if not error and request.share_session_epoch != -1:
                error = self._member_error(shard, group, member)
            if error:
                return wire_ack.ShareAcknowledgeResponse(error_code=error)
            outcome = self.sessions.acknowledge(group, member, request.share_session_epoch)
            if outcome.error:
                return wire_ack.ShareAcknowledgeResponse(error_code=outcome.error)
            errors = await self._acknowledge(
                shard, group, member, list(zip(parts, batches, strict=True)), request.is_renew_ack
            )
            lock_ms = self._lock_ms(shard, group)
            if outcome.closing and outcome.session is not None:
                keys = [SharePartitionKey(group, t, p) for t, p in outcome.session.partitions]
                await self._release(shard, group, member, keys)
        except ShardNotAvailable as exc:
            return wire_ack.ShareAcknowledgeResponse(error_code=_unavailable(exc))
        by_topic: dict[uuid.UUID, list[wire_ack.ShareAcknowledgeResponsePartitionData]] = defaultdict(list)
        for part in parts:
            by_topic[part.topic_id].append(
                wire_ack.ShareAcknowledgeResponsePartitionData(
                    partition_index=part.partition,
                    error_code=errors.get((part.topic_id, part.partition), ErrorCode.NONE),
                    current_leader=wire_ack.ShareAcknowledgeResponseLeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
                )
            )
        return wire_ack.ShareAcknowledgeResponse(
            # v2 (KIP-1222) tells the client how long the locks it renewed now last.
            acquisition_lock_timeout_ms=lock_ms,
            responses=[wire_ack.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
        )

    # --- ShareFetch ----------------------------------------------------------------------------

    async def share_fetch(
        self, request: wire_sf.ShareFetchRequest, context: ConnectionContext | None = None
    ) -> wire_sf.ShareFetchResponse:
        group, member, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
        wait_ms = min(max(request.max_wait_ms, 0), MAX_WAIT_MS)
        relayed = await self._relayed(context, group, request, wire_sf.ShareFetchResponse, wait_ms)
        if relayed is not None:
            return relayed
        COUNTS.share_fetches += 1
        if not group or not member:
            return wire_sf.ShareFetchResponse(error_code=ErrorCode.INVALID_REQUEST)
        refused = renew_fetch_error(request)
        if refused:
            return wire_sf.ShareFetchResponse(error_code=refused)
        renew = request.is_renew_ack
        requested = await self._parts([(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics])
        acks = [
            (part, _ack_batches(p.acknowledgement_batches))
            for part, p in zip(requested, [p for t in request.topics for p in t.partitions], strict=True)
            if p.acknowledgement_batches
        ]
        forgotten = await self._parts([(t.topic_id, t.partitions) for t in request.forgotten_topics_data])
        try:
            shard = self._shard(group)
            # The session rules first (Kafka's newContext: a wrong member id has no session), then
            # the membership the sidecar also asks for (a new session only for a member).
            error = self.sessions.check_fetch(group, member, epoch, bool(acks))
            if not error and epoch != -1:
                error = self._member_error(shard, group, member)
            if error:
                return wire_sf.ShareFetchResponse(error_code=error)
            outcome = self.sessions.fetch(
                group,
                member,
                epoch,
                bool(acks),
                [(p.topic, p.partition) for p in requested if not p.error],
                [(p.topic, p.partition) for p in forgotten if not p.error],
                context.connection_id if context is not None else "",
                topic_ids={p.topic: p.topic_id for p in requested if not p.error},
                forgotten_ids=[(p.topic_id, p.partition) for p in forgotten if p.error],
            )
            if outcome.error or outcome.session is None:
                return wire_sf.ShareFetchResponse(error_code=outcome.error)
            session_ids = dict(outcome.session.partitions)
            session_parts = list(session_ids)
            stale = await self._stale(session_ids)
            if outcome.closing:
                ack_errors = await self._acknowledge(shard, group, member, acks, renew) if acks else {}
                keys = [SharePartitionKey(group, t, p) for t, p in session_parts]
                await self._release(shard, group, member, keys)
                acquired: dict[tuple[str, int], tuple[bytes, tuple[AcquiredRecords, ...]]] = {}
                fetch_errors: dict[tuple[str, int], int] = {}
                lock_ms = 0
            elif renew:
                # KIP-1222: a renew-only fetch applies its acknowledgements and fetches nothing.
                ack_errors = await self._acknowledge(shard, group, member, acks, renew) if acks else {}
                acquired, fetch_errors, lock_ms = {}, {}, self._lock_ms(shard, group)
            elif request.max_bytes <= 0:
                # Kafka 4.2 reads nothing for a ShareFetch whose MaxBytes is 0 or less (its per-partition
                # byte split refuses a request budget below 1) and answers at once, records left
                # available, acknowledgements applied; librdkafka's fetch.max.bytes=0 relies on it.
                ack_errors = await self._acknowledge(shard, group, member, acks, renew) if acks else {}
                acquired, fetch_errors, lock_ms = {}, {}, self._lock_ms(shard, group)
            else:
                max_records = request.max_records if request.max_records > 0 else DEFAULT_MAX_RECORDS
                max_bytes = min(MAX_FETCH_BYTES, request.max_bytes)
                ack_errors, acquired, fetch_errors, lock_ms = await self._fetch(
                    shard,
                    group,
                    member,
                    [tp for tp in session_parts if tp not in stale],
                    acks,
                    max_records,
                    max_bytes,
                    wait_ms,
                    request.share_acquire_mode == BATCH_OPTIMIZED,
                )
        except ShardNotAvailable as exc:
            return wire_sf.ShareFetchResponse(error_code=_unavailable(exc))
        ids = {p.topic: p.topic_id for p in requested if not p.error}
        for topic, partition in [*acquired, *fetch_errors]:
            if topic not in ids:
                known = session_ids.get((topic, partition))
                ids[topic] = known or await self.topics.uuid_of(topic) or uuid.UUID(int=0)
        gone = {(tid, p): int(ErrorCode.UNKNOWN_TOPIC_ID) for (_, p), tid in stale.items()}
        return self._fetch_answer(requested, ids, ack_errors, acquired, fetch_errors, lock_ms, gone)

    async def _stale(self, session_ids: dict[tuple[str, int], uuid.UUID | None]) -> dict[tuple[str, int], uuid.UUID]:
        """The session's partitions whose topic, by the id the client added them with, is no longer
        the topic of that name (deleted, or deleted and re-created): not fetched, answered
        UNKNOWN_TOPIC_ID, as Kafka answers for a topic id it no longer has; the client then
        refreshes its metadata and fetches the new topic by its new id."""
        current: dict[str, uuid.UUID | None] = {}
        stale: dict[tuple[str, int], uuid.UUID] = {}
        for tp, tid in session_ids.items():
            if tid is None:
                continue
            if tp[0] not in current:
                current[tp[0]] = await self.topics.uuid_of(tp[0])
            if current[tp[0]] != tid:
                stale[tp] = tid
        return stale

    async def _fetch(
        self,
        shard: Shard[GroupCoordinatorState],
        group: str,
        member: str,
        parts: list[tuple[str, int]],
        acks: list[tuple[_Part, list[AcknowledgementBatch]]],
        max_records: int,
        max_bytes: int,
        wait_ms: int,
        batch_optimized: bool = False,
    ) -> tuple[
        dict[tuple[uuid.UUID, int], int],
        dict[tuple[str, int], tuple[bytes, tuple[AcquiredRecords, ...]]],
        dict[tuple[str, int], int],
        int,
    ]:
        """The acknowledgements' errors, what was acquired (with the fetched batches holding it),
        the partitions' errors, and the lock duration. The acknowledgements are one write (one
        record per share-partition), read back before anything is acquired; the acquisition is
        not written and is answered at once (module docstring, 4), so an acknowledging ShareFetch
        costs one round trip through the coordinator log and one that only acquires none."""
        handlers = self.service.handlers
        deadline = time.monotonic() + wait_ms / 1000
        keys = {tp: SharePartitionKey(group, tp[0], tp[1]) for tp in parts}
        errors: dict[tuple[str, int], int] = {}
        lock_ms = shard.read(lambda s: partition_config(handlers, s, group).record_lock_duration_ms)
        read_committed = shard.read(
            lambda s: (
                group_config.effective_share(handlers.share_config, s.group_configs.configs.get(group)).isolation_level
                == "read_committed"
            )
        )
        # The acknowledgements first, written and read back before anything is acquired: no
        # record is held by this member while they are written, and the room they free in the
        # in-flight window goes at once (their write wakes the waiting fetches) to whichever
        # member asks first. Kafka's ShareFetch likewise acquires into room an acknowledgement
        # freed only once that acknowledgement is persisted.
        ack_errors = await self._acknowledge(shard, group, member, acks) if acks else {}
        got: dict[SharePartitionKey, tuple[AcquiredRecords, ...]] = {}
        while True:
            # Registered before anything is awaited: a release while this fetch reads wakes it too.
            woken = self.waiters.register(keys.values())
            try:
                shard.read_live(lambda s: self.waiters.listen(s.share_data))
                await self._make_live(shard, group, keys, errors)
                offsets = shard.read_live(lambda s: shard_ops.fetch_offsets(s.share_data, keys.values()))
                # From the partitions' last reads when they hold the offsets: no broker round trip
                # and no task, so room freed in the window is acquired again within a loop turn.
                read = self._read_kept(group, read_committed, offsets, max_bytes, errors)
                if (
                    read is None
                    and time.monotonic() < deadline
                    and (under_way := self._read_under_way(read_committed, offsets)) is not None
                ):
                    # Another fetch is reading these partitions from at or below where this one
                    # would: its answer, kept, serves this one too. Ten fetches woken at once by
                    # room freed past the last read would otherwise read the same MiB ten times.
                    # (Past its MaxWaitMs, or with none, a fetch makes its one read itself.)
                    woken = await self._follow(shard, under_way, keys, woken, deadline)
                    if time.monotonic() >= deadline:
                        break
                    continue
                if read is None:
                    remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
                    reading = asyncio.ensure_future(
                        self._read_log(group, read_committed, offsets, max_bytes, remaining_ms, errors, shard)
                    )
                    self._reading_now(read_committed, offsets, reading)
                    try:
                        woken = await self._read_or_released(shard, reading, keys, woken)
                    finally:
                        # This request failed or was cancelled (its client went): no read left behind.
                        reading.cancel()
                    if reading.cancelled():
                        continue  # records were released while the broker waited for new ones
                    read = reading.result()
                fetched, data = read
                if fetched:
                    # An acquisition is not written (as in Kafka; archivals it does are) and a
                    # reload drops it whole (every lock expires): answered at once, even while
                    # earlier writes of the shard (other members' acknowledgements) are still to
                    # be read back (``Shard.write_now``, transient).
                    acquiring = shard.write_now(
                        lambda s, now, fetched=fetched: shard_ops.acquire(
                            s.share_data,
                            member,
                            fetched,
                            max_records,
                            now,
                            batch_optimized,
                            partition_config(handlers, s, group),
                        ),  # type: ignore[misc]
                        transient=True,
                    )
                    got = await acquiring if isinstance(acquiring, asyncio.Future) else acquiring
                    if got:
                        self._read_ahead(group, read_committed, got, max_bytes, shard)
                # Answered at once with records, or with a partition's error (as Kafka completes a
                # share fetch with an erroneous partition); an empty session has nothing to wait for.
                if got or errors or not keys or time.monotonic() >= deadline:
                    break
                # Wait until a share-partition has records to acquire again (released, a lock
                # expired, acknowledged out of the window); only a fetch that found records it
                # could not have polls again.
                timeout = max(0.0, deadline - time.monotonic())
                if fetched:
                    timeout = min(timeout, RETRY_S)
                await _woken_or_after(woken, timeout)
            finally:
                self.waiters.unregister(keys.values(), woken)
        out = {(k.topic, k.partition): (_overlapping(data[k], records), records) for k, records in got.items()}
        return ack_errors, out, errors, lock_ms

    def _read_ahead(
        self,
        group: str,
        read_committed: bool,
        got: dict[SharePartitionKey, tuple[AcquiredRecords, ...]],
        max_bytes: int,
        shard: Shard[GroupCoordinatorState],
    ) -> None:
        """Begin the next read of each partition whose kept read this acquisition took into its
        last batch (or to its end) while the log holds more: the records right after the kept
        read, kept beside it (``ShareReadCache.put_ahead``). The fetch that needs them next
        (woken by the room an acknowledgement frees, or the acquirer's own next one) then takes
        them from there, or waits for this read already under way (``_read_under_way``), rather
        than starting it only then, a round trip to the cluster later. It reads nothing a later
        fetch would not read (one read per kept read, never at or past the high watermark the
        kept read saw) and acquires nothing."""
        now = time.monotonic()
        offsets: dict[SharePartitionKey, tuple[int, bool]] = {}
        for key, ranges in got.items():
            cache_key = (key.topic, key.partition, read_committed)
            if cache_key in self._reading:
                continue
            start = self.read_cache.read_ahead_from(cache_key, max(a.last_offset for a in ranges) + 1, now)
            if start is not None:
                offsets[key] = (start, False)
        if not offsets:
            return
        # Not at the log's end (records are there): the broker answers at once.
        ahead = asyncio.ensure_future(
            self._read_log(group, read_committed, offsets, max_bytes, 0, {}, shard, ahead=True)
        )
        self._reading_now(read_committed, offsets, ahead)
        self._reading_ahead.add(ahead)
        ahead.add_done_callback(self._read_ahead_done)

    def _read_ahead_done(self, ahead: asyncio.Future[Any]) -> None:
        self._reading_ahead.discard(ahead)
        if not ahead.cancelled() and ahead.exception() is not None:
            # The fetch that needs the records reads them itself.
            log.warning("share read ahead from the cluster failed: %r", ahead.exception())

    def _read_under_way(
        self, read_committed: bool, offsets: dict[SharePartitionKey, tuple[int, bool]]
    ) -> asyncio.Future[Any] | None:
        """A read of the cluster under way that will answer every partition of ``offsets`` the
        kept reads do not hold (begun at or below its fetch offset); None when one must be read."""
        now = time.monotonic()
        found: asyncio.Future[Any] | None = None
        for key, (offset, _) in offsets.items():
            cache_key = (key.topic, key.partition, read_committed)
            if self.read_cache.get(cache_key, offset, 1, now) is not None:
                continue
            under_way = self._reading.get(cache_key)
            if under_way is None or under_way[0] > offset:
                return None
            found = under_way[1]
        return found

    def _reading_now(
        self, read_committed: bool, offsets: dict[SharePartitionKey, tuple[int, bool]], reading: asyncio.Future[T]
    ) -> None:
        """Note ``reading`` as the read under way of the partitions of ``offsets`` the kept reads
        do not hold, until it is done (``_read_under_way``)."""
        now = time.monotonic()
        mine = [
            ((key.topic, key.partition, read_committed), offset)
            for key, (offset, _) in offsets.items()
            if self.read_cache.get((key.topic, key.partition, read_committed), offset, 1, now) is None
        ]
        for cache_key, offset in mine:
            self._reading[cache_key] = (offset, reading)

        def done(_: asyncio.Future[T]) -> None:
            for cache_key, _offset in mine:
                under_way = self._reading.get(cache_key)
                if under_way is not None and under_way[1] is reading:
                    del self._reading[cache_key]

        reading.add_done_callback(done)

    async def _follow(
        self,
        shard: Shard[GroupCoordinatorState],
        reading: asyncio.Future[Any],
        keys: dict[tuple[str, int], SharePartitionKey],
        woken: asyncio.Future[None],
        deadline: float,
    ) -> asyncio.Future[None]:
        """Wait for another fetch's ``reading`` (never cancelled from here), at most until
        ``deadline``, or until records below a share-partition's end become available (released,
        a lock expired: they need no read). Answers the wake-up future now registered."""
        while not reading.done():
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            await asyncio.wait((reading, woken), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if reading.done() or not woken.done():
                break
            if shard.read_live(lambda s: shard_ops.has_available(s.share_data, keys.values())):
                break
            self.waiters.unregister(keys.values(), woken)
            woken = self.waiters.register(keys.values())
        return woken

    async def _read_or_released(
        self,
        shard: Shard[GroupCoordinatorState],
        read: asyncio.Future[tuple[list[shard_ops.Fetched], dict[SharePartitionKey, list[Batch]]]],
        keys: dict[tuple[str, int], SharePartitionKey],
        woken: asyncio.Future[None],
    ) -> asyncio.Future[None]:
        """Wait for ``read``, unless records below a share-partition's end become available while
        the broker waits for new ones (released, a lock expired): then ``read`` is cancelled
        (undone: the caller tries again). Answers the wake-up future now registered."""
        while not read.done():
            await asyncio.wait((read, woken), return_when=asyncio.FIRST_COMPLETED)
            if read.done():
                break
            if shard.read_live(lambda s: shard_ops.has_available(s.share_data, keys.values())):
                read.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await read
                break
            self.waiters.unregister(keys.values(), woken)
            woken = self.waiters.register(keys.values())
        return woken

    async def _make_live(
        self,
        shard: Shard[GroupCoordinatorState],
        group: str,
        keys: dict[tuple[str, int], SharePartitionKey],
        errors: dict[tuple[str, int], int],
    ) -> None:
        """Load or create every share-partition that is not live yet (one write for all)."""
        missing = shard.read_live(lambda s: [tp for tp, k in keys.items() if k not in s.share_data.live])
        if not missing:
            return
        handlers = self.service.handlers
        new = shard.read_live(lambda s: {tp for tp in missing if shard_ops.needs_start(s.share_data, keys[tp])})
        starts: dict[tuple[str, int], int | None] = {}
        for tp in missing:
            if tp not in new:
                starts[tp] = None
                continue
            reset = shard.read(
                lambda s: (
                    group_config.effective_share(
                        handlers.share_config, s.group_configs.configs.get(group)
                    ).auto_offset_reset
                )
            )
            try:
                ends = await self.fetcher.offsets(tp[0], tp[1])
            except READ_ERRORS as exc:
                log.warning("share-partition start offsets from the cluster failed: %r", exc)
                ends = None
            if ends is None:
                errors[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            by_time = None
            when = reset_timestamp(reset, int(time.time() * 1000))
            if when is not None:  # by_duration: the first record at or after now minus the duration
                try:
                    by_time = await self.fetcher.offset_for_time(tp[0], tp[1], when, ends)
                except READ_ERRORS as exc:
                    log.warning("share-partition start offset by time from the cluster failed: %r", exc)
                if by_time is None:
                    errors[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    continue
            starts[tp] = initial_start_offset(reset, ends[0], ends[1], by_time)
        topic_ids = {tp: await self.topics.id_of(tp[0]) for tp in starts}

        def op(state: GroupCoordinatorState, now: int) -> Result[None]:
            config = partition_config(handlers, state, group)
            return shard_ops.ensure(
                state.share_data, [(keys[tp], config, topic_ids[tp], start) for tp, start in starts.items()]
            )

        await shard.write(op)

    async def _read_log(
        self,
        group: str,
        read_committed: bool,
        offsets: dict[SharePartitionKey, tuple[int, bool]],
        max_bytes: int,
        wait_ms: int,
        errors: dict[tuple[str, int], int],
        shard: Shard[GroupCoordinatorState],
        ahead: bool = False,
    ) -> tuple[list[shard_ops.Fetched], dict[SharePartitionKey, list[Batch]]]:
        """Fetch each share-partition from its leader, at its fetch offset (or from the records
        read last from it, when they hold that offset: ``share_read_cache.py``). ``ahead``: a
        read begun before a fetch needs it, kept beside the partition's last read (``_read_ahead``)."""
        by_leader: dict[Leader, list[tuple[str, int, int]]] = defaultdict(list)
        answered: list[tuple[str, int, int, PartitionFetch]] = []
        now = time.monotonic()
        for key, (offset, _) in offsets.items():
            kept = self.read_cache.get((key.topic, key.partition, read_committed), offset, max_bytes, now)
            if kept is not None:
                answered.append((key.topic, key.partition, offset, kept))
                continue
            try:
                leader = await self.fetcher.leader(key.topic, key.partition)
            except READ_ERRORS as exc:
                log.warning("share-partition leader lookup failed: %r", exc)
                leader = None
            if leader is None:
                errors[(key.topic, key.partition)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            by_leader[leader].append((key.topic, key.partition, offset))
        ends = {(key.topic, key.partition): end for key, (_, end) in offsets.items()}
        all_at_end = not answered and all(ends.values())
        COUNTS.share_log_reads += sum(len(wanted) for wanted in by_leader.values())
        answers = await asyncio.gather(
            *(
                self.fetcher.fetch(
                    leader,
                    wanted,
                    min(max_bytes, PARTITION_MAX_BYTES),
                    log_read_wait_ms([ends[(topic, partition)] for topic, partition, _ in wanted], all_at_end, wait_ms),
                    read_committed,
                )
                for leader, wanted in by_leader.items()
            ),
            return_exceptions=True,
        )
        now = time.monotonic()
        for (_leader, wanted), answer in zip(by_leader.items(), answers, strict=True):
            if isinstance(answer, BaseException):
                log.warning("share fetch from the cluster failed: %r", answer)
                for topic, partition, _ in wanted:
                    errors[(topic, partition)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            for topic, partition, offset in wanted:
                got: PartitionFetch | None = answer.get((topic, partition))
                if got is not None:
                    keep = self.read_cache.put_ahead if ahead else self.read_cache.put
                    keep((topic, partition, read_committed), got, now)
                    # All of it is kept for the next fetches; this one gets what fits its MaxBytes.
                    answered.append((topic, partition, offset, limited(got, 0, max_bytes)))
        return _fetched_from(group, answered, errors)

    def _read_kept(
        self,
        group: str,
        read_committed: bool,
        offsets: dict[SharePartitionKey, tuple[int, bool]],
        max_bytes: int,
        errors: dict[tuple[str, int], int],
    ) -> tuple[list[shard_ops.Fetched], dict[SharePartitionKey, list[Batch]]] | None:
        """``_read_log``'s answer when the partitions' last reads hold every offset (nothing to
        read from the brokers, nothing to wait for: answered without awaiting); None otherwise."""
        answered: list[tuple[str, int, int, PartitionFetch]] = []
        now = time.monotonic()
        for key, (offset, _) in offsets.items():
            kept = self.read_cache.get((key.topic, key.partition, read_committed), offset, max_bytes, now)
            if kept is None:
                return None
            answered.append((key.topic, key.partition, offset, kept))
        return _fetched_from(group, answered, errors)

    def _fetch_answer(
        self,
        requested: list[_Part],
        names: dict[str, uuid.UUID],
        ack_errors: dict[tuple[uuid.UUID, int], int],
        acquired: dict[tuple[str, int], tuple[bytes, tuple[AcquiredRecords, ...]]],
        fetch_errors: dict[tuple[str, int], int],
        lock_ms: int,
        gone: dict[tuple[uuid.UUID, int], int] | None = None,
    ) -> wire_sf.ShareFetchResponse:
        by_topic: dict[uuid.UUID, dict[int, wire_sf.ShareFetchResponsePartitionData]] = defaultdict(dict)

        def entry(topic_id: uuid.UUID, partition: int) -> wire_sf.ShareFetchResponsePartitionData:
            found = by_topic[topic_id].get(partition)
            if found is None:
                found = by_topic[topic_id][partition] = wire_sf.ShareFetchResponsePartitionData(
                    partition_index=partition,
                    records=b"",
                    current_leader=wire_sf.ShareFetchResponseLeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
                )
            return found

        for part in requested:
            e = entry(part.topic_id, part.partition)
            if part.error:
                e.error_code = part.error
            e.acknowledge_error_code = ack_errors.get((part.topic_id, part.partition), ErrorCode.NONE)
        for (topic, partition), code in fetch_errors.items():
            entry(names[topic], partition).error_code = code
        for (topic_id, partition), code in (gone or {}).items():
            entry(topic_id, partition).error_code = code
        for (topic, partition), (records, ranges) in acquired.items():
            e = entry(names[topic], partition)
            e.records = records
            e.acquired_records = [
                wire_sf.ShareFetchResponseAcquiredRecords(
                    first_offset=a.first_offset, last_offset=a.last_offset, delivery_count=a.delivery_count
                )
                for a in ranges
            ]
        return wire_sf.ShareFetchResponse(
            acquisition_lock_timeout_ms=lock_ms,
            responses=[
                wire_sf.ShareFetchableTopicResponse(topic_id=t, partitions=list(ps.values()))
                for t, ps in by_topic.items()
            ],
        )


def _fetched_from(
    group: str, answered: list[tuple[str, int, int, PartitionFetch]], errors: dict[tuple[str, int], int]
) -> tuple[list[shard_ops.Fetched], dict[SharePartitionKey, list[Batch]]]:
    """What was read of each partition (topic, partition, fetch offset, answer), as the
    acquisition takes it; a partition's read error into ``errors``."""
    fetched: list[shard_ops.Fetched] = []
    data: dict[SharePartitionKey, list[Batch]] = {}
    for topic, partition, offset, got in answered:
        key = SharePartitionKey(group, topic, partition)
        if got.error_code == OFFSET_OUT_OF_RANGE:
            fetched.append(shard_ops.Fetched(key, offset, (), (), got.log_start_offset))
            continue
        if got.error_code:
            errors[(topic, partition)] = got.error_code
            continue
        batches = tuple(OffsetRange(b.first, b.last) for b in got.batches)
        fetched.append(shard_ops.Fetched(key, offset, batches, tuple(got.archive), got.log_start_offset))
        data[key] = got.batches
    return fetched, data


async def _woken_or_after(woken: asyncio.Future[None], timeout: float) -> None:
    """Until ``woken`` is done or ``timeout`` seconds have passed, whichever is first. Awaited
    directly (no wrapping task or future), so a wake-up resumes the fetch in one loop turn."""
    if woken.done():
        return
    timer = asyncio.get_running_loop().call_later(timeout, _wake, woken)
    try:
        await woken
    finally:
        timer.cancel()


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def _unavailable(exc: ShardNotAvailable) -> int:
    """The group's share-partitions are not served here now (not owned, loading, failed, or the
    write was refused): the client refreshes its metadata and tries again, as after a leader move."""
    return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
