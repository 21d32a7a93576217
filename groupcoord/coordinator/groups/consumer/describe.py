"""Read-side views: ConsumerGroupDescribe, ListGroups states, and facts the offsets code needs."""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.config import ConsumerGroupConfig
from groupcoord.coordinator.groups.consumer.group import ConsumerGroupState
from groupcoord.coordinator.groups.consumer.requests import MEMBER_TYPE_CONSUMER, described_assignment
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.consumer_group_describe import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseDescribedGroup,
    ConsumerGroupDescribeResponseMember,
)

DEFAULT_CONFIG = ConsumerGroupConfig()


def consumer_group_describe(
    state: ConsumerGroupsState,
    group_ids: Iterable[str],
    metadata: TopicsImage | None = None,
    config: ConsumerGroupConfig = DEFAULT_CONFIG,
) -> ConsumerGroupDescribeResponse:
    """Describe groups; ``metadata`` supplies topic names (an unknown or absent topic gets "")."""
    if metadata is None:
        metadata = TopicsImage.empty()
    response = ConsumerGroupDescribeResponse()
    for gid in group_ids:
        group = state.group(gid)
        if not gid:
            response.groups.append(
                ConsumerGroupDescribeResponseDescribedGroup(
                    error_code=int(ErrorCode.INVALID_GROUP_ID), error_message="GroupId can't be empty."
                )
            )
            continue
        if group is None:
            response.groups.append(
                ConsumerGroupDescribeResponseDescribedGroup(
                    error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                    error_message=f"Group {gid} not found.",
                    group_id=gid,
                )
            )
            continue
        members = []
        for mid in sorted(group.members):
            m = group.members[mid]
            members.append(
                ConsumerGroupDescribeResponseMember(
                    member_id=mid,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    # Kafka's member default: "" for a member without a regex (classic members too).
                    subscribed_topic_regex=m.subscribed_topic_regex or "",
                    assignment=described_assignment(m.assigned_partitions(), metadata.topic_name),
                    target_assignment=described_assignment(group.target.get(mid, {}), metadata.topic_name),
                    # KIP-1099: 0 = a classic-protocol member inside the consumer group.
                    member_type=0 if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER,
                )
            )
        response.groups.append(
            ConsumerGroupDescribeResponseDescribedGroup(
                group_id=gid,
                group_state=group.state().value,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.preferred_assignor(config.assignors, config.default_assignor),
                members=members,
            )
        )
    return response


# Upper bounds of the encoded ConsumerGroupDescribe parts that do not depend on strings: a
# member's fixed fields and framing, a described topic (uuid, a name of at most 249 bytes, its
# framing), a partition index; and a group's fixed fields (state, epochs, assignor name).
_MEMBER_FIXED_BYTES = 64
_TOPIC_BYTES = 16 + 256 + 8
_PARTITION_BYTES = 4
_GROUP_FIXED_BYTES = 128


def describe_size(state: ConsumerGroupsState, group_id: str) -> int:
    """An upper bound of the bytes ``consumer_group_describe`` encodes for ``group_id``, from the
    group's state alone (members x their strings and assignments), so that an answer too large
    to send is refused before it is built."""
    group = state.group(group_id)
    size = _GROUP_FIXED_BYTES + len(group_id)
    if group is None:
        return size
    for mid, m in group.members.items():
        size += _MEMBER_FIXED_BYTES + len(mid) + len(m.instance_id or "") + len(m.rack_id or "")
        size += len(m.client_id) + len(m.client_host) + len(m.subscribed_topic_regex or "")
        size += sum(len(t) + 2 for t in m.subscribed_topic_names)
        for partitions in (m.assigned, group.target.get(mid, {})):
            size += sum(_TOPIC_BYTES + _PARTITION_BYTES * len(ps) for ps in partitions.values())
    return size


def list_group_states(state: ConsumerGroupsState, states_filter: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(group id, state) for ListGroups; ``states_filter`` matches Kafka's case-insensitive state names."""
    wanted = {s.lower() for s in states_filter} if states_filter else None
    out = []
    for gid in sorted(state.groups):
        s = state.groups[gid].state().value
        if wanted is None or s.lower() in wanted:
            out.append((gid, s))
    return out


def group_state(state: ConsumerGroupsState, group_id: str) -> ConsumerGroupState:
    group = state.group(group_id)
    return ConsumerGroupState.DEAD if group is None else group.state()


def group_exists(state: ConsumerGroupsState, group_id: str) -> bool:
    return group_id in state.groups


def is_group_empty(state: ConsumerGroupsState, group_id: str) -> bool:
    group = state.group(group_id)
    return group is None or not group.members


def subscribed_topic_names(state: ConsumerGroupsState, group_id: str) -> frozenset[str]:
    """Topics the group consumes (names and resolved regexes): their offsets must not expire."""
    group = state.group(group_id)
    return frozenset() if group is None else group.subscribed_topic_names()
