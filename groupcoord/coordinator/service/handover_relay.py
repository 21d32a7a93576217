"""A stopping process relays its moved groups' requests to their successor (issue #26, item 5).

At a graceful stop the process's shards stop serving here and a successor loads each of them
(``runtime/handover.py``). Answered NOT_COORDINATOR meanwhile, a client looks its coordinator up
again, and librdkafka spaces those lookups: an answer that is not yet right (the stopping process
itself, or "not available" while the successor is not known everywhere) costs it half a second to a
second before it asks again, which was the tail of a graceful stop's recovery.

So while it stops, this process keeps answering on the connections it has:

- a request for a group of a shard being handed over, answered NOT_COORDINATOR here, waits until
  the successor is named (bounded) and is then relayed to the successor, whose answer is the
  client's (COORDINATOR_LOAD_IN_PROGRESS while it loads: the client retries on the same connection,
  no lookup). Relaying the request is what the client would do on NOT_COORDINATOR: send it again,
  unchanged, to the next coordinator; nothing in it was applied here (the shard stopped serving);
- once the successor has answered one of a shard's requests without a coordinator error (it
  serves), the shard's requests get NOT_COORDINATOR again: a client then looks up at once and
  every process, this one included, names the successor, so it moves while this process still
  listens (rather than when the listener closes, which librdkafka may notice only at its next
  one-second tick);
- the process closes its listener once no request for a moved shard came for ``quiet_s`` (bounded).

Only single-group requests that are answered at once are relayed (OffsetCommit, OffsetFetch of one
group, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat); JoinGroup and SyncGroup wait on a rebalance
and keep their NOT_COORDINATOR. Relays are anonymous (``gateway/relay.py``), so as for the other
relays only plain listeners relay; a relayed request is never relayed again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import fields, is_dataclass
from typing import Any

from groupcoord.coordinator import steady_answers
from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.handler import AnswerNow, ConnectionContext, GroupApiHandler, answer_now_of
from groupcoord.coordinator.gateway.relay import RELAY_CLIENT_ID, relay
from groupcoord.coordinator.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages.heartbeat import HeartbeatRequest
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest
from groupcoord.coordinator.messages.offset_commit import OffsetCommitRequest
from groupcoord.coordinator.messages.offset_fetch import OffsetFetchRequest
from groupcoord.coordinator.messages.schema import Message

log = logging.getLogger(__name__)

# (host, port, header, body, timeout) -> the answer; raises OSError, TimeoutError or ValueError.
RelayCall = Callable[[str, int, RequestHeader, Message, float], Awaitable[Message]]
# shard -> where its successor listens; None while none is named.
SuccessorOf = Callable[[int], tuple[str, int] | None]

_MOVING = frozenset({int(ErrorCode.NOT_COORDINATOR), int(ErrorCode.COORDINATOR_NOT_AVAILABLE)})
# What says the answering process does not serve the group (yet).
_NOT_SERVING = _MOVING | {int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)}


def error_codes(message: Any) -> set[int]:
    """Every ``error_code`` in a decoded message, nested ones included."""
    found: set[int] = set()
    stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(x for x in item if isinstance(x, list) or is_dataclass(x))
        elif is_dataclass(item):
            for f in fields(item):
                child = getattr(item, f.name)
                if f.name == "error_code" and isinstance(child, int):
                    found.add(child)
                elif isinstance(child, list) or is_dataclass(child):
                    stack.append(child)
    return found


def group_of(request: Message) -> str | None:
    """The one group a relayable request is about; None for any other request."""
    if isinstance(request, OffsetFetchRequest):
        if request.groups:
            return request.groups[0].group_id if len(request.groups) == 1 else None
        return request.group_id or None
    if isinstance(request, OffsetCommitRequest | HeartbeatRequest | LeaveGroupRequest | ConsumerGroupHeartbeatRequest):
        return request.group_id or None
    return None


class HandoverRelay:
    """The group handler of a process; see the module docstring. ``enabled`` and ``successor_of``
    are set by the server once it knows its listeners and its placement."""

    def __init__(
        self,
        inner: GroupApiHandler,
        partition_of: Callable[[str], int],
        call: RelayCall = relay,
        timeout_s: float = 10.0,
        successor_wait_s: float = 3.0,
    ) -> None:
        self.inner = inner
        self.partition_of = partition_of
        self.call = call
        self.timeout_s = timeout_s
        self.successor_wait_s = successor_wait_s
        self.enabled = False
        self.successor_of: SuccessorOf | None = None
        self._stopping: frozenset[int] = frozenset()
        self._gave_up = False
        self._serving: set[int] = set()  # shards whose successor answered without a coordinator error
        self._last_request = 0.0
        self.relayed = 0
        # The check a steady answer given here keeps (``steady_answers``): one for every answer.
        self._serving_here = self._serves_here

    def stopping(self, shards: Iterable[int]) -> None:
        """The process stops: ``shards`` are being handed over (call before they stop serving)."""
        self._stopping = frozenset(shards)
        self._last_request = time.monotonic()

    def give_up(self) -> None:
        """No successor is coming (nobody else runs, or the handover failed): answer as before."""
        self._gave_up = True

    async def settled(self, quiet_s: float = 0.5, cap_s: float = 3.0) -> None:
        """Return once no request for a moved shard came for ``quiet_s``, or after ``cap_s``."""
        deadline = time.monotonic() + cap_s
        while not self._gave_up and (now := time.monotonic()) < deadline:
            if now - self._last_request >= quiet_s:
                return
            await asyncio.sleep(min(quiet_s, deadline - now) / 3)

    def _serves_here(self) -> bool:
        return not (self._stopping and self.enabled and not self._gave_up)

    def answer_now(self, context: ConnectionContext, request: Message) -> AnswerNow:
        """The wrapped handler's ``answer_now`` while the process does not stop; None (so
        ``handle``, which relays) from the moment it does. Without it every request the gateway
        offers as it arrives (a steady ConsumerGroupHeartbeat) was decoded, refused here, and
        decoded again by the reader: the at-once path never ran in ``serve``."""
        answer_now = answer_now_of(self.inner)
        if answer_now is None or not self._serves_here():
            return None
        answer = answer_now(context, request)
        if answer is None:
            return None
        if isinstance(answer, Message):
            # A repeat is relayed (``handle``) once the process begins to stop, as this one would be.
            steady_answers.vouch(answer, self._serving_here)
            return answer
        # Taken, answered once its records are read back: the stop may have begun by then.
        return self._relayed_if_moved(context, request, answer)

    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        return await self._relayed_if_moved(context, request, self.inner.handle(context, request))

    async def _relayed_if_moved(
        self, context: ConnectionContext, request: Message, answering: Awaitable[Message]
    ) -> Message:
        answer = await answering
        if not self._stopping or not self.enabled or self._gave_up:
            return answer
        group = group_of(request)
        if group is None or context.header.client_id == RELAY_CLIENT_ID:
            return answer
        partition = self.partition_of(group)
        if partition not in self._stopping or not error_codes(answer) & _MOVING:
            return answer
        self._last_request = time.monotonic()
        if partition in self._serving:
            return answer  # the successor serves: the client looks it up and moves now
        where = await self._successor(partition)
        if where is None:
            return answer
        try:
            relayed = await self.call(where[0], where[1], context.header, request, self.timeout_s)
        except (OSError, TimeoutError, ValueError) as exc:
            log.warning("relaying %s to the successor %s:%s failed: %r", type(request).__name__, *where, exc)
            return answer
        if not isinstance(relayed, type(answer)):
            return answer
        self.relayed += 1
        if not error_codes(relayed) & _NOT_SERVING:
            self._serving.add(partition)
        return relayed

    async def _successor(self, partition: int) -> tuple[str, int] | None:
        """Where the shard's successor listens, once named (the handover is written a moment
        after the shards stop serving); None if none is named within ``successor_wait_s``."""
        deadline = time.monotonic() + self.successor_wait_s
        while True:
            where = self.successor_of(partition) if self.successor_of is not None else None
            if where is not None or self._gave_up or time.monotonic() >= deadline:
                return where
            await asyncio.sleep(0.02)
