"""Version rules of the classic protocol's requests, and the few readings of a request that
depend on them.

JoinGroup (v0-9), SyncGroup (v0-5), Heartbeat (v0-4), LeaveGroup (v0-5), DescribeGroups and
ListGroups arrive as the generated classes of ``groupcoord.coordinator.messages``; what Kafka takes from
the request header and the connection (the API version, client id and host) travels beside them
in ``RequestContext``. The rules depend on the version: MEMBER_ID_REQUIRED from v4,
skip_assignment from v9, mandatory protocol names in SyncGroup v5, batched leaves from v3.
"""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.join_group import JoinGroupRequest, JoinGroupResponse
from groupcoord.coordinator.messages.leave_group import LeaveGroupRequest, LeaveGroupRequestMemberIdentity

UNKNOWN_MEMBER_ID = ""
# JoinGroup v4+: a dynamic member without an id is handed one and must rejoin with it.
JOIN_REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
# JoinGroup v9+: a static leader rejoining a stable group may skip the assignment.
JOIN_SUPPORTS_SKIP_ASSIGNMENT_VERSION = 9
# SyncGroup v5+: protocol type and name are mandatory and checked against the group's.
SYNC_REQUIRES_PROTOCOL_VERSION = 5
# LeaveGroup v3+: a batch of member identities instead of a single member id.
LEAVE_BATCH_VERSION = 3
# DescribeGroups v6+ (KIP-1043): an unknown group is an error rather than a "Dead" entry.
DESCRIBE_GROUP_NOT_FOUND_VERSION = 6


def effective_rebalance_timeout_ms(request: JoinGroupRequest, api_version: int) -> int:
    """v0 has no rebalance timeout; Kafka then uses the session timeout."""
    if api_version == 0 or request.rebalance_timeout_ms < 0:
        return request.session_timeout_ms
    return request.rebalance_timeout_ms


def leave_identities(request: LeaveGroupRequest, api_version: int) -> list[LeaveGroupRequestMemberIdentity]:
    """The members a LeaveGroup names: one member id before v3, a batch from v3."""
    if api_version < LEAVE_BATCH_VERSION:
        return [LeaveGroupRequestMemberIdentity(member_id=request.member_id)]
    return request.members


def join_error(member_id: str, error: ErrorCode) -> JoinGroupResponse:
    """A JoinGroup refusal: no generation, no protocol (null from v7; the edge writes "" before)."""
    return JoinGroupResponse(error_code=error, member_id=member_id, protocol_name=None)
