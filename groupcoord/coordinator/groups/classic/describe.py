"""DescribeGroups and ListGroups answers for classic groups (read-only)."""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.classic.group import DEAD, STABLE, ClassicGroup
from groupcoord.coordinator.groups.classic.requests import DESCRIBE_GROUP_NOT_FOUND_VERSION
from groupcoord.coordinator.groups.classic.state import ClassicGroupsState
from groupcoord.coordinator.messages.describe_groups import (
    DescribeGroupsResponseDescribedGroup as DescribedGroup,
)
from groupcoord.coordinator.messages.describe_groups import (
    DescribeGroupsResponseDescribedGroupMember as DescribedGroupMember,
)
from groupcoord.coordinator.messages.list_groups import ListGroupsResponseListedGroup as ListedGroup

GROUP_TYPE = "classic"


def describe_group(group: ClassicGroup) -> DescribedGroup:
    # Member metadata only means something once a protocol is chosen and settled (Stable).
    with_metadata = group.state is STABLE and group.protocol_name is not None
    members = [
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if with_metadata else b"",
            member_assignment=m.assignment,
        )
        for m in group.members.values()
    ]
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if with_metadata else "",
        members=members,
    )


# Upper bounds of a described member's and group's fixed fields and framing (DescribeGroups).
_MEMBER_FIXED_BYTES = 32
_GROUP_FIXED_BYTES = 128


def describe_size(state: ClassicGroupsState, group_id: str) -> int:
    """An upper bound of the bytes ``describe_groups`` encodes for ``group_id``, from the group's
    state alone, so that an answer too large to send is refused before it is built. Counts every
    protocol's metadata of a member, of which the answer carries one."""
    group = state.groups.get(group_id)
    size = _GROUP_FIXED_BYTES + len(group_id)
    if group is None:
        return size
    size += len(group.protocol_type or "") + len(group.protocol_name or "")
    for m in group.members.values():
        size += _MEMBER_FIXED_BYTES + len(m.member_id) + len(m.group_instance_id or "")
        size += len(m.client_id) + len(m.client_host) + len(m.assignment)
        size += sum(len(p.metadata) for p in m.supported_protocols)
    return size


def describe_groups(state: ClassicGroupsState, group_ids: Iterable[str], api_version: int = 6) -> list[DescribedGroup]:
    """One entry per id; an unknown id is described as Dead (v0-5) or GROUP_ID_NOT_FOUND (v6+)."""
    out = []
    for group_id in group_ids:
        group = state.groups.get(group_id)
        if group is not None:
            out.append(describe_group(group))
        elif api_version >= DESCRIBE_GROUP_NOT_FOUND_VERSION:
            out.append(
                DescribedGroup(
                    group_id=group_id,
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                    group_state=DEAD.value,
                )
            )
        else:
            out.append(DescribedGroup(group_id=group_id, group_state=DEAD.value))
    return out


def list_groups(
    state: ClassicGroupsState, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
) -> list[ListedGroup]:
    """Filters match case-insensitively, as Kafka lower-cases both sides."""
    states = {s.lower() for s in states_filter}
    types = {t.lower() for t in types_filter}
    if types and GROUP_TYPE not in types:
        return []
    return [
        ListedGroup(
            group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value, group_type=GROUP_TYPE
        )
        for g in state.groups.values()
        if not states or g.state.lower_name in states
    ]
