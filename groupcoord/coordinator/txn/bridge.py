"""TxnOffsetCommit through the sidecar: the offsets join the client's own transaction.

For a TxnOffsetCommit (transactional id T, producer id P, epoch E, group G on shard p):

1. the shard checks the request on its live state (member, generation or epoch, bounds, a
   producer epoch it already saw superseded); nothing is sent on a refusal;
2. ``AddPartitionsToTxn`` v3 (T, P, E) adds partition p of the transaction topic to the
   client's transaction at the cluster's transaction coordinator;
3. one transactional record (T, P, E, the next sequence of P on p) is produced to that partition:
   from now on it commits or aborts with the client's output records, by the cluster's decision;
4. the shard stages the offsets with where that record landed (``PendingTxnOffsets``) through its
   ordinary write path, and answers once the staging is read back from the log.

The ``resolver`` reads the transaction topic's partitions of shards with staged offsets with a
raw Fetch (the only reader that sees control batches) and, for each marker of a producer with
staged offsets before it, has the shard write the outcome (``GroupCoordinatorShard.resolve_txn``).
The marker is the cluster's and is durable, and the staged records say where to look for it, so a
new owner of the shard finds every outcome again after a failover; the outcome records are written
once per staged record (a marker with nothing staged before it writes nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.broker_connection import BrokerConnection, BrokerUnreachable
from groupcoord.coordinator.gateway.rewrite import TXN_OFFSET_COMMIT_TV2_VERSION
from groupcoord.coordinator.group_shard import GroupCoordinatorShard, GroupCoordinatorState, txn_commit_response
from groupcoord.coordinator.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
)
from groupcoord.coordinator.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from groupcoord.coordinator.messages.produce import (
    ProduceRequest,
    ProduceRequestPartitionProduceData,
    ProduceRequestTopicProduceData,
    ProduceResponse,
)
from groupcoord.coordinator.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from groupcoord.coordinator.offsets.transactions import Sequence
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.runtime.shard import Shard, ShardNotAvailable, ShardStatus
from groupcoord.coordinator.security.cluster_login import ClusterLogin
from groupcoord.coordinator.service.partitioning import partition_for
from groupcoord.coordinator.service.service import error_for
from groupcoord.coordinator.txn.wire import CLIENT_ID, COMMIT_MARKER, batch_heads, transactional_batch

log = logging.getLogger(__name__)

_TRANSACTION_KEY_TYPE = 1
_FIND_COORDINATOR_VERSION = 3
_ADD_PARTITIONS_VERSION = 3  # the client form; v4+ is the broker form (Tansu panics on it)
_PRODUCE_VERSION = 9
# Transaction version 2 (KIP-890 part 2): a TV2 client adds no partition itself; the leader a
# Produce v12+ reaches adds it to the transaction (Kafka 4.0's AddPartitionsToTxnManager: Produce
# above v11 is ADD_PARTITION, AddPartitionsToTxn v5 with VerifyOnly false, the TV2 add). The
# sidecar's record joins the client's TV2 transaction the same way, with no request a client
# could not send. Used only for TxnOffsetCommit v5, which is offered only where the cluster
# finalizes transaction.version 2 (``gateway.rewrite.transaction_v2``).
_PRODUCE_TV2_VERSION = 12
_FIRST_ABORTABLE_VERSION = 4  # TxnOffsetCommit v4+ knows TRANSACTION_ABORTABLE (KIP-890 part 1)
_FETCH_VERSION = 11
_METADATA_VERSION = 9
_NOT_LEADER = frozenset({6, 74, 75})  # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
_RETRIABLE_COORDINATOR = frozenset({14, 15, 16})
_MAX_CACHED_COORDINATORS = 10_000

# What the client is told for an answer of the cluster's transaction coordinator or partition
# leader. Kafka's AddPartitionsToTxnManager maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for the
# TxnOffsetCommit of a zombie (fatal to the Java producer and librdkafka, as it must be); an
# unknown producer id or transactional id is INVALID_PRODUCER_ID_MAPPING, as Kafka's verification
# answers it; the coordinator moving is retriable.
_CLIENT_ERRORS: dict[int, ErrorCode] = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.UNKNOWN_PRODUCER_ID: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode.UNKNOWN_SERVER_ERROR,
    # The leader's add to the transaction collided with another of the same epoch: retriable.
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}
_PASSED = frozenset(
    {
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
    }
)


def client_error(code: int, api_version: int = 0) -> ErrorCode:
    if code == ErrorCode.TRANSACTION_ABORTABLE:
        # As Kafka's AddPartitionsToTxnManager: clients before it get INVALID_TXN_STATE.
        return ErrorCode(code) if api_version >= _FIRST_ABORTABLE_VERSION else ErrorCode.INVALID_TXN_STATE
    if code in _CLIENT_ERRORS:
        return _CLIENT_ERRORS[code]
    if code in _PASSED:
        return ErrorCode(code)
    if code in _NOT_LEADER:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.UNKNOWN_SERVER_ERROR


class _Refused(Exception):
    def __init__(self, code: ErrorCode, why: str) -> None:
        super().__init__(why)
        self.code = code


def transaction_v2(api_version: int) -> bool:
    """A TxnOffsetCommit of this version belongs to a transaction of version 2 (KIP-890 part 2)."""
    return api_version >= TXN_OFFSET_COMMIT_TV2_VERSION


@dataclass
class TxnStats:
    """Counts for metrics: commits staged, and outcomes applied."""

    staged: int = 0
    committed: int = 0
    aborted: int = 0
    refused: dict[int, int] = field(default_factory=dict)


class TxnBridge:
    def __init__(
        self,
        runtime: CoordinatorRuntime[GroupCoordinatorState],
        handlers: GroupCoordinatorShard,
        topic: str,
        bootstrap: list[tuple[str, int]],
        tls: ssl.SSLContext | None = None,
        login: ClusterLogin | None = None,
        timeout_s: float = 10.0,
        fetch_wait_ms: int = 100,
    ) -> None:
        self.runtime = runtime
        self.handlers = handlers
        self.topic = topic
        self.bootstrap = bootstrap
        self.tls = tls
        # The sidecar's own SASL login (its ``client`` settings) on a cluster that needs one.
        self.login = login
        self.timeout_s = timeout_s
        self.fetch_wait_ms = fetch_wait_ms
        self.stats = TxnStats()
        self._connections: dict[tuple[str, tuple[str, int]], BrokerConnection] = {}
        self._coordinators: dict[str, tuple[str, int]] = {}
        self._leaders: dict[int, tuple[str, int]] = {}
        self._locks: dict[tuple[int, int], asyncio.Lock] = {}
        # partition -> (shard generation, next offset of the transaction topic to read)
        self._scan: dict[int, tuple[int, int]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.on_outcome: Callable[[bool], None] | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._resolve_loop(), name="txn-resolver")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # --- TxnOffsetCommit -------------------------------------------------------------------

    async def commit(
        self, request: TxnOffsetCommitRequest, topic_ids: dict[str, str | None], api_version: int = 0
    ) -> TxnOffsetCommitResponse:
        try:
            if not self.runtime.partitions:
                raise ShardNotAvailable(-1, ShardStatus.LOADING, "the process is starting")
            partition = partition_for(request.group_id, self.runtime.partitions)
            shard = self.runtime.shard(partition)
        except ShardNotAvailable as exc:
            return txn_commit_response(request, error_for(exc))
        # One commit of a producer at a time: each carries the sequence the previous one left.
        slot = (partition, request.producer_id)
        lock = self._locks.setdefault(slot, asyncio.Lock())
        try:
            async with lock:
                return await self._commit_locked(request, topic_ids, partition, shard, api_version)
        finally:
            if not lock.locked() and self._locks.get(slot) is lock:
                del self._locks[slot]  # one lock per producer only while its commits are in flight

    async def _commit_locked(
        self,
        request: TxnOffsetCommitRequest,
        topic_ids: dict[str, str | None],
        partition: int,
        shard: Shard[GroupCoordinatorState],
        api_version: int,
    ) -> TxnOffsetCommitResponse:
        try:
            # Checked on the live state before anything is sent; nothing is written on a refusal.
            error, sequence = shard.read_live(lambda live: self.handlers.validate_txn_commit(live, request, topic_ids))
            if error != ErrorCode.NONE:
                return self._refuse(request, error)
            if not transaction_v2(api_version):
                # Transaction version 1: the client form of AddPartitionsToTxn, as the client's own.
                await self._add_partition(request, partition, api_version)
            # Transaction version 2: the Produce itself makes the leader add the partition.
            txn_offset, written = await self._produce(request, partition, sequence, api_version)
            self._rewind(partition, shard.generation, txn_offset)
            response = await shard.write(
                lambda state, now: self.handlers.stage_txn_offsets(state, request, txn_offset, written, topic_ids, now)
            )
        except _Refused as exc:
            log.info("TxnOffsetCommit of %s for group %s refused: %s", request.transactional_id, request.group_id, exc)
            return self._refuse(request, exc.code)
        except ShardNotAvailable as exc:
            return txn_commit_response(request, error_for(exc))
        self.stats.staged += 1
        self._wake.set()
        return response

    def _refuse(self, request: TxnOffsetCommitRequest, code: ErrorCode) -> TxnOffsetCommitResponse:
        self.stats.refused[int(code)] = self.stats.refused.get(int(code), 0) + 1
        return txn_commit_response(request, code)

    async def _connection(self, purpose: str, address: tuple[str, int]) -> BrokerConnection:
        conn = self._connections.get((purpose, address))
        if conn is None or conn.expired:
            if conn is not None:
                conn.close()
            conn = await BrokerConnection.open(address, self.tls, self.timeout_s, self.login, CLIENT_ID)
            self._connections[(purpose, address)] = conn
        return conn

    async def _any_broker(self, purpose: str) -> BrokerConnection:
        failures = []
        for address in self.bootstrap:
            try:
                return await self._connection(purpose, address)
            except BrokerUnreachable as exc:
                failures.append(str(exc))
        raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no bootstrap server reachable: " + "; ".join(failures))

    async def _transaction_coordinator(self, transactional_id: str) -> BrokerConnection:
        address = self._coordinators.get(transactional_id)
        if address is None:
            try:
                conn = await self._any_broker("txn")
                found = await conn.call(
                    FindCoordinatorRequest(key=transactional_id, key_type=_TRANSACTION_KEY_TYPE),
                    FindCoordinatorResponse,
                    _FIND_COORDINATOR_VERSION,
                    self.timeout_s,
                )
            except BrokerUnreachable as exc:
                raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
            if found.error_code != ErrorCode.NONE:
                raise _Refused(client_error(found.error_code), f"FindCoordinator: {found.error_code}")
            address = (found.host, found.port)
            if len(self._coordinators) >= _MAX_CACHED_COORDINATORS:
                self._coordinators.clear()  # bounded: looked up again at the next commit of each
            self._coordinators[transactional_id] = address
        try:
            return await self._connection("txn", address)
        except BrokerUnreachable as exc:
            self._coordinators.pop(transactional_id, None)
            raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc

    async def _add_partition(self, request: TxnOffsetCommitRequest, partition: int, api_version: int) -> None:
        conn = await self._transaction_coordinator(request.transactional_id)
        try:
            answer = await conn.call(
                AddPartitionsToTxnRequest(
                    v3_and_below_transactional_id=request.transactional_id,
                    v3_and_below_producer_id=request.producer_id,
                    v3_and_below_producer_epoch=request.producer_epoch,
                    v3_and_below_topics=[AddPartitionsToTxnTopic(name=self.topic, partitions=[partition])],
                ),
                AddPartitionsToTxnResponse,
                _ADD_PARTITIONS_VERSION,
                self.timeout_s,
            )
        except BrokerUnreachable as exc:
            # Tansu closes the connection on some refusals (a fenced epoch at EndTxn): retriable.
            self._coordinators.pop(request.transactional_id, None)
            raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
        codes = [p.partition_error_code for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition]
        failed = next((c for c in codes if c != ErrorCode.NONE), None)
        if failed is not None:
            if failed in _RETRIABLE_COORDINATOR:
                self._coordinators.pop(request.transactional_id, None)
            raise _Refused(client_error(failed, api_version), f"AddPartitionsToTxn: {failed}")

    async def _leader(self, partition: int, refresh: bool = False) -> tuple[str, int]:
        if refresh or partition not in self._leaders:
            conn = await self._any_broker("meta")
            try:
                meta = await conn.call(
                    MetadataRequest(topics=[MetadataRequestTopic(name=self.topic)], allow_auto_topic_creation=False),
                    MetadataResponse,
                    _METADATA_VERSION,
                    self.timeout_s,
                )
            except BrokerUnreachable as exc:
                raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
            brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
            for t in meta.topics:
                for p in t.partitions:
                    if p.leader_id in brokers:
                        self._leaders[p.partition_index] = brokers[p.leader_id]
        if partition not in self._leaders:
            raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no leader for {self.topic}-{partition}")
        return self._leaders[partition]

    async def _produce(
        self, request: TxnOffsetCommitRequest, partition: int, sequence: Sequence, api_version: int
    ) -> tuple[int, Sequence]:
        """Write the transaction's record; (its offset, the sequence it carries). A duplicate
        sequence means an earlier write of this shard's counter landed without being staged (a
        failover in between): the next one is tried."""
        key = request.group_id.encode()
        value = json.dumps(
            {
                "group": request.group_id,
                "transactional_id": request.transactional_id,
                "offsets": {
                    f"{t.name}-{p.partition_index}": p.committed_offset for t in request.topics for p in t.partitions
                },
            },
            sort_keys=True,
        ).encode()
        refresh = False
        for _ in range(4):
            address = await self._leader(partition, refresh)
            batch = transactional_batch(key, value, request.producer_id, request.producer_epoch, sequence.sequence)
            try:
                conn = await self._connection("produce", address)
                answer = await conn.call(
                    ProduceRequest(
                        transactional_id=request.transactional_id,
                        acks=-1,
                        timeout_ms=int(self.timeout_s * 1000),
                        topic_data=[
                            ProduceRequestTopicProduceData(
                                name=self.topic,
                                partition_data=[ProduceRequestPartitionProduceData(index=partition, records=batch)],
                            )
                        ],
                    ),
                    ProduceResponse,
                    _PRODUCE_TV2_VERSION if transaction_v2(api_version) else _PRODUCE_VERSION,
                    self.timeout_s,
                )
            except BrokerUnreachable as exc:
                raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(exc)) from exc
            result = answer.responses[0].partition_responses[0]
            if result.error_code == ErrorCode.NONE:
                return result.base_offset, sequence
            if result.error_code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                sequence = Sequence(sequence.producer_epoch, sequence.sequence + 1)
                continue
            if result.error_code in _NOT_LEADER:
                refresh = True
                continue
            raise _Refused(
                client_error(result.error_code, api_version), f"Produce: {result.error_code} {result.error_message}"
            )
        raise _Refused(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the transaction record could not be written")

    # --- outcomes ----------------------------------------------------------------------------

    def _resolve(
        self, producer_id: int, marker_offset: int, committed: bool, state: GroupCoordinatorState, now_ms: int
    ) -> Result[None]:
        return self.handlers.resolve_txn(state, producer_id, marker_offset, committed, now_ms)

    def _rewind(self, partition: int, generation: int, txn_offset: int) -> None:
        """A record staged before where the resolver reads must be looked at again."""
        scan = self._scan.get(partition)
        if scan is not None and scan[0] == generation and scan[1] > txn_offset:
            self._scan[partition] = (generation, txn_offset)

    def _undecided(self) -> dict[int, int]:
        """partition -> where to read the transaction topic, for every active shard with staged offsets."""
        out: dict[int, int] = {}
        for partition, shard in list(self.runtime.shards.items()):
            if shard.status is not ShardStatus.ACTIVE:
                continue
            lowest = shard.committed.txn.lowest_txn_offset()
            if lowest is None:
                self._scan.pop(partition, None)
                continue
            scan = self._scan.get(partition)
            if scan is None or scan[0] != shard.generation:
                scan = (shard.generation, lowest)
                self._scan[partition] = scan
            out[partition] = max(scan[1], lowest)
        return out

    async def _resolve_loop(self) -> None:
        while True:
            try:
                wanted = self._undecided()
                if not wanted:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), 1.0)
                    continue
                if not await self.resolve_once(wanted):
                    await asyncio.sleep(self.fetch_wait_ms / 1000)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the resolver must outlive any one failure
                log.warning("transaction outcome reader: %r", exc)
                await asyncio.sleep(0.5)

    async def resolve_once(self, wanted: dict[int, int]) -> bool:
        """One Fetch per leader of the partitions in ``wanted``; outcomes found are written
        before returning. Whether anything was read."""
        by_leader: dict[tuple[str, int], dict[int, int]] = {}
        for partition, offset in wanted.items():
            try:
                by_leader.setdefault(await self._leader(partition), {})[partition] = offset
            except _Refused:
                continue
        progressed = False
        for address, partitions in by_leader.items():
            try:
                conn = await self._connection("fetch", address)
                answer = await conn.call(
                    FetchRequest(
                        replica_id=-1,
                        max_wait_ms=self.fetch_wait_ms,
                        min_bytes=1,
                        max_bytes=4 << 20,
                        isolation_level=0,
                        topics=[
                            FetchTopic(
                                topic=self.topic,
                                partitions=[
                                    FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                                    for p, o in sorted(partitions.items())
                                ],
                            )
                        ],
                    ),
                    FetchResponse,
                    _FETCH_VERSION,
                    self.timeout_s + self.fetch_wait_ms / 1000,
                )
            except (BrokerUnreachable, _Refused) as exc:
                log.info("transaction outcome reader: %s", exc)
                continue
            for topic in answer.responses:
                for data in topic.partitions:
                    if data.error_code != ErrorCode.NONE:
                        if data.error_code in _NOT_LEADER:
                            self._leaders.pop(data.partition_index, None)
                        log.warning(
                            "transaction outcome reader: %s-%d error %d",
                            self.topic,
                            data.partition_index,
                            data.error_code,
                        )
                        continue
                    if await self._apply(data.partition_index, partitions[data.partition_index], data.records):
                        progressed = True
        return progressed

    async def _apply(self, partition: int, start: int, records: bytes | None) -> bool:
        shard = self.runtime.shards.get(partition)
        if shard is None or shard.status is not ShardStatus.ACTIVE:
            return False
        generation = shard.generation
        position = start
        for head in batch_heads(records):
            if head.last_offset < position:
                continue
            if head.marker is not None:
                staged = shard.committed.txn.commits_of(head.producer_id)
                if any(c.key.txn_offset < head.base_offset for c in staged):
                    committed = head.marker == COMMIT_MARKER
                    try:
                        await shard.write(
                            functools.partial(self._resolve, head.producer_id, head.base_offset, committed)
                        )
                    except ShardNotAvailable:
                        return False
                    if committed:
                        self.stats.committed += 1
                    else:
                        self.stats.aborted += 1
                    if self.on_outcome is not None:
                        self.on_outcome(committed)
            position = head.last_offset + 1
        if position == start:
            return False
        scan = self._scan.get(partition)
        if scan is not None and scan[0] == generation and shard.generation == generation:
            self._scan[partition] = (generation, max(scan[1], position))
        return True


def describe_pending(state: GroupCoordinatorState, group: str) -> dict[str, Any]:
    """Staged offsets of ``group`` by producer, for describe and the CLI."""
    out: dict[str, Any] = {}
    for producer_id, staged in state.txn.pending.items():
        for commit in staged.values():
            if commit.key.group == group:
                out.setdefault(str(producer_id), []).extend(
                    {"topic": o.topic, "partition": o.partition, "offset": o.offset} for o in commit.value.offsets
                )
    return out
