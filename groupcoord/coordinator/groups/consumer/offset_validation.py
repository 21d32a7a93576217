"""OffsetCommit / OffsetFetch member checks and DeleteGroups addressed by group id, over a
``ConsumerGroupsState``: each finds the group and asks it (``ConsumerGroup.offset_commit_error``
and ``validate_offset_fetch`` hold Kafka 4.4's checks, KIP-848 and KIP-1251), for callers that
hold a state rather than a group (admin paths and tests); the shard asks the group directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from groupcoord.coordinator.errors import ErrorCode
from groupcoord.coordinator.groups.consumer.group import MEMBER_EPOCH_COMMIT_VERSION
from groupcoord.coordinator.groups.consumer.state import ConsumerGroupsState
from groupcoord.coordinator.runtime.api import Result


@dataclass(frozen=True, slots=True)
class CommitValidation:
    """``error`` fails the whole request; otherwise ``partition_errors`` names rejected partitions."""

    error: ErrorCode = ErrorCode.NONE
    partition_errors: dict[tuple[str, int], ErrorCode] = field(default_factory=dict)


def validate_offset_commit(
    state: ConsumerGroupsState,
    group_id: str,
    member_id: str,
    member_epoch: int,
    partitions: Iterable[tuple[str, int]] = (),
    api_version: int = MEMBER_EPOCH_COMMIT_VERSION,
) -> CommitValidation:
    """Check a commit of ``partitions`` (topic id, partition) by ``member_id`` at ``member_epoch``
    to the group ``group_id``: its own ``ConsumerGroup.offset_commit_error``."""
    group = state.group(group_id)
    if group is None:
        return CommitValidation(ErrorCode.GROUP_ID_NOT_FOUND)
    return CommitValidation(group.offset_commit_error(member_id, member_epoch, partitions, api_version))


def validate_offset_fetch(
    state: ConsumerGroupsState, group_id: str, member_id: str | None, member_epoch: int
) -> ErrorCode:
    """OffsetFetch v9+ to the group ``group_id``: its own ``ConsumerGroup.validate_offset_fetch``."""
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    group = state.group(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    return group.validate_offset_fetch(member_id, member_epoch)


def delete_consumer_group(state: ConsumerGroupsState, group_id: str) -> Result[ErrorCode]:
    """DeleteGroups for a consumer group: only an empty group goes; its records are tombstoned."""
    group = state.group(group_id)
    if group is None:
        return Result(ErrorCode.GROUP_ID_NOT_FOUND)
    error = group.validate_delete()
    return Result(error, group.tombstones() if error == ErrorCode.NONE else [])
