"""ShareGroupDescribe (Kafka's GroupMetadataManager.shareGroupDescribe and ShareGroup.asDescribedGroup)."""

from __future__ import annotations

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.share.group import ShareGroup
from groupcoord.coordinator.groups.share.heartbeat import ASSIGNOR
from groupcoord.coordinator.groups.topics import TopicsImage
from groupcoord.coordinator.messages.schema import topic_id_uuid
from groupcoord.coordinator.messages.share_group_describe import (
    ShareGroupDescribeResponseAssignment,
    ShareGroupDescribeResponseDescribedGroup,
    ShareGroupDescribeResponseMember,
    ShareGroupDescribeResponseTopicPartitions,
)

# Upper bounds of the encoded parts that do not depend on strings (as consumer/describe.py).
_MEMBER_FIXED_BYTES = 48
_TOPIC_BYTES = 16 + 256 + 8
_PARTITION_BYTES = 4
_GROUP_FIXED_BYTES = 128


def describe_share_group(
    group_id: str, group: ShareGroup | None, known: bool, image: TopicsImage
) -> ShareGroupDescribeResponseDescribedGroup:
    """One group's entry; ``known``: the id names a group of another type (or offsets only)."""
    if not group_id:
        return ShareGroupDescribeResponseDescribedGroup(error_code=int(ErrorCode.INVALID_GROUP_ID))
    if group is None:
        message = f"Group {group_id} is not a share group." if known else f"Group {group_id} not found."
        return ShareGroupDescribeResponseDescribedGroup(
            group_id=group_id, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND), error_message=message
        )
    members = []
    for mid in sorted(group.members):
        m = group.members[mid]
        members.append(
            ShareGroupDescribeResponseMember(
                member_id=mid,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                assignment=ShareGroupDescribeResponseAssignment(
                    topic_partitions=[
                        ShareGroupDescribeResponseTopicPartitions(
                            topic_id=topic_id_uuid(t), topic_name=name, partitions=sorted(ps)
                        )
                        for t, ps in sorted(m.assigned.items())
                        # A topic deleted since is left out, as Kafka's topicPartitionsFromMap does.
                        if ps and (name := image.topic_name(t)) is not None
                    ]
                ),
            )
        )
    return ShareGroupDescribeResponseDescribedGroup(
        group_id=group_id,
        group_state=group.state().value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=ASSIGNOR.name,
        members=members,
    )


def describe_size(group_id: str, group: ShareGroup | None) -> int:
    """An upper bound of the bytes ``describe_share_group`` encodes, from the group's state alone,
    so that an answer too large to send is refused before it is built."""
    size = _GROUP_FIXED_BYTES + len(group_id)
    if group is None:
        return size
    for mid, m in group.members.items():
        size += _MEMBER_FIXED_BYTES + len(mid) + len(m.rack_id or "") + len(m.client_id) + len(m.client_host)
        size += sum(len(t) + 2 for t in m.subscribed_topic_names)
        size += sum(_TOPIC_BYTES + _PARTITION_BYTES * len(ps) for ps in m.assigned.values())
    return size
