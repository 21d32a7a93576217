"""Reads share-partitions' records from the real brokers, for the share data path.

A ShareFetch is answered with records the sidecar fetches itself: Fetch of the partition from its
leader (found with Metadata), ListOffsets for a new share-partition's start, over connections of
its own (``gateway/broker_connection.py``: the gateway's addresses and upstream TLS, and on a
cluster that requires SASL the login of ``serve``'s ``client`` settings, PLAIN or SCRAM, as the
transaction bridge logs in). Connections are pooled per broker; each carries one request at a
time; one past the session lifetime the cluster gave its login (KIP-368) is replaced.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from groupcoord.coordinator.gateway.broker_connection import BrokerConnection
from groupcoord.coordinator.messages import fetch as wire_fetch
from groupcoord.coordinator.messages import list_offsets as wire_lo
from groupcoord.coordinator.messages import metadata as wire_md
from groupcoord.coordinator.messages.schema import Message
from groupcoord.coordinator.security.cluster_login import ClusterLogin
from groupcoord.coordinator.share.partition_types import OffsetRange

CLIENT_ID = "groupcoord-share"
# Flexible versions every broker of the last years answers (librdkafka's own Fetch fallback is v12).
_FETCH_VERSION, _LIST_OFFSETS_VERSION, _METADATA_VERSION = 12, 7, 12
EARLIEST, LATEST = -2, -1
# A wait of 0 ms is answered by some brokers (Tansu) with no partitions at all.
MIN_FETCH_WAIT_MS = 10
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE = 6, 3, 1
M = TypeVar("M", bound=Message)

# RecordBatch v2 header: base offset (8), length (4), leader epoch (4), magic (1), crc (4),
# attributes (2), last offset delta (4), base/max timestamp (16), producer id (8), producer epoch (2),
# base sequence (4), record count (4).
_BATCH_HEAD = struct.Struct(">qiibIhiqqqhii")
_LOG_OVERHEAD = 12
_TRANSACTIONAL, _CONTROL, _LOG_APPEND_TIME, _COMPRESSION = 0x10, 0x20, 0x08, 0x07
# Enough for the first batch at an offset in a time lookup's step (a larger one still comes whole).
_STAMP_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class Batch:
    """One record batch of a fetch answer, as its header says and its bytes as they came."""

    first: int
    last: int
    producer_id: int
    transactional: bool
    control: bool
    data: memoryview


def record_batches(records: bytes | None) -> Iterator[Batch]:
    """The complete record batches of a Fetch answer's ``records`` (a partial one at the end,
    cut by max bytes, is left out, as clients do). Old message formats (magic < 2) are skipped."""
    if not records:
        return
    view = memoryview(records)
    pos = 0
    while pos + _BATCH_HEAD.size <= len(view):
        base, length, _epoch, magic, _crc, attrs, delta, _t0, _t1, pid, _pe, _seq, _count = _BATCH_HEAD.unpack_from(
            view, pos
        )
        end = pos + _LOG_OVERHEAD + length
        if length <= 0 or end > len(view):
            return
        if magic >= 2:
            yield Batch(base, base + delta, pid, bool(attrs & _TRANSACTIONAL), bool(attrs & _CONTROL), view[pos:end])
        pos = end


def aborted_ranges(
    batches: list[Batch], aborted: list[wire_fetch.FetchResponseAbortedTransaction] | None
) -> list[OffsetRange]:
    """Offsets never to deliver: control batches (commit/abort markers) and, under read_committed,
    the batches of aborted transactions (each from its first offset to its producer's marker)."""
    out = [OffsetRange(b.first, b.last) for b in batches if b.control]
    open_aborts = {a.producer_id: a.first_offset for a in aborted or ()}
    for b in batches:
        start = open_aborts.get(b.producer_id)
        if start is None or not b.transactional or b.first < start:
            continue
        if b.control:
            del open_aborts[b.producer_id]  # the abort marker closes it
        else:
            out.append(OffsetRange(b.first, b.last))
    return out


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's record fields) at ``pos``: (value, position after it)."""
    shift = raw = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def record_timestamps(batch: Batch) -> list[tuple[int, int]]:
    """(offset, timestamp) of each record of a batch. A compressed batch's records are not read:
    each is given the batch's largest timestamp (the time lookup then finds the batch, not the
    record in it). Control batches have no records to deliver: none."""
    if batch.control:
        return []
    head = _BATCH_HEAD.unpack_from(batch.data, 0)
    attrs, first_ts, max_ts, count = head[5], head[7], head[8], head[12]
    if attrs & _LOG_APPEND_TIME or attrs & _COMPRESSION:
        return [(o, max_ts) for o in range(batch.first, batch.last + 1)]
    out: list[tuple[int, int]] = []
    pos = _BATCH_HEAD.size
    try:
        for _ in range(count):
            length, body = _varint(batch.data, pos)
            _ts_delta, after = _varint(batch.data, body + 1)  # after the record's attributes byte
            offset_delta, _ = _varint(batch.data, after)
            out.append((batch.first + offset_delta, first_ts + _ts_delta))
            pos = body + length
    except (IndexError, ValueError):
        return [(o, max_ts) for o in range(batch.first, batch.last + 1)]
    return out


async def first_at_or_after(
    stamp: Callable[[int], Awaitable[tuple[int, int] | None]], timestamp: int, ends: tuple[int, int], listed: int
) -> int:
    """The first offset in ``ends`` whose record is at or after ``timestamp``, ``ends[1]`` if none:
    ``listed`` (the broker's answer) when the records at and before it agree, else by binary
    search. ``stamp(o)`` is (offset, timestamp) of the first record at or after ``o``."""
    earliest, latest = ends

    async def ts(offset: int) -> tuple[int, int]:
        got = await stamp(offset)
        return got if got is not None else (latest, timestamp)  # nothing there: as if at the end

    if listed < 0 or listed >= latest:
        if latest == earliest or (await ts(latest - 1))[1] < timestamp:
            return latest
    elif (
        listed >= earliest
        and (await ts(listed))[1] >= timestamp
        and (listed == earliest or (await ts(listed - 1))[1] < timestamp)
    ):
        return listed
    lo, hi = earliest, latest
    first_record: dict[int, int] = {}  # a bound -> the offset of the record found there
    while lo < hi:
        mid = (lo + hi) // 2
        found, at = await ts(mid)
        if at >= timestamp:
            hi = mid
            first_record[mid] = found
        else:
            lo = found + 1
    # The record's own offset, as Kafka answers, not an empty offset before it.
    return min(first_record.get(lo, lo), latest)


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """The answer for one partition: its batches, the offsets to archive, the log's start, an error."""

    error_code: int
    batches: list[Batch]
    archive: list[OffsetRange]
    log_start_offset: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class Leader:
    node_id: int
    leader_epoch: int
    address: tuple[str, int]


# What a read from the cluster may fail with: the broker is gone or slow, or answered nonsense.
READ_ERRORS = (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError)


class ShareRecordFetcher:
    def __init__(
        self,
        bootstrap: list[tuple[str, int]],
        tls: ssl.SSLContext | None,
        timeout_s: float,
        login: ClusterLogin | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.tls = tls
        self.timeout_s = timeout_s
        self.login = login
        self._idle: dict[tuple[str, int], list[BrokerConnection]] = {}
        self._leaders: dict[tuple[str, int], Leader] = {}

    # --- one request over a pooled connection ------------------------------------------------

    async def _call(
        self, address: tuple[str, int], version: int, body: Message, response: type[M], wait_s: float = 0
    ) -> M:
        pool = self._idle.setdefault(address, [])
        while pool and pool[-1].expired:
            pool.pop().close()
        if pool:
            conn = pool.pop()
        else:
            conn = await BrokerConnection.open(address, self.tls, self.timeout_s, self.login, CLIENT_ID)
        answer = await conn.call(body, response, version, self.timeout_s + wait_s)  # closes itself on failure
        pool.append(conn)
        return answer

    async def close(self) -> None:
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()

    # --- leaders -----------------------------------------------------------------------------

    async def leader(self, topic: str, partition: int) -> Leader | None:
        known = self._leaders.get((topic, partition))
        if known is not None:
            return known
        request = wire_md.MetadataRequest(
            topics=[wire_md.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        answer = await self._call(self.bootstrap[0], _METADATA_VERSION, request, wire_md.MetadataResponse)
        brokers = {b.node_id: (b.host, b.port) for b in answer.brokers}
        for t in answer.topics:
            for p in t.partitions:
                if p.error_code == 0 and p.leader_id in brokers and t.name:
                    self._leaders[(t.name, p.partition_index)] = Leader(
                        p.leader_id, p.leader_epoch, brokers[p.leader_id]
                    )
        return self._leaders.get((topic, partition))

    def forget_leader(self, topic: str, partition: int) -> None:
        self._leaders.pop((topic, partition), None)

    # --- the two reads ---------------------------------------------------------------------

    async def _list_offset(self, leader: Leader, topic: str, partition: int, timestamp: int) -> int | None:
        """ListOffsets of one partition at ``timestamp`` (or EARLIEST/LATEST); None on an error."""
        request = wire_lo.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                wire_lo.ListOffsetsTopic(
                    name=topic,
                    partitions=[wire_lo.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)],
                )
            ],
        )
        answer = await self._call(leader.address, _LIST_OFFSETS_VERSION, request, wire_lo.ListOffsetsResponse)
        assert isinstance(answer, wire_lo.ListOffsetsResponse)
        p = answer.topics[0].partitions[0] if answer.topics and answer.topics[0].partitions else None
        if p is None or p.error_code != 0:
            if p is not None and p.error_code == NOT_LEADER_OR_FOLLOWER:
                self.forget_leader(topic, partition)
            return None
        return int(p.offset)

    async def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(earliest, latest) of a partition, None when its leader cannot say."""
        leader = await self.leader(topic, partition)
        if leader is None:
            return None
        found = []
        for timestamp in (EARLIEST, LATEST):
            offset = await self._list_offset(leader, topic, partition, timestamp)
            if offset is None:
                return None
            found.append(offset)
        # Some brokers (Tansu) answer LATEST with the last batch's base offset + 1, inside that
        # batch; a Fetch's high watermark is the end every broker agrees on.
        ends = await self.fetch(leader, [(topic, partition, found[0])], 1, MIN_FETCH_WAIT_MS, False)
        got = ends.get((topic, partition))
        latest = max(found[1], got.high_watermark) if got is not None and got.error_code == 0 else found[1]
        return found[0], latest

    async def offset_for_time(self, topic: str, partition: int, timestamp: int, ends: tuple[int, int]) -> int | None:
        """The first offset whose record's timestamp is at or after ``timestamp`` (ListOffsets by
        timestamp), ``ends[1]`` (the end) when no record is that new; None when the leader cannot say.

        The broker's answer is checked against the records around it, because some brokers get it
        wrong (Tansu answers the log start whatever the timestamp); when it does not hold, the
        offset is found by binary search over ``ends`` with one small fetch per step. That search
        takes timestamps to grow with offsets (LogAppendTime, or CreateTime from producers whose
        clocks agree), as Kafka's own time index does."""
        leader = await self.leader(topic, partition)
        if leader is None:
            return None
        listed = await self._list_offset(leader, topic, partition, timestamp)
        if listed is None:
            return None

        async def stamp(offset: int) -> tuple[int, int] | None:
            answer = await self.fetch(leader, [(topic, partition, offset)], _STAMP_BYTES, MIN_FETCH_WAIT_MS, False)
            got = answer.get((topic, partition))
            for batch in got.batches if got is not None and got.error_code == 0 else ():
                for at, ts in record_timestamps(batch):
                    if at >= offset:
                        return at, ts
            return None

        return await first_at_or_after(stamp, timestamp, ends, listed)

    async def fetch(
        self, leader: Leader, wanted: list[tuple[str, int, int]], max_bytes: int, max_wait_ms: int, read_committed: bool
    ) -> dict[tuple[str, int], PartitionFetch]:
        """Fetch ``(topic, partition, offset)`` from one leader in one request."""
        topics: dict[str, list[wire_fetch.FetchPartition]] = {}
        for topic, partition, offset in wanted:
            topics.setdefault(topic, []).append(
                wire_fetch.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)
            )
        request = wire_fetch.FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=max_bytes,
            isolation_level=1 if read_committed else 0,
            session_id=0,
            session_epoch=-1,
            topics=[
                wire_fetch.FetchTopic(topic=t, topic_id=uuid.UUID(int=0), partitions=ps) for t, ps in topics.items()
            ],
        )
        answer = await self._call(leader.address, _FETCH_VERSION, request, wire_fetch.FetchResponse, max_wait_ms / 1000)
        out: dict[tuple[str, int], PartitionFetch] = {}
        for t in answer.responses:
            for p in t.partitions:
                if p.error_code == NOT_LEADER_OR_FOLLOWER:
                    self.forget_leader(t.topic, p.partition_index)
                batches = list(record_batches(p.records)) if p.error_code == 0 else []
                archive = aborted_ranges(batches, p.aborted_transactions if read_committed else None)
                out[(t.topic, p.partition_index)] = PartitionFetch(
                    p.error_code, batches, archive, p.log_start_offset, p.high_watermark
                )
        return out
