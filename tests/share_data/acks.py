"""ShareAcknowledge requests written as data, for the share data path's tests."""

from __future__ import annotations

import uuid

from groupcoord.coordinator.messages import share_acknowledge as sa

# (first, last, types) of one acknowledgement batch.
Batch = tuple[int, int, list[int]]


def ack_request(
    group: str, member: str, epoch: int, topics: dict[uuid.UUID, dict[int, list[Batch]]]
) -> sa.ShareAcknowledgeRequest:
    return sa.ShareAcknowledgeRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            sa.ShareAcknowledgeRequestAcknowledgeTopic(
                topic_id=tid,
                partitions=[
                    sa.ShareAcknowledgeRequestAcknowledgePartition(
                        partition_index=p,
                        acknowledgement_batches=[
                            sa.ShareAcknowledgeRequestAcknowledgementBatch(
                                first_offset=f, last_offset=la, acknowledge_types=types
                            )
                            for f, la, types in batches
                        ],
                    )
                    for p, batches in partitions.items()
                ],
            )
            for tid, partitions in topics.items()
        ],
    )
