"""The record AlterShareGroupOffsets writes to create a share group (pure, no broker): replayed, as a
load does, it gives an empty share group; an id any group holds gets none."""

from __future__ import annotations

from groupcoord.coordinator.groups.coordinator_state import GroupCoordinatorState
from groupcoord.coordinator.service.share_offsets import created_for_alter


def test_the_creating_record_replays_to_an_empty_share_group() -> None:
    state = GroupCoordinatorState()
    records = created_for_alter(state, "g")
    loaded = GroupCoordinatorState()
    for record in records:
        loaded.replay(record)
    group = loaded.share.group("g")
    assert group is not None and not group.members and group.group_epoch == 0
    # Once it exists (or any other group holds the id) nothing more is created.
    assert created_for_alter(loaded, "g") == []
