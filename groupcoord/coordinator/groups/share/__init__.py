"""Share groups (KIP-932) as pure functions over ``ShareGroupsState``: membership, the ``simple``
assignment, describe. The share-partition data path (acquire, acknowledge, locks) is not here.

Handlers return ``groupcoord.coordinator.runtime.api.Result``; the runtime replays ``Result.records`` into
the state with ``ShareGroupsState.replay`` and arms or cancels ``Result.timers``.
"""

from groupcoord.coordinator.groups.share.describe import describe_share_group, describe_size
from groupcoord.coordinator.groups.share.group import PROTOCOL_TYPE, ShareGroup, ShareGroupState
from groupcoord.coordinator.groups.share.heartbeat import (
    on_session_timeout,
    share_group_heartbeat,
    validate_share_heartbeat,
)
from groupcoord.coordinator.groups.share.member import ShareGroupMember
from groupcoord.coordinator.groups.share.state import SHARE_GROUP_RECORD_TYPES, ShareGroupsState
from groupcoord.coordinator.groups.share.timers import ShareSessionTimeout, on_loaded_timers

__all__ = [
    "PROTOCOL_TYPE",
    "SHARE_GROUP_RECORD_TYPES",
    "ShareGroup",
    "ShareGroupMember",
    "ShareGroupState",
    "ShareGroupsState",
    "ShareSessionTimeout",
    "describe_share_group",
    "describe_size",
    "on_loaded_timers",
    "on_session_timeout",
    "share_group_heartbeat",
    "validate_share_heartbeat",
]
