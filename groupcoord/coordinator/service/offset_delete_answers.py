"""OffsetDelete partitions answered before the coordinator, and their merge with its answer.

Kafka's KafkaApis answers some partitions itself (topics the caller may not READ, topics or
partition indexes the cluster lacks), hands the rest to the coordinator, and merges the two as
``OffsetDeleteResponse.Builder.merge`` does: a top-level error from the coordinator (unknown
group, non-empty group) is the whole answer; otherwise each topic appears once, the partitions
answered here first and the coordinator's appended.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.messages.offset_delete import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)


def refused(name: str, partition_indexes: Iterable[int], code: ErrorCode) -> OffsetDeleteResponseTopic:
    """The answer for partitions of one topic that never reach the coordinator."""
    return OffsetDeleteResponseTopic(
        name=name,
        partitions=[OffsetDeleteResponsePartition(partition_index=p, error_code=code) for p in partition_indexes],
    )


def merge(local: list[OffsetDeleteResponseTopic], answered: OffsetDeleteResponse) -> OffsetDeleteResponse:
    if answered.error_code != ErrorCode.NONE or not local:
        return answered
    by_name: dict[str, OffsetDeleteResponseTopic] = {}
    for topic in local:
        if topic.name in by_name:
            by_name[topic.name].partitions += topic.partitions
        else:
            by_name[topic.name] = OffsetDeleteResponseTopic(name=topic.name, partitions=list(topic.partitions))
    for topic in answered.topics:
        if topic.name in by_name:
            by_name[topic.name].partitions += topic.partitions
        else:
            by_name[topic.name] = topic
    return OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=list(by_name.values()))
