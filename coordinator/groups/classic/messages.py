"""JoinGroup (v0-9), SyncGroup (v0-5), Heartbeat (v0-4), LeaveGroup (v0-5), DescribeGroups and
ListGroups as plain dataclasses.

Field names are the published Kafka schema names in snake_case, so a gateway converts wire
messages mechanically. ``api_version`` and, for JoinGroup, ``client_id``/``client_host`` come from
the request header and the connection rather than the body; the rules depend on them
(MEMBER_ID_REQUIRED from v4, skip_assignment from v9, mandatory protocol names in SyncGroup v5).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.errors import ErrorCode

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


# --- JoinGroup ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    name: str
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    member_id: str = UNKNOWN_MEMBER_ID
    protocol_type: str = ""
    protocols: tuple[JoinGroupRequestProtocol, ...] = ()
    # v0 has no rebalance timeout; Kafka then uses the session timeout.
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    reason: str | None = None
    api_version: int = 9
    client_id: str = ""
    client_host: str = ""
    # Random bytes from the service for the member id it may hand out (see RequestContext.nonce).
    nonce: bytes = b""
    # See RequestContext.may_describe_topic: a classic member joining a consumer group may
    # trigger the resolution of the group's regexes.
    may_describe_topic: Callable[[str], bool] | None = None

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return (
            self.session_timeout_ms
            if self.api_version == 0 or self.rebalance_timeout_ms < 0
            else self.rebalance_timeout_ms
        )


@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error_code: int = ErrorCode.NONE
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()
    throttle_time_ms: int = 0


# --- SyncGroup ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()
    api_version: int = 5


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error_code: int = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    throttle_time_ms: int = 0


# --- Heartbeat ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    api_version: int = 4


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error_code: int = ErrorCode.NONE
    throttle_time_ms: int = 0


# --- LeaveGroup -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    # v0-2 name one member here; v3+ use ``members``.
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[MemberIdentity, ...] = ()
    api_version: int = 5

    def identities(self) -> tuple[MemberIdentity, ...]:
        if self.api_version < LEAVE_BATCH_VERSION:
            return (MemberIdentity(member_id=self.member_id),)
        return self.members


@dataclass(frozen=True, slots=True)
class LeaveGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    error_code: int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error_code: int = ErrorCode.NONE
    members: tuple[LeaveGroupResponseMember, ...] = ()
    throttle_time_ms: int = 0


# --- DescribeGroups / ListGroups ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...] = ()
    include_authorized_operations: bool = False
    api_version: int = 6


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = -(2**31)


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...] = ()
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: int = ErrorCode.NONE
    groups: tuple[ListedGroup, ...] = field(default_factory=tuple)
    throttle_time_ms: int = 0
