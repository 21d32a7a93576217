"""Remove a member from a classic group of the backing cluster on its behalf (LeaveGroup).

Placement uses it to hand a dead process's shards over at once (``groupcoord/coordinator/runtime/peers.py``)
and to leave at a graceful stop with static membership (librdkafka sends no LeaveGroup for a
static member). Kafka's group coordinator accepts a LeaveGroup naming any member of the group: it
is how ``kafka-consumer-groups --delete-members`` (AdminClient ``removeMembersFromConsumerGroup``,
KIP-345) removes static members. The request goes on a plain (or TLS) connection of its own: a
cluster that authenticates with SASL is not reached here, and placement then waits for the session
timeout as before (``MemberRemover.available``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from groupcoord.coordinator.gateway.apis import ApiKey
from groupcoord.coordinator.gateway.cluster import fetch_api_versions
from groupcoord.coordinator.gateway.framing import RequestHeader
from groupcoord.coordinator.gateway.protocol import decode_response, encode_request
from groupcoord.coordinator.gateway.upstream import MAX_UPSTREAM_FRAME, open_stream, read_frame
from groupcoord.coordinator.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from groupcoord.coordinator.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from groupcoord.coordinator.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
)
from groupcoord.coordinator.messages.schema import Message

log = logging.getLogger(__name__)

T = TypeVar("T")

_CLIENT_ID = "groupcoord-placement"
# Kafka's answers that mean "that member is not (or no longer) in the group": the removal is done.
UNKNOWN_MEMBER_ID = 25
FENCED_INSTANCE_ID = 82
# Returned, without a LeaveGroup, while the group is not Stable: a rebalance under way removes a
# member that does not rejoin by itself, and the local broker (Tansu) was seen to stall for minutes
# when a member was removed in the middle of one. The caller tries again later.
REBALANCE_IN_PROGRESS = 27
# Group states with no member (Kafka's names): a removal has nothing to do there, and a group of
# dead processes (every process killed at once) ends in one of them once their sessions time out.
_MEMBERLESS = ("Empty", "Dead")


@dataclass(frozen=True, slots=True)
class Member:
    group_id: str
    member_id: str
    instance_id: str | None = None


class RemovalFailed(Exception):
    pass


class MemberRemover:
    def __init__(self, bootstrap: list[tuple[str, int]], tls: ssl.SSLContext | None, timeout: float = 5.0) -> None:
        self.bootstrap = bootstrap
        self.tls = tls
        self.timeout = timeout

    async def remove(self, member: Member, reason: str, only_if_stable: bool = True) -> int:
        """Send the LeaveGroup; its error code for the member (0: removed; UNKNOWN_MEMBER_ID: was
        not there; REBALANCE_IN_PROGRESS: not sent, the group is rebalancing). Raises
        ``RemovalFailed`` when no broker could be asked."""
        return await self._via_any(lambda address: self._remove_via(address, member, reason, only_if_stable), 4)

    async def remove_many(self, members: list[Member], reason: str) -> dict[str, int]:
        """One LeaveGroup naming every member of ``members`` (all of one group, dynamic), sent only
        while the group is Stable: member id -> its error code (0: removed; UNKNOWN_MEMBER_ID: was
        not there); every one REBALANCE_IN_PROGRESS when not sent. Removed together, dead members
        cost the group one rebalance with nobody to wait for, where one at a time the broker waits
        for the others in the first one's rebalance, until its timeout. Raises ``RemovalFailed``
        when no broker could be asked, or when the cluster's LeaveGroup names one member only (v3)."""
        return await self._via_any(lambda address: self._remove_many_via(address, members, reason), 4)

    async def _remove_many_via(self, address: tuple[str, int], members: list[Member], reason: str) -> dict[str, int]:
        group_id = members[0].group_id
        ranges, coordinator, state = await self._described(address, group_id)
        if state in _MEMBERLESS:
            return {m.member_id: UNKNOWN_MEMBER_ID for m in members}
        if state != "Stable":
            return {m.member_id: REBALANCE_IN_PROGRESS for m in members}
        leave_version = _version(ranges, ApiKey.LEAVE_GROUP, 5)
        if leave_version < 3:
            raise RemovalFailed("the cluster's LeaveGroup predates removing several members (v3)")
        identities = [
            LeaveGroupRequestMemberIdentity(member_id=m.member_id, group_instance_id=m.instance_id, reason=reason)
            for m in members
        ]
        answer = await self._call(
            coordinator, ApiKey.LEAVE_GROUP, leave_version, LeaveGroupRequest(group_id=group_id, members=identities)
        )
        assert isinstance(answer, LeaveGroupResponse)
        if answer.error_code != 0:
            return {m.member_id: int(answer.error_code) for m in members}
        codes = {r.member_id: int(r.error_code) for r in answer.members}
        return {m.member_id: codes.get(m.member_id, UNKNOWN_MEMBER_ID) for m in members}

    async def group_state(self, group_id: str) -> str:
        """The group's state as its coordinator describes it ("Stable", "PreparingRebalance", ...;
        empty when it does not say). Raises ``RemovalFailed`` when no broker could be asked."""
        _, _, state = await self._via_any(lambda address: self._described(address, group_id), 3)
        return state

    async def _via_any(self, call: Callable[[tuple[str, int]], Awaitable[T]], round_trips: int) -> T:
        """``call`` through the first bootstrap broker that answers it (each given
        ``round_trips`` timeouts); ``RemovalFailed`` when none does."""
        failures: list[str] = []
        for address in self.bootstrap:
            try:
                return await asyncio.wait_for(call(address), round_trips * self.timeout)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, RemovalFailed) as exc:
                failures.append(f"{address[0]}:{address[1]}: {exc!r}")
        raise RemovalFailed("; ".join(failures))

    async def _described(
        self, address: tuple[str, int], group_id: str
    ) -> tuple[dict[int, tuple[int, int]], tuple[str, int], str]:
        """The cluster's API version ranges, the group's coordinator and the group's state."""
        ranges = {
            k.api_key: (k.min_version, k.max_version)
            for k in (await fetch_api_versions(address, self.tls, self.timeout)).api_keys
        }
        find_version = _version(ranges, ApiKey.FIND_COORDINATOR, 3)
        find = FindCoordinatorRequest(key=group_id, key_type=0)
        found = await self._call(address, ApiKey.FIND_COORDINATOR, find_version, find)
        assert isinstance(found, FindCoordinatorResponse)
        if found.error_code != 0:
            raise RemovalFailed(f"FindCoordinator: error {found.error_code}")
        coordinator = (found.host, found.port)
        describe_version = _version(ranges, ApiKey.DESCRIBE_GROUPS, 5)
        described = await self._call(
            coordinator, ApiKey.DESCRIBE_GROUPS, describe_version, DescribeGroupsRequest(groups=[group_id])
        )
        assert isinstance(described, DescribeGroupsResponse)
        return ranges, coordinator, described.groups[0].group_state if described.groups else ""

    async def _remove_via(self, address: tuple[str, int], member: Member, reason: str, only_if_stable: bool) -> int:
        ranges, coordinator, state = await self._described(address, member.group_id)
        if state in _MEMBERLESS:
            return UNKNOWN_MEMBER_ID  # no member at all (every one left or timed out): nothing to remove
        if only_if_stable and state != "Stable":
            return REBALANCE_IN_PROGRESS
        leave_version = _version(ranges, ApiKey.LEAVE_GROUP, 5)
        if leave_version >= 3:
            identity = LeaveGroupRequestMemberIdentity(
                member_id=member.member_id, group_instance_id=member.instance_id, reason=reason
            )
            leave = LeaveGroupRequest(group_id=member.group_id, members=[identity])
        elif member.instance_id is None:
            leave = LeaveGroupRequest(group_id=member.group_id, member_id=member.member_id)
        else:
            raise RemovalFailed("the cluster's LeaveGroup predates static members (v3)")
        answer = await self._call(coordinator, ApiKey.LEAVE_GROUP, leave_version, leave)
        assert isinstance(answer, LeaveGroupResponse)
        if answer.error_code != 0 or leave_version < 3:
            return int(answer.error_code)
        return int(answer.members[0].error_code) if answer.members else 0

    async def _call(self, address: tuple[str, int], api_key: int, version: int, body: Message) -> Message:
        reader, writer = await open_stream(address, self.tls, self.timeout)
        try:
            writer.write(encode_request(RequestHeader(api_key, version, 1, _CLIENT_ID), body))
            await writer.drain()
            payload = await asyncio.wait_for(read_frame(reader, MAX_UPSTREAM_FRAME), self.timeout)
            return decode_response(api_key, version, payload)[1]
        finally:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()


def _version(ranges: dict[int, tuple[int, int]], api_key: int, highest: int) -> int:
    if api_key not in ranges:
        raise RemovalFailed(f"the cluster does not offer API {api_key}")
    low, high = ranges[api_key]
    version = min(high, highest)
    if version < low:
        raise RemovalFailed(f"the cluster offers API {api_key} only from v{low}")
    return version
