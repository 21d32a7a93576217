"""Member checks for OffsetCommit / OffsetFetch on consumer groups (KIP-848, KIP-1251).

Kafka 4.4's ``ConsumerGroup.validateOffsetCommit``: a commit at the member's current epoch is
accepted as is; a newer epoch is STALE_MEMBER_EPOCH; an older epoch (the member's response was
lost, or it is still revoking) is accepted only if every committed partition was assigned to the
member at or before that epoch, so a zombie that lost a partition cannot overwrite the new owner's
offsets. A refusal refuses the whole request: nothing of it is written. Classic members inside a
consumer group are checked like classic members: the generation must be the member epoch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.errors import ErrorCode
from coordinator.groups.consumer.state import ConsumerGroupsState
from coordinator.runtime.api import Result


@dataclass(frozen=True, slots=True)
class CommitValidation:
    """``error`` fails the whole request; otherwise ``partition_errors`` names rejected partitions."""

    error: ErrorCode = ErrorCode.NONE
    partition_errors: dict[tuple[str, int], ErrorCode] = field(default_factory=dict)


# OffsetCommit v9 introduced member epochs; members speaking the consumer protocol must use it.
MEMBER_EPOCH_COMMIT_VERSION = 9


def validate_offset_commit(
    state: ConsumerGroupsState,
    group_id: str,
    member_id: str,
    member_epoch: int,
    partitions: Iterable[tuple[str, int]] = (),
    api_version: int = MEMBER_EPOCH_COMMIT_VERSION,
) -> CommitValidation:
    """Check a commit of ``partitions`` (topic id, partition) by ``member_id`` at ``member_epoch``."""
    group = state.group(group_id)
    if group is None:
        return CommitValidation(ErrorCode.GROUP_ID_NOT_FOUND)
    if member_epoch < 0 and not group.members:
        # Admin clients and consumers without group management commit to an empty group.
        return CommitValidation()
    member = group.members.get(member_id)
    if member is None:
        return CommitValidation(ErrorCode.UNKNOWN_MEMBER_ID)
    if member.uses_classic_protocol:
        # A classic member's generation is its member epoch; classic clients do not know error 113.
        return CommitValidation(ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.ILLEGAL_GENERATION)
    if api_version < MEMBER_EPOCH_COMMIT_VERSION:
        return CommitValidation(ErrorCode.UNSUPPORTED_VERSION)
    if member_epoch > member.member_epoch:
        return CommitValidation(ErrorCode.STALE_MEMBER_EPOCH)
    if member_epoch == member.member_epoch:
        return CommitValidation()
    for topic_id, partition in partitions:
        assigned_at = member.assignment_epoch_of(topic_id, partition)
        if assigned_at is None or assigned_at > member_epoch:
            return CommitValidation(ErrorCode.STALE_MEMBER_EPOCH)
    return CommitValidation()


def validate_offset_fetch(
    state: ConsumerGroupsState, group_id: str, member_id: str | None, member_epoch: int
) -> ErrorCode:
    """OffsetFetch v9+: a member fetching with its id must be current.

    Only a fetch with neither member id nor epoch (admin clients, older consumers) skips the
    checks (Kafka's ConsumerGroup.validateOffsetFetch); a classic member inside a consumer group
    is checked on its generation (ILLEGAL_GENERATION), a consumer-protocol one on its epoch.
    """
    if member_id is None and member_epoch < 0:
        return ErrorCode.NONE
    group = state.group(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND
    member = None if member_id is None else group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def delete_consumer_group(state: ConsumerGroupsState, group_id: str) -> Result[ErrorCode]:
    """DeleteGroups for a consumer group: only an empty group goes; its records are tombstoned."""
    group = state.group(group_id)
    if group is None:
        return Result(ErrorCode.GROUP_ID_NOT_FOUND)
    error = group.validate_delete()
    return Result(error, group.tombstones() if error == ErrorCode.NONE else [])
