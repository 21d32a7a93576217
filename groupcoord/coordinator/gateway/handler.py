"""The contract between the gateway and whatever answers the group APIs.

The gateway decodes each group request into its typed body (``groupcoord.coordinator.messages``),
calls ``GroupApiHandler.handle`` and encodes the returned body at the request's version. The
handler never sees bytes, sockets or headers beyond ``ConnectionContext``; the gateway never looks
inside group state.

Request -> response classes (API key): OffsetCommit (8), OffsetFetch (9), JoinGroup (11),
Heartbeat (12), LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16),
TxnOffsetCommit (28), DeleteGroups (42), OffsetDelete (47), ConsumerGroupHeartbeat (68),
ConsumerGroupDescribe (69), and with share groups enabled ShareGroupHeartbeat (76),
ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79), DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92): ``<Name>Request`` in,
``<Name>Response`` out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.messages.schema import Message


@dataclass(frozen=True, slots=True)
class ConnectionContext:
    """What the gateway knows of one request beyond its body: the header and the connection it
    came on (peer, listener, principal). The group logic's own ``groups.context.RequestContext``
    is built from it by the service (``service/gateway_handler.py:_facts``)."""

    header: RequestHeader
    client_host: str
    client_port: int
    # The sidecar port the request arrived on (the main listener or a per-broker listener).
    listener_port: int
    # The authenticated user name (Kafka principal "User:<name>"), None when not authenticated.
    principal: str | None = None
    # The client connection (an unguessable id; for a request relayed by another sidecar process
    # from a client, that client's connection there). ``GatewayServer.disconnect_listeners`` hear
    # it when it closes.
    connection_id: str = ""
    # Set by an authorizing handler: the topics this principal may DESCRIBE (what a regex
    # subscription may resolve to). None: no authorizer.
    may_describe_topic: Callable[[str], bool] | None = None

    @property
    def api_key(self) -> int:
        return self.header.api_key

    @property
    def api_version(self) -> int:
        return self.header.api_version


class GroupApiHandler(Protocol):
    async def handle(self, context: ConnectionContext, request: Message) -> Message:
        """Answer one group request.

        Must return an instance of the response class paired with ``type(request)`` (see
        ``groupcoord.coordinator.gateway.apis.APIS``); fields absent at ``context.api_version`` are ignored
        when encoding. Calls for one client connection are made one at a time, in request order,
        as a Kafka broker does. Raising closes that client connection. A call is never cancelled
        because its client disconnected: it runs to the end and its answer is dropped.
        """
        ...


# What ``answer_now`` gives: the answer itself, an awaitable of it (the request was taken and its
# answer comes later), or None (not taken: call ``handle``).
AnswerNow = Message | Awaitable[Message] | None


class ImmediateHandler(Protocol):
    """Optionally implemented by a ``GroupApiHandler`` beside ``handle``: its answer without
    awaiting, for the requests whose answer needs nothing to be written (a steady heartbeat)."""

    def answer_now(self, context: ConnectionContext, request: Message) -> AnswerNow:
        """What ``handle`` would answer, given at once when that needs no waiting; an awaitable
        of it once the request is taken (it is then never passed to ``handle``); None when the
        request is not taken here (nothing was done: pass it to ``handle``). Never an answer that
        rests on a state change before that change is durable, as for ``handle``."""
        ...


def answer_now_of(handler: object) -> Callable[[ConnectionContext, Message], AnswerNow] | None:
    """The handler's ``answer_now``, None if it has none (it then takes every request by ``handle``)."""
    answer_now: Callable[[ConnectionContext, Message], AnswerNow] | None = getattr(handler, "answer_now", None)
    return answer_now


@dataclass(frozen=True, slots=True)
class CoordinatorAddress:
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None


class CoordinatorLocator(Protocol):
    """Which process coordinates a group; the gateway defaults to "this sidecar"."""

    def locate(self, group_id: str) -> CoordinatorAddress: ...
