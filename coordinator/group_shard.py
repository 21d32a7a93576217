"""GroupCoordinatorShard: the whole state of one log partition and the handlers over it.

It composes the pure managers (offsets now; consumer and classic groups as they land) behind
the one ``replay`` used both when loading and when writing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.errors import ErrorCode
from coordinator.offsets.config import OffsetsConfig
from coordinator.offsets.handlers import commit_offsets
from coordinator.offsets.messages import OffsetCommitRequest, OffsetCommitResponse
from coordinator.offsets.state import OffsetsState
from coordinator.runtime.api import Result
from records import CoordinatorRecord


class GroupCoordinatorShard:
    def __init__(self) -> None:
        self.offsets = OffsetsState()

    def replay(self, record: CoordinatorRecord) -> None:
        self.offsets.replay(record)

    def snapshot(self) -> Any:
        return {"offsets": self.offsets.snapshot()}

    def group_known(self, group: str) -> bool:
        return self.offsets.has_group(group)


def simple_group_commit_error(shard: GroupCoordinatorShard, request: OffsetCommitRequest) -> ErrorCode:
    """Commit validation for a group that no membership protocol manages (a "simple" group)."""
    if request.generation_id_or_member_epoch < 0:
        # Admin clients and consumers without group management commit with -1.
        return ErrorCode.NONE
    if not shard.group_known(request.group_id):
        return ErrorCode.GROUP_ID_NOT_FOUND if request.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
    # A simple group has no members, so no member id and generation can match.
    return ErrorCode.UNKNOWN_MEMBER_ID


@dataclass(frozen=True)
class GroupCoordinatorHandlers:
    """The runtime's view of the shard: state factory, lifecycle hooks, and write handlers."""

    offsets_config: OffsetsConfig = OffsetsConfig()

    def create_state(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard()

    def on_loaded(self, state: GroupCoordinatorShard, now_ms: int) -> Result[None]:
        return Result(None)

    def on_timer(self, state: GroupCoordinatorShard, event: Any, now_ms: int) -> Result[None]:
        return Result(None)

    def commit_offsets(
        self, state: GroupCoordinatorShard, request: OffsetCommitRequest, now_ms: int
    ) -> Result[OffsetCommitResponse]:
        error = simple_group_commit_error(state, request)
        return commit_offsets(state.offsets, request, now_ms, self.offsets_config, error)
