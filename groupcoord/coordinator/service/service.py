"""GroupCoordinatorService: routes each group request to the shard that owns the group.

It knows no group rules: it picks the shard, hands the request to a pure handler through the
shard's write or read path, and turns an unavailable shard into the Kafka error clients expect.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import operator
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Protocol, TypeVar

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.group_shard import (
    GroupCoordinatorShard,
    GroupCoordinatorState,
    GroupSummary,
    describe_classic_groups,
    describe_consumer_groups,
    describe_share_group,
    group_listing,
    offset_fetch_error,
)
from groupcoord.coordinator.groups import group_config
from groupcoord.coordinator.groups.classic.describe import describe_size as classic_describe_size
from groupcoord.coordinator.groups.classic.requests import join_error
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.describe import describe_size as consumer_describe_size
from groupcoord.coordinator.groups.context import RequestContext
from groupcoord.coordinator.groups.share import describe_size as share_describe_size
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseDescribedGroup,
)
from groupcoord.coordinator.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsResponseDescribedGroup
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequestGroup, OffsetFetchResponseGroup
from groupcoord.coordinator.messages.share_group_describe import ShareGroupDescribeResponseDescribedGroup
from groupcoord.coordinator.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.coordinator.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from groupcoord.coordinator.offsets.handlers import commit_response, fetch_offsets, fetch_size
from groupcoord.coordinator.runtime import collector
from groupcoord.coordinator.runtime.api import Result
from groupcoord.coordinator.runtime.runtime import CoordinatorRuntime
from groupcoord.coordinator.runtime.shard import AppendFailed, Shard, ShardNotAvailable, ShardStatus
from groupcoord.coordinator.service.answer_budget import (
    DEFAULT_MAX_ANSWER_BYTES,
    answer_each,
    first_occurrences,
    sorted_in_slices,
    take_in_slices,
)
from groupcoord.coordinator.service.partitioning import partition_for

T = TypeVar("T")
D = TypeVar("D")


class TxnCommitter(Protocol):
    """Where TxnOffsetCommit goes (``groupcoord.coordinator.txn.bridge.TxnBridge``)."""

    async def commit(
        self, request: TxnOffsetCommitRequest, topic_ids: dict[str, str | None], api_version: int = 0
    ) -> TxnOffsetCommitResponse: ...


_GROUP_ID = operator.attrgetter("group_id")

_STATUS_ERRORS = {
    ShardStatus.LOADING: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ShardStatus.FAILED: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ShardStatus.FENCED: ErrorCode.NOT_COORDINATOR,
    ShardStatus.CLOSED: ErrorCode.NOT_COORDINATOR,
    ShardStatus.ACTIVE: ErrorCode.NONE,
}


async def list_groups_answer(answers: list[ErrorCode | list[GroupSummary]]) -> tuple[int, list[GroupSummary]]:
    """ListGroups over the shards' answers, as Kafka's GroupCoordinatorService folds them: a shard
    that is not (or no longer) ours is left out silently, since its new owner lists it; any other
    failure (a shard still loading) answers that error with an empty list, so a client retries
    rather than taking a partial list for the whole. Sorted by group id in slices (a sort of
    100,000 ids in one go held the event loop 20-100 ms)."""
    groups: list[GroupSummary] = []
    for answer in answers:
        if isinstance(answer, ErrorCode):
            if answer != ErrorCode.NOT_COORDINATOR:
                return int(answer), []
            continue
        groups += answer
    return int(ErrorCode.NONE), await sorted_in_slices(groups, _GROUP_ID)


def _no_gap() -> ErrorCode:
    return ErrorCode.NONE


def error_for(exc: ShardNotAvailable) -> ErrorCode:
    if isinstance(exc, AppendFailed):  # as Kafka maps MESSAGE_TOO_LARGE from its log
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return _STATUS_ERRORS[exc.status]


def _describe_consumer(
    state: GroupCoordinatorState, ids: list[str], image: TopicsImage, config: ConsumerGroupConfig
) -> ConsumerGroupDescribeResponse:
    return describe_consumer_groups(state, ids, image, config)


def _fetch_key(group: OffsetFetchRequestGroup) -> Hashable:
    """Two OffsetFetch entries with this key get the same answer."""
    if group.topics is None:
        return (group.group_id, None)
    return (group.group_id, tuple((t.name, t.topic_id, tuple(t.partition_indexes)) for t in group.topics))


Op = Callable[[GroupCoordinatorState, int], Result[T]]


class GroupCoordinatorService:
    def __init__(
        self,
        runtime: CoordinatorRuntime[GroupCoordinatorState],
        handlers: GroupCoordinatorShard,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        self.runtime = runtime
        self.handlers = handlers
        # The most one group read request's answer may take (see ``answer_budget``).
        self.max_answer_bytes = max_answer_bytes
        # Parked requests are answered by token; tokens only need to be unique in this process.
        self._tokens = itertools.count()
        # TxnOffsetCommit's way into the cluster's transactions (``groupcoord.coordinator.txn.bridge.TxnBridge``),
        # set by ``groupcoord serve``; without one TxnOffsetCommit is answered COORDINATOR_NOT_AVAILABLE.
        self.txn: TxnCommitter | None = None
        # Why this process's part of a listing would leave groups out that no other process lists
        # either (NONE: it would not), as Kafka's ``isActive``: set by ``groupcoord serve`` from
        # placement (``listing_gap`` there).
        self.listing_gap: Callable[[], ErrorCode] = _no_gap

    def partition_for(self, group_id: str) -> int:
        if not self.runtime.partitions:
            # The listener is bound before the log topic is read (so a process that cannot
            # listen claims nothing); until then no shard can answer.
            raise ShardNotAvailable(-1, ShardStatus.LOADING, "the process is starting")
        return partition_for(group_id, self.runtime.partitions)

    def shard_for(self, group_id: str) -> Shard[GroupCoordinatorState]:
        return self.runtime.shard(self.partition_for(group_id))

    async def _write(self, group_id: str, op: Op[T], on_error: Callable[[ErrorCode], T]) -> T:
        try:
            return await self.shard_for(group_id).write(op)
        except ShardNotAvailable as exc:
            return on_error(error_for(exc))

    def _write_now(self, group_id: str, op: Op[T], on_error: Callable[[ErrorCode], T]) -> T | Awaitable[T]:
        """``_write``, with the answer at once when the write changes nothing (``Shard.write_now``)."""
        # An answer the shard offers for repeats (``steady_answers``) needs nothing more from
        # here: a group's shard is fixed, and a shard let go never serves again.
        try:
            answer = self.shard_for(group_id).write_now(op)
        except ShardNotAvailable as exc:
            return on_error(error_for(exc))
        return self._settled(answer, on_error) if isinstance(answer, asyncio.Future) else answer

    @staticmethod
    async def _settled(answer: Awaitable[T], on_error: Callable[[ErrorCode], T]) -> T:
        try:
            return await answer
        except ShardNotAvailable as exc:
            return on_error(error_for(exc))

    def _by_shard(self, group_ids: Iterable[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = defaultdict(list)
        for group_id in group_ids:
            out[self.partition_for(group_id)].append(group_id)
        return out

    # --- offsets -----------------------------------------------------------------------------

    async def commit_offsets(self, request: OffsetCommitRequest, context: RequestContext) -> OffsetCommitResponse:
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.commit_offsets(state, request, now, context),
            lambda code: commit_response(request, code),
        )

    async def fetch_offsets(
        self, groups: list[OffsetFetchRequestGroup], require_stable: bool = False
    ) -> list[OffsetFetchResponseGroup]:
        """Reads see only committed offsets (the shard's committed state). Identical entries are
        answered once, within the answer budget (``answer_budget``). With ``require_stable`` a
        partition with transactional offsets still staged answers UNSTABLE_OFFSET_COMMIT."""
        return await answer_each(
            groups,
            _fetch_key,
            lambda group: self._fetch_one(group, require_stable),
            lambda g, _: OffsetFetchResponseGroup(group_id=g.group_id, error_code=ErrorCode.UNKNOWN_SERVER_ERROR),
            self.max_answer_bytes,
        )

    def _fetch_one(
        self, group: OffsetFetchRequestGroup, require_stable: bool = False
    ) -> tuple[int, OffsetFetchResponseGroup]:
        """(upper bound of its size, the answer) of one OffsetFetch entry; a group too large for
        any answer is not built (its size alone says it will be refused)."""
        try:
            committed = self.shard_for(group.group_id).read(lambda state: state)
        except ShardNotAvailable as exc:
            return 0, OffsetFetchResponseGroup(group_id=group.group_id, error_code=error_for(exc))
        error = offset_fetch_error(committed, group)
        if error != ErrorCode.NONE:
            return 0, OffsetFetchResponseGroup(group_id=group.group_id, error_code=error)
        size = fetch_size(committed.offsets, group)
        if size > self.max_answer_bytes:
            return size, OffsetFetchResponseGroup(group_id=group.group_id, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        unstable = committed.txn.has_pending if require_stable else None
        return size, fetch_offsets(committed.offsets, group, unstable)

    async def delete_offsets(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.delete_offsets(state, request, now),
            lambda code: OffsetDeleteResponse(error_code=code),
        )

    async def topics_deleted(self, topics: list[tuple[str, str]]) -> None:
        """Drop the offsets of deleted topic incarnations in every shard this process owns."""
        futures = [
            shard.submit(lambda state, now: self.handlers.topics_deleted(state, topics))
            for shard in self.runtime.shards.values()
            if shard.status is ShardStatus.ACTIVE
        ]
        await asyncio.gather(*futures, return_exceptions=True)

    # --- group administration ----------------------------------------------------------------

    async def delete_groups(self, group_ids: list[str]) -> list[tuple[str, int]]:
        async def one_shard(partition: int, ids: list[str]) -> list[tuple[str, int]]:
            try:
                return await self.runtime.shard(partition).write(
                    lambda state, now: self.handlers.delete_groups(state, ids, now)
                )
            except ShardNotAvailable as exc:
                return [(g, int(error_for(exc))) for g in ids]

        # A group named twice is deleted once; both entries get its result.
        distinct = first_occurrences(group_ids)
        answers = await asyncio.gather(*(one_shard(p, ids) for p, ids in self._by_shard(distinct).items()))
        by_group = {g: code for answer in answers for g, code in answer}
        return [(g, by_group[g]) for g in group_ids]

    async def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> tuple[int, list[GroupSummary]]:
        """All groups of the shards this process owns (see ``list_groups_answer``), or the
        error of ``listing_gap``: COORDINATOR_NOT_AVAILABLE (retriable) rather than a list that
        silently lacks the groups of shards nobody serves now.

        A row per group, 100,000 of them for as many groups, all alive until the answer is
        sent: the young collection that their making set off walked them all (13-17 ms on the
        event loop, seen with a loop-stall detector in ``serve``). So the collector is held off
        while they are made, and they are frozen once made (``collector.freeze_answer``): no
        collection walks them, and reference counting frees them once the answer is sent."""
        gap = self.listing_gap()
        if gap:
            return int(gap), []
        states, types = tuple(states_filter), tuple(types_filter)
        answers: list[ErrorCode | list[GroupSummary]] = []
        with collector.collector_paused():
            # A copy: a shard may be added or dropped while a long listing lets other work run.
            for shard in list(self.runtime.shards.values()):
                try:
                    listing = shard.read_live(lambda live: group_listing(live, states, types))
                except ShardNotAvailable as exc:
                    answers.append(error_for(exc))
                    continue
                answers.append(await take_in_slices(listing))
            answer = await list_groups_answer(answers)
            collector.SHARED.freeze_answer(len(answer[1]))
        return answer

    async def describe_groups(
        self, group_ids: list[str], api_version: int
    ) -> list[DescribeGroupsResponseDescribedGroup]:
        """Each entry answered, duplicates with one answer, within the answer budget
        (``answer_budget``); read from the live state (a rebalance in progress is never written
        to the log)."""
        return await self._describe_each(
            group_ids, lambda g: self._describe_classic_one(g, api_version), DescribeGroupsResponseDescribedGroup
        )

    def _describe_classic_one(
        self, group_id: str, api_version: int
    ) -> tuple[int, DescribeGroupsResponseDescribedGroup]:
        try:
            shard = self.shard_for(group_id)
            size = shard.read_live(lambda live: classic_describe_size(live.classic, group_id))
            if size > self.max_answer_bytes:
                return size, DescribeGroupsResponseDescribedGroup(group_id=group_id)  # refused by its size
            (described,) = shard.read_live(
                functools.partial(describe_classic_groups, group_ids=[group_id], api_version=api_version)
            )
            return size, described
        except ShardNotAvailable as exc:
            return 0, DescribeGroupsResponseDescribedGroup(group_id=group_id, error_code=error_for(exc))

    # --- classic protocol --------------------------------------------------------------------

    async def join_group(self, request: JoinGroupRequest, context: RequestContext) -> JoinGroupResponse:
        token = ("join", next(self._tokens))
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.join_group(state, request, token, now, context),
            lambda code: join_error(request.member_id, code),
        )

    async def sync_group(self, request: SyncGroupRequest, context: RequestContext) -> SyncGroupResponse:
        token = ("sync", next(self._tokens))
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.sync_group(state, request, token, now, context),
            lambda code: SyncGroupResponse(error_code=code),
        )

    async def heartbeat(self, request: HeartbeatRequest, context: RequestContext) -> HeartbeatResponse:
        return await self._write(request.group_id, *self._classic_heartbeat(request, context))

    def heartbeat_now(
        self, request: HeartbeatRequest, context: RequestContext
    ) -> HeartbeatResponse | Awaitable[HeartbeatResponse]:
        """``heartbeat``, answered at once when it changes nothing (``_write_now``)."""
        return self._write_now(request.group_id, *self._classic_heartbeat(request, context))

    def _classic_heartbeat(
        self, request: HeartbeatRequest, context: RequestContext
    ) -> tuple[Op[HeartbeatResponse], Callable[[ErrorCode], HeartbeatResponse]]:
        return (
            lambda state, now: self.handlers.heartbeat(state, request, now, context),
            # Kafka's GroupCoordinatorService answers a classic Heartbeat NONE while the shard
            # loads, so that a loading coordinator is not stormed by rejoins.
            lambda code: HeartbeatResponse(
                error_code=ErrorCode.NONE if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else code
            ),
        )

    async def leave_group(self, request: LeaveGroupRequest, context: RequestContext) -> LeaveGroupResponse:
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.leave_group(state, request, now, context),
            lambda code: LeaveGroupResponse(error_code=code),
        )

    # --- consumer protocol -------------------------------------------------------------------

    async def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, context: RequestContext
    ) -> ConsumerGroupHeartbeatResponse:
        return await self._write(request.group_id, *self._consumer_heartbeat(request, context))

    def consumer_group_heartbeat_now(
        self, request: ConsumerGroupHeartbeatRequest, context: RequestContext
    ) -> ConsumerGroupHeartbeatResponse | Awaitable[ConsumerGroupHeartbeatResponse]:
        """``consumer_group_heartbeat``, answered at once when it changes nothing (``_write_now``)."""
        return self._write_now(request.group_id, *self._consumer_heartbeat(request, context))

    def _consumer_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, context: RequestContext
    ) -> tuple[Op[ConsumerGroupHeartbeatResponse], Callable[[ErrorCode], ConsumerGroupHeartbeatResponse]]:
        return (
            lambda state, now: self.handlers.consumer_group_heartbeat(state, request, now, context),
            lambda code: ConsumerGroupHeartbeatResponse(error_code=code),
        )

    async def consumer_group_describe(self, group_ids: list[str]) -> list[ConsumerGroupDescribeResponseDescribedGroup]:
        """Each entry answered, duplicates with one answer, within the answer budget (``answer_budget``)."""
        return await self._describe_each(
            group_ids, self._describe_consumer_one, ConsumerGroupDescribeResponseDescribedGroup
        )

    async def _describe_each(
        self, group_ids: list[str], one: Callable[[str], tuple[int, D]], entry: Callable[..., D]
    ) -> list[D]:
        """A describe's entries, each answered by ``one``, duplicates with one answer, within the
        answer budget (``answer_budget``); an entry over it is ``entry`` with UNKNOWN_SERVER_ERROR."""
        return await answer_each(
            group_ids,
            str,
            one,
            lambda g, why: entry(group_id=g, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=why),
            self.max_answer_bytes,
        )

    def _describe_consumer_one(self, group_id: str) -> tuple[int, ConsumerGroupDescribeResponseDescribedGroup]:
        try:
            shard = self.shard_for(group_id)
            size = shard.read(lambda state: consumer_describe_size(state.consumer, group_id))
            if size > self.max_answer_bytes:
                return size, ConsumerGroupDescribeResponseDescribedGroup(group_id=group_id)  # refused by its size
            image, config = self.handlers.metadata(), self.handlers.consumer_config
            response = shard.read(functools.partial(_describe_consumer, ids=[group_id], image=image, config=config))
            return size, response.groups[0]
        except ShardNotAvailable as exc:
            return 0, ConsumerGroupDescribeResponseDescribedGroup(error_code=error_for(exc), group_id=group_id)

    # --- share groups ------------------------------------------------------------------------

    async def share_group_heartbeat(
        self, request: ShareGroupHeartbeatRequest, context: RequestContext
    ) -> ShareGroupHeartbeatResponse:
        return await self._write(
            request.group_id,
            lambda state, now: self.handlers.share_group_heartbeat(state, request, now, context),
            lambda code: ShareGroupHeartbeatResponse(error_code=code),
        )

    async def share_group_describe(self, group_ids: list[str]) -> list[ShareGroupDescribeResponseDescribedGroup]:
        """Each entry answered, duplicates with one answer, within the answer budget (``answer_budget``);
        read from the committed state."""
        return await self._describe_each(group_ids, self._describe_share_one, ShareGroupDescribeResponseDescribedGroup)

    def _describe_share_one(self, group_id: str) -> tuple[int, ShareGroupDescribeResponseDescribedGroup]:
        if not group_id:
            # Kafka answers an empty id before any shard (INVALID_GROUP_ID).
            return 0, ShareGroupDescribeResponseDescribedGroup(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            committed = self.shard_for(group_id).read(lambda state: state)
        except ShardNotAvailable as exc:
            return 0, ShareGroupDescribeResponseDescribedGroup(error_code=error_for(exc), group_id=group_id)
        size = share_describe_size(group_id, committed.share.group(group_id))
        if size > self.max_answer_bytes:
            return size, ShareGroupDescribeResponseDescribedGroup(group_id=group_id)  # refused by its size
        return size, describe_share_group(committed, group_id, self.handlers.metadata())

    # --- group configs -----------------------------------------------------------------------

    async def alter_group_config(
        self,
        group_id: str,
        changes: list[group_config.ConfigChange] | None,
        replacement: list[tuple[str, str | None]] | None,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        """Through the group's shard, so the owner of the shard is the one writer of its configs."""
        return await self._write(
            group_id,
            lambda state, now: self.handlers.alter_group_config(state, group_id, changes, replacement, validate_only),
            lambda code: (int(code), None),
        )

    async def describe_group_configs(
        self, group_id: str, keys: list[str] | None
    ) -> tuple[int, list[group_config.DescribedConfig]]:
        """The group's configs as committed (an unknown group has only defaults, as in Kafka)."""
        try:
            overrides = self.shard_for(group_id).read(lambda state: state.group_configs.of(group_id))
        except ShardNotAvailable as exc:
            return int(error_for(exc)), []
        return int(ErrorCode.NONE), group_config.describe(
            overrides, self.handlers.consumer_config, keys, self.handlers.share_config
        )
